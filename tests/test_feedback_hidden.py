"""What reaches a policy never carries test data: the kind of a difference, not its bytes.

Real gcc, real sandbox: candidates that print their stdin, a hash of it, a wrong answer,
or their stdin on stderr go through the Gymnasium environment, refinement rounds and the
verl/TRL adapters, and none of the text those hand a policy or a trainer holds a test's
input, its expected output or what the candidate printed; it names the verdict, the test
and the kind of difference. A test the program marks as an example may be quoted.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import lazy
from scripted_policy import ScriptedPolicy

from asmopt.compare import DIFFERENCE_KIND, compare_output, difference_kind
from asmopt.evaluate import CheckResult, check_candidate
from asmopt.fresh import FreshInputs
from asmopt.judge import TestVerdict, Verdict
from asmopt.policies.base import PolicyRequest
from asmopt.policies.feedback import (
    check_feedback,
    failure_feedback,
    message_feedback,
    safe_failure,
)
from asmopt.policies.refine import RefinePolicy
from asmopt.programs import Comparison
from asmopt.programs.generators import InputGenerator
from asmopt.programs.model import Program, Suite, TestCase
from asmopt.programs.suite_io import builtin_suite_path, save_suite
from asmopt.reward.adapters import TRLReward, compute_score
from asmopt.reward.service import ScoreConfig
from asmopt.sandbox import Sandbox
from asmopt.toolchain import Toolchain

if TYPE_CHECKING:
    from asmopt.reward import env as reward_env
else:
    reward_env = lazy("asmopt.reward.env")  # needs gymnasium (the `rl` extra)

SUM_C = r"""
#include <stdio.h>
int main(void) {
    long a, b;
    if (scanf("%ld %ld", &a, &b) != 2) return 1;
    printf("%ld\n", a + b);
    return 0;
}
"""
# Candidates, written in C and compiled to assembly here: each one a way to get test data
# into the feedback if the feedback quoted outputs.
CANDIDATES = {
    # prints its stdin: a quoted "got" line would be the hidden input
    "echo": r"""
#include <stdio.h>
int main(void) { int c; while ((c = getchar()) != EOF) putchar(c); return 0; }
""",
    # prints a hash of its stdin: with the expected line quoted, a lookup table follows
    "hash": r"""
#include <stdio.h>
int main(void) {
    unsigned long h = 1469598103934665603UL; int c;
    while ((c = getchar()) != EOF) { h ^= (unsigned char)c; h *= 1099511628211UL; }
    printf("%016lx\n", h);
    return 0;
}
""",
    # a wrong answer: a quoted "expected" line would be the hidden answer
    "wrong": r"""
#include <stdio.h>
int main(void) {
    long a, b;
    if (scanf("%ld %ld", &a, &b) != 2) return 1;
    printf("%ld\n", a + b + 1);
    return 0;
}
""",
    # its stdin on stderr, then a failing exit code
    "stderr": r"""
#include <stdio.h>
int main(void) { int c; while ((c = getchar()) != EOF) fputc(c, stderr); return 3; }
""",
}
PAIRS = [(1234567, 7654321), (31415926, 27182818), (4433221, 5566778), (9081726, 1928374)]
# Drawn inputs: two 8-digit numbers, so no number of six digits or more in feedback on a
# drawn input can be anything but its data (or the secret seed it was drawn from).
GENERATOR = {
    "version": 1,
    "classes": {
        "small": {
            "template": "{a} {b}\n",
            "vars": {"a": {"int": [10000000, 99999999]}, "b": {"int": [10000000, 99999999]}},
        }
    },
    "tests": {"t1": "small", "t2": "small", "t3": "small", "t4": "small"},
}
LONG_NUMBER = re.compile(r"\d{6,}")
# A lookup table of the fixed tests' answers, wrong anywhere else: what feedback quoting
# test data would let a policy build.
LOOKUP_C = (
    "#include <stdio.h>\nint main(void) {\n    long a, b;\n"
    '    if (scanf("%ld %ld", &a, &b) != 2) return 1;\n'
    + "".join(
        f'    if (a == {a}L && b == {b}L) {{ printf("%ld\\n", a + b); return 0; }}\n'
        for a, b in PAIRS
    )
    + '    printf("%ld\\n", a + b + 1);\n    return 0;\n}\n'
)


def _fnv(data: bytes) -> str:
    h = 1469598103934665603
    for byte in data:
        h = ((h ^ byte) * 1099511628211) % (1 << 64)
    return f"{h:016x}"


def _tests() -> tuple[TestCase, ...]:
    return tuple(
        TestCase(f"t{i}", f"{a} {b}\n".encode(), f"{a + b}\n".encode())
        for i, (a, b) in enumerate(PAIRS, start=1)
    )


def _secrets(tests: tuple[TestCase, ...] | list[TestCase]) -> set[str]:
    """Every piece of test data a candidate could get quoted back: inputs, expected
    outputs, and what each candidate prints for them."""
    out: set[str] = set()
    for t in tests:
        a, b = (int(x) for x in t.stdin.split())
        out |= {str(a), str(b), str(a + b), str(a + b + 1), _fnv(t.stdin)}
        out |= {t.stdin.decode().strip(), t.expected_stdout.decode().strip()}
    return out


def _assert_hidden(text: str, secrets: set[str], where: str) -> None:
    leaked = sorted(s for s in secrets if s in text)
    assert not leaked, f"{where} quotes test data {leaked}: {text[:2000]}"


@pytest.fixture(scope="module")
def program() -> Program:
    return Program(id="sum", source=SUM_C, tests=_tests())


@pytest.fixture(scope="module")
def shown() -> Program:
    """The same program with t1 and t2 marked as examples shown to the model."""
    return Program(id="sum_shown", source=SUM_C, tests=_tests(), examples=("t1", "t2"))


@pytest.fixture(scope="module")
def drawn() -> Program:
    """The same program drawing fresh inputs of one size class."""
    return Program(
        id="sum_drawn", source=SUM_C, tests=_tests(), inputs=InputGenerator.from_dict(GENERATOR)
    )


@pytest.fixture(scope="module")
def asm(toolchain: Toolchain) -> dict[str, str]:
    out = {}
    for name, source in {**CANDIDATES, "lookup": LOOKUP_C}.items():
        out[name] = toolchain.baseline_assembly(Program(id=f"cand_{name}", source=source, tests=()))
    return out


@pytest.fixture(scope="module")
def suite_dir(
    tmp_path_factory: pytest.TempPathFactory, program: Program, shown: Program, drawn: Program
) -> Path:
    programs = {p.id: p for p in (program, shown, drawn)}
    suite = Suite(name="hidden", programs=programs, splits=dict.fromkeys(programs, "train"))
    return save_suite(suite, tmp_path_factory.mktemp("suite") / "hidden")


# ---------------------------------------------------------------------------- the kinds
@pytest.mark.parametrize(
    ("expected", "actual", "cmp", "kind"),
    [
        (b"1\n2\n", b"1\n2\n", Comparison(), ""),
        (b"7\n", b"", Comparison(), "no output"),
        (b"1\n2\n3\n", b"1\n", Comparison(), "output is shorter (missing lines from line 2)"),
        (b"1\n", b"1\n2\n", Comparison(), "extra output after the expected end (line 2)"),
        (b"x 1\ny 2\nz 3\n", b"x 1\ny 2\nz 4\n", Comparison(), "a number differs (line 3)"),
        (b"a\nbcd\n", b"a\nbce\n", Comparison(), "text differs (line 2)"),
        (b"a b\n", b"a  b\n", Comparison(), "whitespace differs (line 1)"),
        (b"a b\n", b"a\nb\n", Comparison(), "whitespace differs"),
        (b"1\n2\n", b"1\n2", Comparison(), "trailing newlines differ"),
        (b"a b\nc\n", b"a b\nd\n", Comparison("whitespace"), "text differs (line 2)"),
        (b"a\n1 2\n", b"a 1 3", Comparison("whitespace"), "a number differs (line 2)"),
        (
            b"1 2\n3\n",
            b"1 2\n",
            Comparison("whitespace"),
            "output is shorter (missing tokens from line 2)",
        ),
        (
            b"x=1.0\ny=2.0\n",
            b"x=1.0\ny=2.5\n",
            Comparison("numeric", abs_tol=1e-6, rel_tol=1e-4),
            "a number differs beyond tolerance (line 2)",
        ),
        (b"x=1.0\n", b"x=1.0000001\n", Comparison("numeric", abs_tol=1e-6), ""),
        (b"sum 3 ok\n", b"sum 3 bad\n", Comparison("numeric"), "text differs (line 1)"),
        (b"1\n", b"1 2\n", Comparison("numeric"), "extra output after the expected end (line 1)"),
        (b"0123456789abcdef0123456789abcdef\n", b"zz\n", Comparison("md5"), "md5 digest differs"),
    ],
)
def test_difference_kind_names_the_kind_and_line(
    expected: bytes, actual: bytes, cmp: Comparison, kind: str
) -> None:
    assert difference_kind(expected, actual, cmp) == kind
    assert (kind == "") == (compare_output(expected, actual, cmp) is None)
    if kind:
        assert DIFFERENCE_KIND.fullmatch(kind)


def test_difference_kind_never_holds_either_output() -> None:
    """Random outputs in every mode: the kind is one of the fixed phrases (words and line
    numbers), empty exactly when the comparison accepts, and holds no token of either."""
    rng = random.Random(7)
    words = ["QX" + "".join(rng.choice("ABCDEFGHJK") for _ in range(5)) for _ in range(12)]
    numbers = ["3", "3.5", "-17", "1e3", "271828"]
    modes = [
        Comparison(),
        Comparison("whitespace"),
        Comparison("numeric", abs_tol=0.01, rel_tol=0.001),
    ]

    def text() -> bytes:
        lines = [
            " ".join(rng.choice(words + numbers) for _ in range(rng.randint(0, 3)))
            for _ in range(rng.randint(0, 4))
        ]
        return ("\n".join(lines) + rng.choice(["", "\n", "\n\n"])).encode()

    for _ in range(3000):
        expected, actual, cmp = text(), text(), rng.choice(modes)
        kind = difference_kind(expected, actual, cmp)
        assert (kind == "") == (compare_output(expected, actual, cmp) is None)
        if kind:
            assert DIFFERENCE_KIND.fullmatch(kind), kind
            assert "QX" not in kind and "271828" not in kind


# ---------------------------------------------------------------------------- the judge
def test_classify_run_fills_the_kind_and_keeps_the_full_message(
    toolchain: Toolchain, sandbox: Sandbox, program: Program, asm: dict[str, str]
) -> None:
    check = check_candidate(program, asm["wrong"], toolchain, sandbox)
    first = check.tests[0]
    assert first.verdict == Verdict.WRONG_OUTPUT and first.difference == "a number differs (line 1)"
    # The message is for a person: it still quotes both lines.
    assert "8888888" in first.message and "8888889" in first.message
    assert first.to_dict()["difference"] == first.difference
    nonzero = check_candidate(program, asm["stderr"], toolchain, sandbox).tests[0]
    assert nonzero.verdict == Verdict.NONZERO_EXIT and "1234567" in nonzero.message


# ---------------------------------------------------------------------------- feedback
@pytest.mark.parametrize(
    ("name", "verdict", "kind"),
    [
        ("echo", "wrong_output", "text differs"),
        ("hash", "wrong_output", "text differs"),
        ("wrong", "wrong_output", "a number differs"),
        ("stderr", "nonzero_exit", "the program exited with an unexpected exit code"),
    ],
)
def test_check_and_message_feedback_hide_the_data(
    toolchain: Toolchain,
    sandbox: Sandbox,
    program: Program,
    asm: dict[str, str],
    name: str,
    verdict: str,
    kind: str,
) -> None:
    check = check_candidate(program, asm[name], toolchain, sandbox)
    assert str(check.verdict) == verdict
    secrets = _secrets(program.tests)
    # The person's message quotes the data (otherwise this test proves nothing) ...
    assert any(s in check.message for s in secrets), check.message
    # ... and neither the structured nor the message-only feedback does.
    for text in (
        check_feedback(check, program),
        message_feedback(str(check.verdict), check.message, program),
    ):
        _assert_hidden(text, secrets, f"feedback on {name}")
        assert f"Verdict: {verdict}." in text and f"test t1: {kind}" in text, text


def test_an_example_test_may_be_quoted(
    toolchain: Toolchain, sandbox: Sandbox, shown: Program, asm: dict[str, str]
) -> None:
    check = check_candidate(shown, asm["wrong"], toolchain, sandbox)
    for text in (
        check_feedback(check, shown),
        message_feedback(str(check.verdict), check.message, shown),
    ):
        assert "8888888" in text and "8888889" in text, text  # t1 is shown to the model


def test_drawn_inputs_are_never_quoted(
    toolchain: Toolchain, sandbox: Sandbox, drawn: Program, asm: dict[str, str]
) -> None:
    """A lookup table passes every fixed test and fails the drawn inputs: the feedback
    names the drawn test and its size class, not its input, its answer or the seed."""
    fresh = FreshInputs(seed=42)
    check = check_candidate(drawn, asm["lookup"], toolchain, sandbox, fresh=fresh)
    failing = next(t for t in check.tests if t.verdict != Verdict.PASS)
    assert failing.drawn is not None and failing.size_class == "small"
    stdin = drawn.inputs.draw("small", failing.drawn["seed"])  # type: ignore[union-attr]
    a, b = (int(x) for x in stdin.split())
    secrets = {str(a), str(b), str(a + b), str(a + b + 1), str(failing.drawn["seed"]), "42"}
    assert str(a + b) in check.message  # the person's message quotes it
    for text in (
        check_feedback(check, drawn),
        message_feedback(str(check.verdict), check.message, drawn),
    ):
        _assert_hidden(text, secrets, "feedback on a drawn input")
        # Named by its class: its number says which draw the candidate chose to fail.
        assert "a drawn input (size class small): a number differs" in text, text
        assert failing.test not in text and "~" not in text, text


def test_an_example_test_is_not_quoted_for_a_timed_run(shown: Program) -> None:
    """Timed runs may be fed drawn inputs in a test's place: their failures are never
    quoted, even for an example test."""
    message = (
        "candidate failed in timing run 3 of 40: wrong_output: a number differs (line 1); "
        "line 1: expected '123456789', got '123456790'"
    )
    tv = TestVerdict("t1", Verdict.WRONG_OUTPUT, message)
    check = CheckResult("sum_shown", Verdict.WRONG_OUTPUT, f"test t1: {message}", [tv])
    for text in (
        check_feedback(check, shown),
        message_feedback("wrong_output", check.message, shown),
    ):
        assert "123456789" not in text and "123456790" not in text, text
        assert "test t1: in a timed run: a number differs" in text, text
        assert "40" not in text and "(line" not in text, text


def test_size_class_is_named() -> None:
    tv = TestVerdict(
        "drawn-3",
        Verdict.WRONG_OUTPUT,
        "text differs (line 2); line 2: expected 'SECRETLINE', got 'MINE'",
        difference="text differs (line 2)",
        size_class="large",
    )
    check = CheckResult("p", Verdict.WRONG_OUTPUT, f"test drawn-3: {tv.message}", [tv])
    text = check_feedback(check)
    assert "test drawn-3 (size class large): text differs" in text and "line 2" not in text
    assert "SECRETLINE" not in text and "MINE" not in text


@pytest.mark.parametrize(
    ("verdict", "message", "said", "hidden"),
    [
        (
            "wrong_output",
            "candidate failed in timing run 3 of 40: wrong_output: a number differs (line 2); "
            "line 2: expected '8888888', got '8888889'",
            "in a timed run: a number differs",
            ["8888888", "8888889", "40", "line 2"],
        ),
        (
            "sandbox_violation",
            "baseline failed in timing run 2 of 9: crash: killed by SIGSEGV; the baseline "
            "alone passes this test in a fresh sandbox, so the failure is charged to the "
            "candidate that ran beside it",
            "passes alone in a fresh sandbox",
            ["SIGSEGV", "9"],
        ),
        (
            "nonzero_exit",
            "exit code 3, expected 0; stderr: '1234567 7654321'",
            "the program exited with an unexpected exit code",
            ["1234567", "stderr", "3"],
        ),
        (
            "crash",
            "killed by SIGSEGV (near the memory limit: likely out of memory)",
            "killed by a signal",
            ["SIGSEGV", "memory"],
        ),
        ("timeout", "exceeded the CPU time limit of 2s", "exceeded the CPU time limit", ["2"]),
        (
            "sandbox_violation",
            "test t1: its timed runs wrote 1 output(s) different from its own correctness "
            "run, while the baseline's output never changed: a program must not behave "
            "differently when timed",
            "different from its own correctness run",
            [],
        ),
        # Not one of our phrases: only the verdict's generic phrase is said.
        ("wrong_output", "line 1: expected '8888888', got '1'", "the output differs", ["8888888"]),
        ("crash", "SIGSEGV 8888888", "killed by a signal", ["8888888"]),
        ("timeout", "exceeded 8888888", "a time limit was exceeded", ["8888888"]),
    ],
)
def test_safe_failure_keeps_only_our_phrases(
    verdict: str, message: str, said: str, hidden: list[str]
) -> None:
    text = safe_failure(verdict, message)
    assert said in text, text
    for piece in hidden:
        assert piece not in text, text


def test_message_feedback_without_a_known_test_says_only_the_verdict(program: Program) -> None:
    text = message_feedback("wrong_output", "test nosuch: text differs (line 1); 'SECRET'", program)
    assert "SECRET" not in text and "nosuch" not in text and "wrong_output" in text
    infra = message_feedback("infra_error", "grader error: ValueError: b'SECRET'", program)
    assert "SECRET" not in infra and "not counted" in infra
    # A record's own exit code and signal are the candidate's choice: never said.
    tv = TestVerdict("t1", Verdict.CRASH, "", signal="SIGILL")
    assert failure_feedback(tv) == "test t1: the program was killed by a signal"
    tv = TestVerdict("t1", Verdict.NONZERO_EXIT, "", exit_code=122)
    assert "122" not in failure_feedback(tv)


# ---------------------------------------------------------------------------- build errors
def test_build_errors_cannot_quote_a_test_file(
    toolchain: Toolchain, sandbox: Sandbox, program: Program, suite_dir: Path
) -> None:
    """`.include` makes the assembler quote the lines of a file it cannot parse, and
    `.incbin` would put a file into the binary: the toolchain sandbox has no test file for
    either, whether the suite lives in a temporary directory or in the package itself."""
    builtin = next(p for p in sorted((builtin_suite_path() / "programs").iterdir()) if p.is_dir())
    builtin_out = sorted((builtin / "tests").glob("*.out"))[0]
    files = [suite_dir / "programs" / "sum" / "tests" / "t1.out", builtin_out]
    for path in files:
        assert path.read_bytes(), path  # the file exists here, outside the sandbox
        secrets = {line for line in path.read_text().splitlines() if len(line.strip()) >= 4}
        secrets |= _secrets(program.tests)
        for directive in (".include", ".incbin"):
            text = f'\t.text\n\t{directive} "{path}"\n\t.globl main\nmain:\n\tret\n'
            check = check_candidate(program, text, toolchain, sandbox)
            assert check.verdict == Verdict.ASSEMBLE_ERROR, (directive, check.message)
            feedback = check_feedback(check, program)
            _assert_hidden(feedback, secrets, f"{directive} of a test file")
            assert "assemble_error" in feedback


# ---------------------------------------------------------------------------- refinement
def test_refinement_prompts_hide_the_data(
    toolchain: Toolchain, sandbox: Sandbox, program: Program, asm: dict[str, str]
) -> None:
    order = ["echo", "hash", "wrong", "stderr"]
    inner = ScriptedPolicy([asm[n] for n in order])
    policy = RefinePolicy(inner, rounds=4, toolchain=toolchain, sandbox=sandbox)
    baseline = toolchain.baseline_assembly(program)
    [cand] = policy.propose(PolicyRequest(program, baseline))
    told = [h["feedback"] for h in cand.extra["rounds"]]
    assert inner.feedback[1:] == told[:3]
    secrets = _secrets(program.tests)
    for text in told:
        _assert_hidden(text, secrets, "refinement feedback")
    # The selection split is t2 and t4; t2 fails first.
    assert "Verdict: wrong_output." in told[0] and "test t2: text differs" in told[0]
    assert "test t2: a number differs" in told[2]
    assert "Verdict: nonzero_exit." in told[3] and "unexpected exit code" in told[3]
    assert "exit code 3" not in told[3]


def test_refinement_quotes_an_example_test(
    toolchain: Toolchain, sandbox: Sandbox, shown: Program, asm: dict[str, str]
) -> None:
    inner = ScriptedPolicy([asm["wrong"], asm["wrong"]])
    policy = RefinePolicy(inner, rounds=2, toolchain=toolchain, sandbox=sandbox)
    policy.propose(PolicyRequest(shown, toolchain.baseline_assembly(shown)))
    # t2 (31415926 + 27182818) is an example: its lines may be quoted.
    assert "58598744" in inner.feedback[1] and "58598745" in inner.feedback[1]


# ---------------------------------------------------------------------------- environment
def test_env_observations_info_and_state_hide_the_data(
    suite_dir: Path, program: Program, asm: dict[str, str]
) -> None:
    env = reward_env.AsmOptEnv(
        suite=str(suite_dir), program_ids=["sum"], measure="none", max_rounds=4, allow_unfit=True
    )
    env.reset(seed=0)
    secrets = _secrets(program.tests)
    expect = {
        "echo": ("wrong_output", "test t1: text differs"),
        "hash": ("wrong_output", "test t1: text differs"),
        "wrong": ("wrong_output", "test t1: a number differs"),
        "stderr": ("nonzero_exit", "test t1: the program exited with an unexpected exit code"),
    }
    for name, (verdict, said) in expect.items():
        obs, _, _, _, info = env.step(f"```assembly\n{asm[name]}```")
        assert info["verdict"] == verdict and "message" not in info
        _assert_hidden(json.dumps(info, default=str), secrets, f"info after {name}")
        _assert_hidden(obs["prompt"], secrets, f"prompt after {name}")
        _assert_hidden(obs["feedback"], secrets, f"feedback after {name}")
        assert f"Verdict: {verdict}." in obs["feedback"] and said in obs["feedback"]
        assert obs["feedback"] in obs["prompt"]
    state = env.get_state()
    history = [{k: v for k, v in h.items() if k != "action"} for h in state["history"]]
    _assert_hidden(json.dumps(history), secrets, "episode state")


def test_env_hides_drawn_inputs(suite_dir: Path, asm: dict[str, str]) -> None:
    env = reward_env.AsmOptEnv(
        suite=str(suite_dir), program_ids=["sum_drawn"], measure="none", allow_unfit=True
    )
    env.reset(seed=0)
    obs, _, _, _, info = env.step(f"```assembly\n{asm['lookup']}```")
    assert info["verdict"] == "wrong_output"
    for text in (obs["feedback"], obs["prompt"], json.dumps(info, default=str)):
        assert not LONG_NUMBER.search(text), text[:2000]
    assert "a drawn input (size class small): a number differs" in obs["feedback"]


def test_env_quotes_an_example_test(suite_dir: Path, asm: dict[str, str]) -> None:
    env = reward_env.AsmOptEnv(
        suite=str(suite_dir), program_ids=["sum_shown"], measure="none", allow_unfit=True
    )
    env.reset(seed=0)
    obs, _, _, _, _ = env.step(f"```assembly\n{asm['wrong']}```")
    assert "8888888" in obs["feedback"] and "8888889" in obs["feedback"]


# ---------------------------------------------------------------------------- adapters
def _strings(value: Any) -> str:
    return json.dumps(value, default=str)


def test_verl_diagnostics_hide_the_data(
    toolchain: Toolchain, program: Program, asm: dict[str, str]
) -> None:
    baseline = toolchain.baseline_assembly(program)
    extra = {
        "split": "train",
        "index": 0,
        "c_code": program.source,
        "inputs": [t.stdin.decode() for t in program.tests],
        "outputs": [t.expected_stdout.decode() for t in program.tests],
    }
    secrets = _secrets(program.tests)
    # The test programs are unfit for reward (fixed inputs, a tabulable class): allowed here.
    options = {"measure": "none", "allow_unfit": True}
    for name in ("echo", "hash", "wrong", "stderr"):
        out = compute_score("s", f"```assembly\n{asm[name]}```", baseline, extra, **options)
        assert "message" not in out and "grading" not in out  # nor the seed of drawn inputs
        _assert_hidden(_strings(out), secrets, f"verl diagnostics of {name}")
        assert out["verdict"] in out["feedback"] and "test t00:" in out["feedback"]
    wrong = compute_score("s", f"```assembly\n{asm['wrong']}```", baseline, extra, **options)
    assert "a number differs" in wrong["feedback"] and "(line" not in wrong["feedback"]


def test_trl_feedback_hides_the_data(
    suite_dir: Path, program: Program, asm: dict[str, str]
) -> None:
    reward = TRLReward(
        ScoreConfig(reward="robust", measure="none"),
        suite=str(suite_dir),
        workers=1,
        backend="thread",
        allow_unfit=True,
    )
    try:
        logged: dict[str, Any] = {}
        names = ["echo", "hash", "wrong", "stderr"]
        values = reward(
            prompts=["p"] * len(names),
            completions=[f"```assembly\n{asm[n]}```" for n in names],
            program_id=["sum"] * len(names),
            log_extra=lambda k, v: logged.__setitem__(k, v),
            log_metric=lambda k, v: logged.__setitem__(k, v),
        )
        assert len(values) == len(names) and all(v is not None for v in values)
        secrets = _secrets(program.tests)
        _assert_hidden(_strings(logged), secrets, "TRL logs")
        assert len(reward.last_feedback) == len(names)
        for text in reward.last_feedback:
            _assert_hidden(text, secrets, "TRL feedback")
            assert "test t1:" in text
        assert "a number differs" in reward.last_feedback[2]
        reward(prompts=["p"], completions=[f"```asm\n{asm['lookup']}```"], program_id=["sum_drawn"])
        [result], [text] = reward.last_results, reward.last_feedback
        assert result.verdict == "wrong_output" and "size class small" in text
        assert not LONG_NUMBER.search(text), text
    finally:
        reward.close()
