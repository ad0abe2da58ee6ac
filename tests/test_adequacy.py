"""Test adequacy: trivial probes and mutants through the real toolchain and sandbox, the mark
in program.json, and the refusals of reward, training rows and exports."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest

import asmopt.cli
from asmopt.adequacy import UnfitProgramError, is_reward_fit
from asmopt.adequacy.check import (
    NO_TESTS_REASON,
    ONE_INPUT_REASON,
    check_adequacy,
    equivalent_on_draws,
    light_classes,
)
from asmopt.adequacy.fitness import MARK_KEY, marked_program
from asmopt.adequacy.mutants import (
    apply_mutation,
    function_bodies,
    mutate_mnemonic,
    mutation_sites,
    ordered_sites,
)
from asmopt.adequacy.probes import constant_output_assembly
from asmopt.adequacy.report import AdequacyReport, Mutation
from asmopt.adequacy.summary import kill_depth, kill_rate_at, kill_rate_lines, summarize_reports
from asmopt.errors import InputError
from asmopt.evaluate import baseline_binary, check_candidate
from asmopt.fresh import FreshInputs
from asmopt.judge import Verdict
from asmopt.programs.generators import InputGenerator
from asmopt.programs.model import Program, Suite, TestCase
from asmopt.programs.suite_io import builtin_suite_path, load_suite, save_suite

# ---------------------------------------------------------------------------- programs
GOOD_C = r"""
#include <stdio.h>
__attribute__((noinline)) static long square(long x) { return x * x; }
int main(void)
{
    long n, a[1000], s = 0, mx = -1000000000, sq = 0;
    int even = 0;
    if (scanf("%ld", &n) != 1 || n < 0 || n > 1000) return 1;
    for (long i = 0; i < n; i++) {
        if (scanf("%ld", &a[i]) != 1) return 1;
        s += a[i];
        if (a[i] > mx) mx = a[i];
        sq += square(a[i]);
        if (a[i] % 2 == 0) even++;
    }
    for (long i = 1; i < n; i++) {
        long x = a[i], j = i - 1;
        while (j >= 0 && a[j] > x) { a[j + 1] = a[j]; j--; }
        a[j + 1] = x;
    }
    printf("sum %ld max %ld sq %ld even %d\n", s, mx, sq, even);
    for (long i = 0; i < n; i++) printf("%ld ", a[i]);
    printf("\n");
    return 0;
}
"""


def good_output(values: list[int]) -> bytes:
    mx = max(values) if values else -1000000000
    head = (
        f"sum {sum(values)} max {mx} sq {sum(v * v for v in values)} "
        f"even {sum(v % 2 == 0 for v in values)}\n"
    )
    return (head + "".join(f"{v} " for v in sorted(values)) + "\n").encode()


def good_program(pid: str = "good") -> Program:
    rng = random.Random(7)
    cases = [
        [3, -1, 4, 1, 5],
        [],
        [42],
        [-7, 100, 0, -3, 8, 8, 2, -50],
        [rng.randint(-10_000, 10_000) for _ in range(40)],
        [rng.randint(-5, 5) for _ in range(17)],
    ]
    tests = tuple(
        TestCase(
            f"t{i}",
            (f"{len(c)}\n" + " ".join(map(str, c)) + "\n").encode(),
            good_output(c),
        )
        for i, c in enumerate(cases)
    )
    return Program(id=pid, source=GOOD_C, tests=tests)


DONE_C = r"""
#include <stdio.h>
int main(void)
{
    long n, x, s = 0;
    if (scanf("%ld", &n) != 1) return 1;
    for (long i = 0; i < n; i++)
        if (scanf("%ld", &x) == 1) s += x * (i + 1);
    if (s == 123456789) printf("unlikely\n");
    printf("done\n");
    return 0;
}
"""


def done_program(pid: str = "done") -> Program:
    inputs = [b"3\n1 2 3\n", b"1\n-5\n", b"5\n10 20 30 40 50\n", b"0\n"]
    return Program(
        id=pid,
        source=DONE_C,
        tests=tuple(TestCase(f"t{i}", s, b"done\n") for i, s in enumerate(inputs)),
    )


def _mark(program: Program, fit: bool, reasons: list[str] | None = None) -> Program:
    report = AdequacyReport(
        program.id,
        fit=fit,
        reasons=reasons or ([] if fit else ["return0: a main that returns 0 at once passes"]),
        program_hash=program.content_hash(),
    )
    return marked_program(program, report, "gcc (test) | x86_64 | as")


# ---------------------------------------------------------------------------- probes
def test_empty_expected_output_is_unfit_because_return0_passes(toolchain, sandbox) -> None:
    src = '#include <stdio.h>\nint main(void){long n; return scanf("%ld",&n)==1 ? 0 : 0;}\n'
    program = Program(
        "silent",
        src,
        tuple(TestCase(f"t{i}", f"{i * 7}\n".encode(), b"") for i in range(4)),
    )
    report = check_adequacy(program, toolchain, sandbox)
    assert report.checked and not report.fit
    assert report.probes["return0"] == "pass"
    assert any(r.startswith("return0:") for r in report.reasons)
    # print_nothing and constant_output are the same program here: one reason, not three
    assert report.probes["print_nothing"] == report.probes["constant_output"] == "pass"
    assert len([r for r in report.reasons if "passes every test" in r]) == 1


def test_output_that_ignores_the_input_is_unfit_via_constant_output(toolchain, sandbox) -> None:
    report = check_adequacy(done_program(), toolchain, sandbox)
    assert report.checked and not report.fit
    assert report.probes["return0"] == "wrong_output"
    assert report.probes["constant_output"] == "pass"
    assert any(r.startswith("constant_output:") for r in report.reasons)


def test_print_nothing_uses_the_expected_exit_code(toolchain, sandbox) -> None:
    src = '#include <stdio.h>\nint main(void){int x; if(scanf("%d",&x)!=1) return 1; return 3;}\n'
    tests = tuple(TestCase(f"t{i}", f"{i}\n".encode(), b"", expected_exit=3) for i in range(3))
    report = check_adequacy(Program("exit3", src, tests), toolchain, sandbox)
    assert report.probes["return0"] == "nonzero_exit"
    assert report.probes["print_nothing"] == "pass"
    assert not report.fit and any(r.startswith("print_nothing:") for r in report.reasons)


def test_constant_output_reproduces_any_bytes(toolchain, sandbox) -> None:
    """Escaping: every byte value, quotes, backslashes and an octal escape followed by
    digits come out of the .ascii lines exactly."""
    data = bytes(range(256)) + b'\x0012\x07"\\"9\n'
    program = Program(
        "bytes", "int main(void){return 0;}\n", (TestCase("t1", b"", data, expected_exit=5),)
    )
    result = check_candidate(program, constant_output_assembly(data, 5), toolchain, sandbox)
    assert result.correct, result.message


def test_single_test_program_is_unfit_by_construction(toolchain, sandbox) -> None:
    good = good_program()
    program = Program("single", good.source, good.tests[:1])
    report = check_adequacy(program, toolchain, sandbox)
    assert not report.fit and report.reasons == [ONE_INPUT_REASON]
    assert report.probes["constant_output"] == "pass" and report.mutants_total == 0


def test_a_single_test_with_a_generator_is_judged_on_its_drawn_inputs(toolchain, sandbox) -> None:
    """One fixed test and a generator: every check also draws inputs, so the constant
    answer fails there, the mutants run, and the tests are fit; the same test without the
    generator stays unfit by construction."""
    good = good_program()
    program = with_drawn_lists(Program("single", good.source, good.tests[:1]), ("t0",))
    report = check_adequacy(program, toolchain, sandbox, input_seed=3)
    assert report.fit, report.reasons
    assert report.probes["constant_output"] == "wrong_output" and report.mutants_total > 0
    assert ONE_INPUT_REASON not in report.reasons


def test_program_without_tests_is_unfit(toolchain, sandbox) -> None:
    report = check_adequacy(Program("none", GOOD_C, ()), toolchain, sandbox)
    assert not report.fit and report.reasons == [NO_TESTS_REASON] and report.probes == {}


def test_varied_tests_are_fit_and_kill_mutants(toolchain, sandbox) -> None:
    program = good_program()
    report = check_adequacy(program, toolchain, sandbox)
    assert report.checked, report.error
    assert report.fit, report.reasons
    assert set(report.probes.values()) == {"wrong_output"}
    assert report.mutants_total == 6
    assert 2 * report.mutants_killed > report.mutants_total
    assert report.program_hash == program.content_hash()
    again = AdequacyReport.from_dict(json.loads(json.dumps(report.to_dict())))
    assert again == report


# ---------------------------------------------------------------------------- drawn inputs
LIST_INPUTS = {
    "version": 1,
    "classes": {
        "edge": {"template": "{n}\n{a}\n",
                 "vars": {"n": {"int": [0, 3]}, "a": {"ints": {"count": "n",
                                                               "range": [-5, 5]}}}},
        "small": {"template": "{n}\n{a}\n",
                  "vars": {"n": {"int": [5, 40]},
                           "a": {"ints": {"count": "n", "range": [-10000, 10000]}}}},
    },
    "tests": {"t0": "edge", "t1": "edge"},
}


def weak_program() -> Program:
    """GOOD_C with two tiny fixed tests (an empty list, one element) and a generator of
    longer lists: most mutants pass the fixed tests and only drawn inputs catch them."""
    cases = [[], [4]]
    tests = tuple(
        TestCase(f"t{i}", (f"{len(c)}\n" + " ".join(map(str, c)) + "\n").encode(),
                 good_output(c))
        for i, c in enumerate(cases)
    )
    return Program(id="weak", source=GOOD_C, tests=tests,
                   inputs=InputGenerator.from_dict(LIST_INPUTS))


# The tests of good_program with five or more numbers (the class draws 5-40; done_program's
# one such test is t2).
GOOD_TIMED = ("t0", "t3", "t4", "t5")


def with_drawn_lists(program: Program, timed: tuple[str, ...] = ()) -> Program:
    """`program` (GOOD_C or DONE_C: a count, then that many numbers) with a generator of
    lists of 5-40 numbers in -10000..10000, which the tests `timed` stand for: at least
    5 x log2(20001) = 71 bits a draw, so it passes the fixed_inputs and entropy rules and
    only its adequacy mark can make it unfit (the mark logic tested below)."""
    spec = {
        "version": 1,
        "classes": {"small": LIST_INPUTS["classes"]["small"]},
        "tests": {name: "small" for name in timed},
    }
    return dataclasses.replace(program, inputs=InputGenerator.from_dict(spec))


def fit_good_program() -> Program:
    return with_drawn_lists(good_program(), GOOD_TIMED)


def drawn_done_program() -> Program:
    return with_drawn_lists(done_program(), ("t2",))


def test_drawn_inputs_kill_mutants_the_fixed_tests_miss(toolchain, sandbox) -> None:
    program = weak_program()
    fixed_only = check_adequacy(program, toolchain, sandbox, input_seed=5, per_class=0,
                                equivalence_draws=0)
    drawn = check_adequacy(program, toolchain, sandbox, input_seed=5, per_class=2,
                           equivalence_draws=0)
    assert fixed_only.checked and drawn.checked, (fixed_only.error, drawn.error)
    assert fixed_only.mutants_total == drawn.mutants_total == 6
    assert drawn.mutants_killed > fixed_only.mutants_killed
    assert not fixed_only.fresh and drawn.fresh == {"seed": 5, "per_class": 2}
    by_draw = [t for t in drawn.killed_by.values() if "~" in t]
    assert by_draw, drawn.killed_by
    # The rate with fewer draws is read off the same check: K = 0 is the fixed tests.
    assert kill_rate_at([drawn], 0)["killed"] == fixed_only.mutants_killed
    assert kill_rate_at([drawn], 2)["killed"] == drawn.mutants_killed
    again = AdequacyReport.from_dict(json.loads(json.dumps(drawn.to_dict())))
    assert again == drawn


def test_a_survivor_that_never_differs_on_drawn_inputs_is_equivalent(toolchain, sandbox) -> None:
    """The equivalence check itself: the baseline is equivalent to itself on drawn
    inputs; a binary that differs on one class of input is not."""
    program = weak_program()
    fresh = FreshInputs(seed=3, per_class=1)
    baseline = baseline_binary(program, toolchain)
    limits = sandbox.limits
    assert equivalent_on_draws(program, baseline, toolchain, sandbox, limits, fresh, 1, 40)
    wrong = GOOD_C.replace("if (a[i] % 2 == 0) even++;", "if (a[i] % 2 == 0 && i < 8) even++;")
    build = toolchain.assemble_and_link(
        toolchain.baseline_assembly(Program("w", wrong, program.tests)), program.ldflags
    )
    assert build.ok and build.output is not None
    assert not equivalent_on_draws(program, build.output, toolchain, sandbox, limits, fresh, 1, 40)
    assert light_classes(program) == ("edge", "small")
    assert light_classes(Program("x", GOOD_C, program.tests)) == ()


def test_a_stored_reports_probe_verdicts_are_members_and_a_bad_one_is_named() -> None:
    stored = {"program": "p", "fit": False, "probes": {"return0": "pass"}}
    report = AdequacyReport.from_dict(stored)
    assert report.probes == {"return0": Verdict.PASS}
    assert report.probes["return0"] is Verdict.PASS
    assert json.dumps(report.to_dict()["probes"]) == '{"return0": "pass"}'
    bad = "adequacy report of p: probe return0: unknown verdict 'pas'"
    with pytest.raises(InputError, match=bad):
        AdequacyReport.from_dict({**stored, "probes": {"return0": "pas"}})


def test_kill_rates_count_equivalent_mutants_apart() -> None:
    mut = [Mutation("main", i, "addl\t%eax, %edx", "subl\t%eax, %edx") for i in range(6)]
    a = AdequacyReport("a", fit=True, mutants_killed=4, mutants_total=6, survivors=[mut[0]],
                       equivalent=[mut[1]],
                       killed_by={m.describe(): t for m, t in
                                  zip(mut[2:], ["t1", "edge~1", "small~2", "t3"], strict=True)})
    b = AdequacyReport("b", fit=True, mutants_killed=2, mutants_total=2,
                       killed_by={mut[0].describe(): "t2", mut[1].describe(): "large~1"})
    summary = summarize_reports([a, b])
    assert summary["kill_rates"]["a"] == {"killed": 4, "built": 6, "equivalent": 1,
                                          "rate": 0.6667, "rate_nonequivalent": 0.8}
    assert summary["mutants"]["rate_nonequivalent"] == round(6 / 7, 4)
    assert [kill_rate_at([a, b], k)["killed"] for k in (0, 1, 2)] == [3, 5, 6]
    assert kill_depth("t6") == 0 and kill_depth("heavy~3") == 3
    assert kill_rate_lines([a, b])[-1] == "total: 6/7 non-equivalent mutants killed (85.7%)"
    assert "1 equivalent on 1000 drawn inputs" in a.summary()


@pytest.mark.slow
def test_jacobi_heat_mutants_are_killed_on_drawn_inputs(toolchain, sandbox) -> None:
    """The fixed tests of jacobi_heat use no grid whose interior width takes the scalar
    remainder path of its vectorised stencil; its generator draws n = 3..12, which do."""
    program = load_suite(builtin_suite_path()).get("jacobi_heat")
    report = check_adequacy(program, toolchain, sandbox, input_seed=11)
    assert report.checked, report.error
    assert report.fit, report.reasons
    assert 2 * len(report.survivors) < report.mutants_total - report.mutants_equivalent


# ---------------------------------------------------------------------------- mutants
HAND_ASM = """\t.file\t"x.c"
\t.section\t.rodata
.LC0:
\t.string\t"addl subl je"
\t.text
\t.globl\tdata_add
data_add:
\taddl\t$1, %eax
\t.type\tf, @function
f:
\t.cfi_startproc
\taddl\t$1, %eax   # keep this comment
\txorl\t%eax, %eax
\tsubq\t$8, %rsp
\tjne\t.L2
\tlock addl\t$1, (%rdi)
\t.p2align 4
.L2:
\tret
\t.cfi_endproc
\t.size\tf, .-f
\taddl\t$2, %eax
"""


def test_mutation_sites_are_instructions_inside_function_bodies() -> None:
    assert function_bodies(HAND_ASM) == [("f", 10, 20)]
    sites = mutation_sites(HAND_ASM)
    assert [(s.index, s.original) for s in sites] == [
        (11, "addl\t$1, %eax"),
        (14, "jne\t.L2"),
    ]
    mutated = apply_mutation(HAND_ASM, sites[0]).splitlines()
    assert mutated[11] == "\tsubl\t$1, %eax   # keep this comment"
    assert mutate_mnemonic("jge") == "jl" and mutate_mnemonic("imulq") == "addq"
    assert mutate_mnemonic("incl") == "decl" and mutate_mnemonic("vaddsd") == "vsubsd"
    assert mutate_mnemonic("cmovle") == "cmovg" and mutate_mnemonic("movl") is None


def test_a_mutant_changes_exactly_one_instruction_never_a_directive(toolchain) -> None:
    asm = toolchain.baseline_assembly(good_program())
    bodies = function_bodies(asm)
    assert {name for name, _, _ in bodies} >= {"main", "square"}
    sites = ordered_sites(asm)
    assert sites == ordered_sites(asm)  # deterministic
    # spread: the first sites come from every function that has one
    with_sites = {s.function for s in sites}
    assert {s.function for s in sites[: len(with_sites)]} == with_sites
    original = asm.splitlines()
    for site in sites:
        mutated = apply_mutation(asm, site).splitlines()
        assert len(mutated) == len(original)
        changed = [i for i, (a, b) in enumerate(zip(original, mutated, strict=True)) if a != b]
        assert changed == [site.index]
        before, after = original[site.index].split(None, 1), mutated[site.index].split(None, 1)
        assert not before[0].startswith(".") and not before[0].endswith(":")
        assert before[1] == after[1] and mutate_mnemonic(before[0]) == after[0]
        assert any(start <= site.index < end for _, start, end in bodies)


# ---------------------------------------------------------------------------- the mark
def test_is_reward_fit_reads_the_mark() -> None:
    # without an input generator a program is unfit whatever its mark says
    for bare in (good_program(), _mark(good_program(), True)):
        fit, why = is_reward_fit(bare)
        assert not fit and why.startswith("fixed_inputs:")
    program = fit_good_program()
    assert is_reward_fit(program) == (True, "not checked")
    fit, why = is_reward_fit(_mark(program, False))
    assert not fit and "return0" in why
    assert is_reward_fit(_mark(program, True))[0]
    # the tests changed since the check: the mark no longer speaks for them
    stale = _mark(program, False)
    stale = stale.with_tests(stale.tests[:2])
    assert stale.inputs is not None and stale.metadata
    fit, why = is_reward_fit(stale)
    assert fit and "stale" in why


def test_a_mark_that_cannot_be_read_makes_the_program_unfit_naming_why() -> None:
    """A stored mark that was "unfit" and got corrupted must not read as "not checked"
    (which counts as fit): a bad probe verdict, or `fit` written as a string, is refused."""
    program = fit_good_program()
    unfit = _mark(program, False)
    raw = dict(unfit.meta[MARK_KEY])
    for corrupt, named in (
        ({**raw, "probes": {"return0": "pass-ish"}}, "pass-ish"),
        ({**raw, "fit": "false"}, "'false'"),
        ({k: v for k, v in raw.items() if k != "fit"}, "'fit'"),
    ):
        meta = {**dict(unfit.metadata), MARK_KEY: corrupt}
        broken = dataclasses.replace(unfit, metadata=tuple(meta.items()))
        fit, why = is_reward_fit(broken)
        assert not fit and why.startswith("unreadable adequacy mark") and named in why, why
        assert "suite verify --write-marks" in why
    # The same for a corrupt entropy measurement, which may have found a table of answers.
    from asmopt.entropy import MARK_KEY as ENTROPY_KEY

    for corrupt, named in (([1, 2], "list"), ({"draws": "x"}, "cannot be read")):
        meta = {**dict(program.metadata), ENTROPY_KEY: corrupt}
        fit, why = is_reward_fit(dataclasses.replace(program, metadata=tuple(meta.items())))
        assert not fit and why.startswith("unreadable: ") and named in why, why


# ---------------------------------------------------------------------------- refusals
def _suite(*programs: Program) -> Suite:
    return Suite("adq", {p.id: p for p in programs}, {p.id: "train" for p in programs})


def test_export_refuses_unfit_programs(tmp_path: Path) -> None:
    from asmopt.data.export import export_suite

    suite = _suite(_mark(drawn_done_program(), False), _mark(fit_good_program(), True))
    with pytest.raises(UnfitProgramError, match=r"refusing export for 1 program.*done \(return0"):
        export_suite(suite, tmp_path / "rows.jsonl", "jsonl", baseline_fn=lambda p: "\t.text\n")
    assert not (tmp_path / "rows.jsonl").exists()
    # a program without a generator is refused whatever its mark says
    bare = _suite(_mark(good_program(), True))
    with pytest.raises(UnfitProgramError, match=r"refusing export .*good \(fixed_inputs"):
        export_suite(bare, tmp_path / "rows.jsonl", "jsonl", baseline_fn=lambda p: "\t.text\n")
    assert not (tmp_path / "rows.jsonl").exists()
    written, report = export_suite(
        suite,
        tmp_path / "rows.jsonl",
        "jsonl",
        baseline_fn=lambda p: "\t.text\n",
        allow_unfit=True,
    )
    assert len(written[0].read_text().splitlines()) == 2
    assert any("done" in n and "unfit" in n for n in report.notes)


def test_export_cli_refuses_with_one_error_line(tmp_path: Path, capsys) -> None:
    save_suite(_suite(_mark(done_program(), False)), tmp_path / "s")
    code = asmopt.cli.main(
        ["data", "export", str(tmp_path / "s"), "--format", "jsonl", "-o", str(tmp_path / "x")]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("asmopt: error: refusing export") and "done" in err


def test_reward_service_refuses_unfit_programs() -> None:
    from asmopt.reward.service import RewardService, ScoreConfig, ScoreRequest

    config = ScoreConfig(measure="none")
    unfit = _mark(drawn_done_program(), False)
    with RewardService(config, workers=1, backend="thread") as service:
        with pytest.raises(UnfitProgramError, match=r"refusing reward .*done \(return0"):
            service.score_batch([ScoreRequest(unfit, "no assembly here")])
        # a program without a generator is refused, checked or not
        with pytest.raises(UnfitProgramError, match=r"refusing reward .*done \(fixed_inputs"):
            service.score_batch([ScoreRequest(done_program(), "no assembly here")])
        # a program with a generator, never checked, is scored (fit-unknown)
        [result] = service.score_batch([ScoreRequest(drawn_done_program(), "no assembly here")])
        assert result.verdict == "extraction_error"
    with RewardService(config, workers=1, backend="thread", allow_unfit=True) as service:
        [result] = service.score_batch([ScoreRequest(unfit, "no assembly here")])
        assert result.verdict == "extraction_error"


def test_training_rows_refuse_unfit_programs(toolchain) -> None:
    from asmopt.train.data import rows_from_suite

    suite = _suite(_mark(drawn_done_program(), False), fit_good_program())
    only_done = r"refusing training rows .* for 1 program.*: done \(return0"
    with pytest.raises(UnfitProgramError, match=only_done):
        rows_from_suite(suite, "train", toolchain=toolchain)
    rows = rows_from_suite(suite, "train", toolchain=toolchain, allow_unfit=True)
    assert sorted(r["program_id"] for r in rows) == ["done", "good"]


def test_report_warns_about_unfit_programs(tmp_path: Path) -> None:
    from asmopt.evaluate import CheckResult, SampleOutcome
    from asmopt.judge import Verdict
    from asmopt.report import write_report
    from asmopt.run import record_unfit
    from asmopt.store import ResultStore

    unfit = _mark(drawn_done_program(), False)
    store = ResultStore(tmp_path / "run")
    store.begin_run({"suite": "adq", "policy": "unit", "split": "all", "measure": "none"}, {})
    store.put_program(unfit, "train", "\t.text\n")
    assert record_unfit(store, [unfit, fit_good_program()]) == {"done": is_reward_fit(unfit)[1]}
    store.record(SampleOutcome("done", 0, CheckResult("done", Verdict.PASS, "ok")))
    html_path, md_path = write_report(store, tmp_path / "out", plots=False)
    store.close()
    line = "Warning: done is marked unfit"
    assert line in md_path.read_text() and line in html_path.read_text()


# ---------------------------------------------------------------------------- CLI
@pytest.mark.slow  # seconds of real runs; make test-slow
def test_suite_verify_writes_marks_and_never_into_the_builtin_suite(tmp_path: Path, capsys) -> None:
    root = save_suite(_suite(fit_good_program(), done_program()), tmp_path / "suite")
    code = asmopt.cli.main(["suite", "verify", "--suite", str(root), "--write-marks", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1  # an unfit program fails the verification
    assert out["ok"] == 2 and list(out["adequacy"]["unfit"]) == ["done"]
    assert out["adequacy"]["marks_written"]
    spec = json.loads((root / "programs" / "done" / "program.json").read_text())
    mark = spec["metadata"][MARK_KEY]
    assert mark["fit"] is False and mark["checked_with"] and "tests" in spec
    suite = load_suite(root)
    assert not is_reward_fit(suite.get("done"))[0]
    assert is_reward_fit(suite.get("good"))[0]
    assert "fit (mutants killed" in is_reward_fit(suite.get("good"))[1]
    # its generator's draws were measured too: every output distinct, every field used
    good = json.loads((root / "programs" / "good" / "program.json").read_text())
    assert good["metadata"]["entropy"]["tabulable"] is False

    for argv in (
        ["suite", "verify", "--write-marks"],
        ["suite", "verify", "--suite", str(builtin_suite_path()), "--write-marks"],
    ):
        code = asmopt.cli.main(argv)
        err = capsys.readouterr().err
        assert code == 2 and err.startswith("asmopt: error: --write-marks: refusing")
        assert "built-in suite" in err


def test_suite_verify_table_lists_unfit_programs(tmp_path: Path, capsys) -> None:
    root = save_suite(_suite(done_program()), tmp_path / "suite")
    code = asmopt.cli.main(["suite", "verify", "--suite", str(root)])
    out = capsys.readouterr().out
    assert code == 1 and "UNFIT" in out and "unfit: done: constant_output" in out
    assert MARK_KEY not in load_suite(root).get("done").meta  # nothing written without the flag
    code = asmopt.cli.main(["suite", "verify", "--suite", str(root), "--no-adequacy"])
    out = capsys.readouterr().out
    # no adequacy check ran, but a program without a generator is unfit all the same
    assert "UNFIT" not in out and "constant_output" not in out
    assert code == 1 and "unfit: done: fixed inputs only" in out


@pytest.mark.slow  # the real check: surviving mutants run on 1,000 drawn inputs (50-140 s)
def test_import_marks_each_program(tmp_path: Path, capsys) -> None:
    pool = tmp_path / "pool" / "done"
    (pool / "tests").mkdir(parents=True)
    (pool / "done.c").write_text(DONE_C)
    for t in done_program().tests:
        (pool / "tests" / f"{t.name}.in").write_bytes(t.stdin)
        (pool / "tests" / f"{t.name}.out").write_bytes(t.expected_stdout)
    code = asmopt.cli.main(["data", "import", "dir", str(pool), "-o", str(tmp_path / "a")])
    out = capsys.readouterr().out
    assert code == 0 and "marked unfit for reward" in out
    mark = load_suite(tmp_path / "a").get("done").meta[MARK_KEY]
    assert mark["fit"] is False and mark["probes"]["constant_output"] == "pass"
    code = asmopt.cli.main(
        ["data", "import", "dir", str(pool), "-o", str(tmp_path / "b"), "--no-adequacy"]
    )
    assert code == 0 and MARK_KEY not in load_suite(tmp_path / "b").get("done").meta
