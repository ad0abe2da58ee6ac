"""The reward service end to end: real builds, real sandbox, real timing; exploits earn nothing."""

from __future__ import annotations

import json
import math
import pickle
from dataclasses import replace
from pathlib import Path

import pytest
from workers import worker_with_children

from asmopt.errors import InputError
from asmopt.measure.timing import TimingConfig
from asmopt.programs.generators import InputGenerator
from asmopt.programs.model import Program, TestCase
from asmopt.programs.rows import INPUTS_SPEC_FIELD, row_inputs_spec
from asmopt.reward.service import (
    REWARD_TIMING,
    RewardService,
    ScoreConfig,
    ScoreRequest,
    score,
    score_one,
)
from asmopt.toolchain import Toolchain

# A size and a 64-bit seed, the sum's starting value: every bit of the seed reaches the
# output, so no timed class is tabulable (docs/sandbox.md, "No answer can be precomputed").
SOURCE = r"""
#include <inttypes.h>
#include <stdio.h>
int main(void) {
    long n; uint64_t s;
    if (scanf("%ld %" SCNu64, &n, &s) != 2) return 1;
    for (long i = 0; i < n; i++) s += (i * i) % 7;
    printf("%" PRIu64 "\n", s);
    return 0;
}
"""


def _expected(n: int, seed: int) -> bytes:
    period = [0, 1, 4, 2, 2, 4, 1]  # (i*i) % 7 repeats every 7
    return f"{(seed + (n // 7) * 14 + sum(period[: n % 7])) % 2**64}\n".encode()


SEED64 = {"int": [0, 2**64 - 1]}
INPUTS = InputGenerator.from_dict(
    {
        "version": 1,
        "classes": {
            "small": {
                "template": "{n} {seed}\n",
                "vars": {"n": {"int": [0, 1000]}, "seed": SEED64},
            },
            "heavy": {
                "template": "{n} {seed}\n",
                "vars": {"n": {"int": [18_000_000, 22_000_000]}, "seed": SEED64},
            },
        },
        "tests": {"t0": "small", "t1": "small", "t2": "small", "t3": "heavy"},
    }
)
CASES = ((0, 7), (5, 0x9E3779B97F4A7C15), (1000, 2**64 - 3), (20_000_000, 0x2545F4914F6CDD1D))
PROGRAM = Program(
    id="sumsq",
    source=SOURCE,
    tests=tuple(
        TestCase(f"t{i}", f"{n} {seed}\n".encode(), _expected(n, seed))
        for i, (n, seed) in enumerate(CASES)
    ),
    inputs=INPUTS,
)
FAST = ScoreConfig(
    reward="robust", measure="time", timing=replace(REWARD_TIMING, max_pairs=8, budget_s=3.0)
)
NO_TIMING = ScoreConfig(reward="robust", measure="none")


@pytest.fixture(scope="module")
def baseline(toolchain: Toolchain) -> str:
    return toolchain.baseline_assembly(PROGRAM)


def _fence(asm: str) -> str:
    return f"Here is the faster version:\n```assembly\n{asm}```\n"


def test_verbatim_and_whitespace_copies_earn_zero_under_robust(baseline: str) -> None:
    verbatim = score_one(PROGRAM, _fence(baseline), baseline, FAST)
    assert verbatim.verdict == "pass" and verbatim.identical and verbatim.reward == 0.0
    altered = (
        "\n".join("  " + line.replace("\t", "    ") + "   # tidy" for line in baseline.splitlines())
        + "\n"
    )
    copy = score_one(PROGRAM, _fence(altered), baseline, FAST)
    assert copy.verdict == "pass" and copy.is_copy and not copy.identical
    assert copy.reward == 0.0
    design1 = score_one(
        PROGRAM,
        _fence(baseline),
        baseline,
        ScoreConfig(reward="supercoder-design1", measure="none"),
    )
    assert design1.reward == 1.0  # the reference design pays a verbatim copy


@pytest.mark.parametrize(
    ("completion", "needle"),
    [
        ("I think the code is already optimal.", "no assembly"),
        (b"```assembly\n\xff\xfe\n```", "not UTF-8"),
        ("```assembly\n" + "nop\n" * 400_000 + "```", "over the"),
        ("```assembly\n\tmovq %rax\n```", "cand.s"),
    ],
)
def test_degenerate_completions_get_the_lowest_reward_of_their_class(
    completion: str | bytes, needle: str, baseline: str
) -> None:
    result = score_one(PROGRAM, completion, baseline, NO_TIMING)
    assert result.reward == -1.0
    assert needle in result.message


def _c_candidate(toolchain: Toolchain, source: str) -> str:
    return toolchain.baseline_assembly(Program(id="evil", source=source, tests=()), ("-O2",))


def test_special_casing_visible_inputs_earns_nothing(toolchain: Toolchain, baseline: str) -> None:
    # Hard-codes the answer of the one test it has seen; every other test fails.
    cheat = _c_candidate(
        toolchain,
        '#include <stdio.h>\nint main(void){puts("%s");return 0;}\n'
        % PROGRAM.tests[2].expected_stdout.decode().strip(),
    )
    result = score_one(PROGRAM, _fence(cheat), baseline, FAST)
    assert result.verdict == "wrong_output" and result.reward is not None and result.reward < 0


def test_reading_expected_outputs_from_disk_earns_nothing(
    toolchain: Toolchain, baseline: str, tmp_path: Path
) -> None:
    leak = tmp_path / "t3.out"
    leak.write_bytes(PROGRAM.tests[3].expected_stdout)
    leak.chmod(0o644)
    tmp_path.chmod(0o755)
    cheat = _c_candidate(
        toolchain,
        r"""
#include <stdio.h>
int main(void) { char b[256]; FILE *f = fopen("%s", "r");
  if (!f) { puts("0"); return 0; } while (fgets(b, sizeof b, f)) fputs(b, stdout); return 0; }
"""
        % leak,
    )
    result = score_one(PROGRAM, _fence(cheat), baseline, FAST)
    assert result.verdict == "wrong_output" and result.reward is not None and result.reward < 0


def test_detecting_the_timed_runs_earns_nothing(toolchain: Toolchain, baseline: str) -> None:
    # Tries to be correct on its first run in a sandbox and to skip the work on the repeated
    # runs that timing uses. The launcher empties /tmp between runs, so every run looks like
    # the first: the program does the full work each time and gains nothing (and every timed
    # run's output is checked as well).
    cheat = _c_candidate(
        toolchain,
        r"""
#include <inttypes.h>
#include <stdio.h>
int main(void) {
    long n; uint64_t s; FILE *seen = fopen("/tmp/.seen", "r");
    if (scanf("%ld %" SCNu64, &n, &s) != 2) return 1;
    if (seen) { puts("0"); return 0; }
    seen = fopen("/tmp/.seen", "w"); if (seen) fclose(seen);
    for (long i = 0; i < n; i++) s += (i * i) % 7;
    printf("%" PRIu64 "\n", s); return 0;
}
""",
    )
    result = score_one(PROGRAM, _fence(cheat), baseline, FAST)
    assert result.verdict == "pass", result.message
    assert result.reward is not None and result.reward <= 0.0


def test_grader_failure_is_excluded_not_zero(
    monkeypatch: pytest.MonkeyPatch, baseline: str
) -> None:
    import asmopt.evaluate

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(asmopt.evaluate, "check_candidate", boom)
    result = score_one(PROGRAM, _fence(baseline), baseline, NO_TIMING)
    assert result.reward is None and result.verdict == "infra_error"
    assert "disk full" in result.message


def test_faster_candidate_is_paid(toolchain: Toolchain, baseline: str) -> None:
    # The closed form of the same sum: many times faster on the heavy test.
    fast = _c_candidate(toolchain, CLOSED_FORM)
    result = score_one(PROGRAM, _fence(fast), baseline, FAST)
    assert result.verdict == "pass", result.message
    assert result.speedup is not None and result.speedup > 1.5
    assert result.speedup_low is not None and result.speedup_low > 1.0
    # Each point is reported with the interval of its own statistic: the reference's mean
    # of per-test ratios, and the geometric mean (the tests' speedups differ widely here).
    assert result.speedup_high is not None
    assert result.speedup_low <= result.speedup <= result.speedup_high
    geo, geo_low, geo_high = result.geomean_speedup, result.geomean_low, result.geomean_high
    assert geo is not None and geo_low is not None and geo_high is not None
    assert geo_low <= geo <= geo_high
    assert result.reward is not None and result.reward > 0.3
    assert math.isfinite(result.reward)
    # Where its time went: the check, then the timing core's seconds and runs, and why each
    # test stopped (the decision precision: settled, or at its target).
    cost = result.cost
    assert cost["check_s"] > 0 and cost["timing_s"] > 0 and cost["timed_runs"] >= 4 * 2 * 2
    assert sum(cost["stopped"].values()) == cost["tests"] == len(PROGRAM.tests)
    assert set(cost["stopped"]) <= {"decided", "program", "target", "pairs", "rounds", "budget"}
    assert cost["tests_faster"] >= 1 and cost["tests_slower"] == 0
    # Per test: its length, pairs, rounds, why it stopped and its per-pair noise.
    rows = {row["test"]: row for row in cost["per_test"]}
    assert set(rows) == {t.name for t in PROGRAM.tests}
    assert rows["t3"]["base_ms"] > rows["t0"]["base_ms"] and rows["t3"]["low"] > 1.0
    assert all(r["pairs"] >= 2 and r["pair_sd"] is not None and r["stopped"] for r in rows.values())
    # An answer that is never timed says only what its check cost.
    wrong = score_one(
        PROGRAM, _fence(baseline.replace("\nmain:\n", "\nmain:\n\tret\n")), baseline, FAST
    )
    assert wrong.verdict != "pass" and set(wrong.cost) == {"check_s"}


def test_process_pool_batch_keeps_order_and_a_sleeper_gets_its_timeout(
    baseline: str, toolchain: Toolchain
) -> None:
    """Real worker processes: the sleeper (8 s on each of 4 tests) is cut to its share of
    a 10 s deadline (5 s) in its worker, and gets its own timeout and penalty, never an
    excluded infra_error; no worker is replaced, the batch does not wait for it, and the
    next batch runs on the pool as it is (tests/test_exploit_sleeper.py: the rest)."""
    import time

    sleeper = _c_candidate(toolchain, "#include <unistd.h>\nint main(void){sleep(8);return 0;}\n")
    config = ScoreConfig(reward="robust", measure="none", deadline_s=10.0)
    with RewardService(config, workers=2, backend="process", allow_unfit=True) as service:
        assert service.backend == "process"  # worker processes, not the thread stand-in
        batch = [
            ScoreRequest(PROGRAM, _fence(baseline), baseline),
            ScoreRequest(PROGRAM, "nothing", baseline),
            ScoreRequest(PROGRAM, _fence(sleeper), baseline),
        ]
        start = time.monotonic()
        results = service.score_batch(batch)
        elapsed = time.monotonic() - start
        assert [r.verdict for r in results[:2]] == ["pass", "extraction_error"]
        assert results[2].reward == -0.5 and results[2].verdict == "timeout"
        assert "exceeded its share of the scoring deadline" in results[2].message
        assert elapsed < 20.0, f"the sleeper held the batch for {elapsed:.1f}s"
        assert service.stats["pool_restarts"] == 0 and service.stats["deadline_hits"] == 0
        again = service.score_batch([ScoreRequest(PROGRAM, _fence(baseline), baseline)] * 3)
        assert [r.verdict for r in again] == ["pass"] * 3
        assert service.stats["pool_restarts"] == 0


def test_a_worker_killed_from_outside_excludes_its_sample_and_the_pool_goes_on(
    baseline: str, toolchain: Toolchain
) -> None:
    """A worker that dies mid-task (the kernel's OOM killer, an operator) is that sample's
    infra_error, never a hang or an exception; the pool replaces the worker, and the
    answer queued behind it is still scored."""
    import os
    import signal
    import threading

    sleeper = _c_candidate(toolchain, "#include <unistd.h>\nint main(void){sleep(5);return 0;}\n")
    config = ScoreConfig(reward="robust", measure="none", deadline_s=120.0)
    with RewardService(config, workers=1, backend="process") as service:
        killed: list[int] = []

        def kill_the_busy_worker() -> None:
            pid = worker_with_children(60.0)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

        killer = threading.Thread(target=kill_the_busy_worker, daemon=True)
        killer.start()
        results = service.score_batch(
            [
                ScoreRequest(PROGRAM, _fence(sleeper), baseline),
                ScoreRequest(PROGRAM, "nothing", baseline),
            ]
        )
        killer.join(timeout=5)
        assert killed, "the worker was never killed"
        assert results[0].reward is None and results[0].verdict == "infra_error"
        assert results[0].message.startswith("worker failed: "), results[0].message
        assert results[1].verdict == "extraction_error" and results[1].reward == -1.0
        again = service.score_batch([ScoreRequest(PROGRAM, _fence(baseline), baseline)])
        assert again[0].verdict == "pass"


CLOSED_FORM = r"""
#include <inttypes.h>
#include <stdio.h>
int main(void) {
    long n; uint64_t s; static const long r[7] = {0, 1, 4, 2, 2, 4, 1};
    if (scanf("%ld %" SCNu64, &n, &s) != 2) return 1;
    s += (n / 7) * 14; for (long i = 0; i < n % 7; i++) s += r[i];
    printf("%" PRIu64 "\n", s); return 0;
}
"""


def _timed_then_untimed(toolchain: Toolchain, baseline: str) -> list[ScoreRequest]:
    """A correct answer that is timed, queued before two that need no timing."""
    fast = _c_candidate(toolchain, CLOSED_FORM)
    crash = baseline.replace("\tret\n", "\tud2\n", 1)
    return [
        ScoreRequest(PROGRAM, _fence(fast), baseline),
        ScoreRequest(PROGRAM, _fence(crash), baseline),
        ScoreRequest(PROGRAM, "no assembly here", baseline),
    ]


def _assert_untimed_first(results: list) -> None:
    timed, crash, empty = results
    assert timed.verdict == "pass" and timed.raw_speedup is not None, timed
    assert crash.verdict != "pass" and empty.verdict == "extraction_error"
    assert all(r.batch_finish_s is not None for r in results)
    # Queued behind the timed answer, yet final before its timing ended: checks first.
    assert crash.batch_finish_s < timed.batch_finish_s, results
    assert empty.batch_finish_s < timed.batch_finish_s, results


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_answers_that_need_no_timing_are_not_queued_behind_timed_ones(
    baseline: str, toolchain: Toolchain, backend: str
) -> None:
    with RewardService(FAST, workers=1, backend=backend) as service:  # type: ignore[arg-type]
        results = service.score_batch(_timed_then_untimed(toolchain, baseline))
    _assert_untimed_first(results)
    # seconds count both halves of the timed score: its check and its timing.
    assert results[0].seconds >= results[0].batch_finish_s - results[1].batch_finish_s


@pytest.mark.slow  # starting and stopping a local Ray instance takes 10 s or more
def test_ray_backend_judges_untimed_answers_before_timed_ones(
    baseline: str, toolchain: Toolchain
) -> None:
    ray = pytest.importorskip("ray")
    try:
        with RewardService(FAST, workers=1, backend="ray") as service:
            results = service.score_batch(_timed_then_untimed(toolchain, baseline))
        _assert_untimed_first(results)
    finally:
        ray.shutdown()


@pytest.mark.slow  # starting and stopping a local Ray instance takes 10 s or more
def test_ray_backend_scores_a_batch_and_a_sleeper_gets_its_timeout_within_the_deadline(
    baseline: str, toolchain: Toolchain
) -> None:
    """Six samples on two Ray workers, one a sleeper (8 s a test against a 3 s deadline):
    the others are scored, the sleeper's runs are cut to its share of the deadline in its
    worker, so it is its own timeout (never an excluded infra_error) within the deadline,
    and the next batch runs."""
    ray = pytest.importorskip("ray")
    import time

    sleeper = _c_candidate(toolchain, "#include <unistd.h>\nint main(void){sleep(8);return 0;}\n")
    config = ScoreConfig(reward="robust", measure="none", deadline_s=3.0)
    try:
        with RewardService(config, workers=2, backend="ray", allow_unfit=True) as service:
            warm = service.score_batch([ScoreRequest(PROGRAM, "no asm", baseline)])
            assert warm[0].verdict == "extraction_error"
            batch = [ScoreRequest(PROGRAM, _fence(sleeper), baseline)] + [
                ScoreRequest(PROGRAM, text, baseline)
                for text in (_fence(baseline), "no asm") * 2 + (_fence(baseline),)
            ]
            start = time.monotonic()
            results = service.score_batch(batch)
            elapsed = time.monotonic() - start
            assert [r.verdict for r in results[1:]] == ["pass", "extraction_error"] * 2 + ["pass"]
            assert [r.reward for r in results[1:3]] == [0.0, -1.0]
            assert results[0].verdict == "timeout" and results[0].reward == -0.5, results[0]
            assert elapsed < 8.0, f"a stuck sample held the batch for {elapsed:.1f}s"
            again = service.score_batch(
                [ScoreRequest(PROGRAM, _fence(baseline), baseline) for _ in range(2)]
            )
            assert [r.verdict for r in again] == ["pass", "pass"]
    finally:
        ray.shutdown()


def test_a_ray_address_where_nothing_listens_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    """Connecting to an address where no cluster answers raises at once, naming it (in a
    fresh interpreter, so that no Ray state reaches other tests)."""
    pytest.importorskip("ray")
    import os
    import subprocess
    import sys

    code = (
        "import time\n"
        "from asmopt.reward.service import RewardService, ScoreConfig\n"
        "s = RewardService(ScoreConfig(measure='none'), backend='ray',"
        " ray_address='127.0.0.1:9', ray_init_timeout_s=5)\n"
        "t = time.monotonic()\n"
        "try:\n"
        "    s._ray()\n"
        "except RuntimeError as exc:\n"
        "    print('RAISED', round(time.monotonic() - t, 1), exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RAISED")), "")
    assert line, proc.stdout + proc.stderr[-3000:]
    assert float(line.split()[1]) <= 15.0 and "no Ray cluster answers at '127.0.0.1:9'" in line


@pytest.mark.slow  # a real Ray head with token authentication, and a driver's 20 s of retries
def test_joining_a_token_cluster_without_the_token_mode_says_what_is_missing(
    tmp_path: Path,
) -> None:
    """A cluster started with RAY_AUTH_MODE=token refuses a driver without it; Ray's own
    exception says only "Failed to connect", so the service's error names the setting."""
    pytest.importorskip("ray")
    import os
    import shutil
    import socket
    import subprocess
    import sys

    ray_cli = shutil.which("ray", path=str(Path(sys.executable).parent))
    assert ray_cli is not None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    home = tmp_path / "home"  # the generated token stays in this test's HOME
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    head = {**env, "RAY_AUTH_MODE": "token"}
    generate = [ray_cli, "get-auth-token", "--generate"]
    subprocess.run(generate, env=head, capture_output=True, timeout=60, check=True)
    start = [ray_cli, "start", "--head", f"--port={port}", "--num-cpus=1"]
    started = subprocess.run(
        [*start, "--include-dashboard=false"], env=head, capture_output=True, text=True, timeout=120
    )
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        code = (
            "from asmopt.reward.service import RewardService, ScoreConfig\n"
            "s = RewardService(ScoreConfig(measure='none'), backend='ray',"
            f" ray_address='127.0.0.1:{port}', ray_init_timeout_s=90)\n"
            "try:\n"
            "    s._ray()\n"
            "except RuntimeError as exc:\n"
            "    print('RAISED', exc)\n"
        )
        driver = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
        driver["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src")
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=150, env=driver
        )
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RAISED")), "")
        assert line, proc.stdout + proc.stderr[-3000:]
        assert f"127.0.0.1:{port}" in line and "RAY_AUTH_MODE=token" in line, line
    finally:
        subprocess.run([ray_cli, "stop", "--force"], env=head, capture_output=True, timeout=120)


UNGUARDED = """
from asmopt.programs.model import Program, TestCase
from asmopt.reward.adapters import TRLReward
from asmopt.reward.service import ScoreConfig

program = Program(id="echo", source=SOURCE, tests=(TestCase("t", STDIN, EXPECTED),))
reward = TRLReward(ScoreConfig(measure="none"), suite=None, workers=2)
values = reward(["p", "p"], ["no code", FENCED], extra_info=[EXTRA, EXTRA])
print("BACKEND", reward.service.backend, "VERDICTS", *[r.verdict for r in reward.last_results])
reward.close()
"""


@pytest.mark.parametrize("guarded", [False, True])
def test_a_training_script_without_a_main_guard_still_scores(
    tmp_path: Path, baseline: str, guarded: bool
) -> None:
    """Spawned workers re-run an unguarded script and die; the process back-end notices at
    construction, says so, and scores with threads. A guarded script keeps processes."""
    import os
    import subprocess
    import sys

    one = PROGRAM.with_tests(PROGRAM.tests[1:2])  # n = 5, with its class: the row draws
    [test] = one.tests
    extra = {
        "c_code": SOURCE,
        "inputs": [test.stdin.decode()],
        "outputs": [test.expected_stdout.decode()],
        "split": "train",
        "index": 0,
        INPUTS_SPEC_FIELD: row_inputs_spec(one),
    }
    body = (
        f"SOURCE = {SOURCE!r}\nSTDIN = {test.stdin!r}\nEXPECTED = {test.expected_stdout!r}\n"
        f"FENCED = {_fence(baseline)!r}\nEXTRA = {extra!r}\n" + UNGUARDED
    )
    if guarded:
        body = "def main():\n" + "".join(f"    {line}\n" for line in body.splitlines())
        body += 'if __name__ == "__main__":\n    main()\n'
    script = tmp_path / "train_script.py"
    script.write_text(body)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    backend = "process" if guarded else "thread"
    assert f"BACKEND {backend} VERDICTS extraction_error pass" in proc.stdout, proc.stderr
    assert ("no `if __name__" in proc.stderr) is not guarded


def test_diff_answers_are_applied_to_the_baseline(baseline: str) -> None:
    """edit_format=diff: a diff that applies is built and run; one that does not is an
    extraction error naming the hunk, and a full-assembly answer is not read as a diff."""
    config = ScoreConfig(reward="supercoder-design1", measure="none", edit_format="diff")
    lines = baseline.splitlines()
    cfi = next(line for line in lines if line.strip().startswith(".cfi_def_cfa_offset"))
    # Drop an unwind-table directive: same code, so it builds and passes, but not identical.
    good = f"```diff\n@@ -1 +0,0 @@\n-{cfi}\n```"
    applied = score_one(PROGRAM, good, baseline, config)
    assert applied.verdict == "pass" and not applied.identical and applied.reward == 1.0
    # Break the program: remove the final `ret`, so execution runs off the end.
    ret = max(i for i, line in enumerate(lines) if line.strip() == "ret")
    broken = f"```diff\n@@ -{ret + 1} +{ret},0 @@\n-{lines[ret]}\n```"
    assert score_one(PROGRAM, broken, baseline, config).verdict != "pass"
    stale = "```diff\n@@ -3 +3 @@\n-\tthis line is not in the baseline\n+\tnop\n```"
    wrong = score_one(PROGRAM, stale, baseline, config)
    assert wrong.verdict == "extraction_error" and "hunk 1" in wrong.message
    assert wrong.reward == -1.0
    full = score_one(PROGRAM, _fence(baseline), baseline, config)
    assert full.verdict == "extraction_error" and "diff" in full.message
    with pytest.raises(ValueError, match="edit_format"):
        ScoreConfig(edit_format="patch")  # type: ignore[arg-type]


def test_main_guard_detection_follows_what_spawn_re_runs(tmp_path: Path) -> None:
    """spawn re-runs a script or a `-m` module, but never a package's __main__.py (so
    `python -m asmopt.cli` keeps its worker processes)."""
    import os
    import subprocess
    import sys

    probe = "import asmopt.reward.service as s\nprint('UNGUARDED', s.unguarded_main_script())\n"
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(probe)
    (pkg / "mod.py").write_text(probe)
    (tmp_path / "guarded.py").write_text(
        f"def main():\n    exec({probe!r})\nif __name__ == '__main__':\n    main()\n"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{tmp_path}"}

    def run(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, env=env, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip().removeprefix("UNGUARDED ")

    assert run("-m", "pkg") == "None"
    assert run("-m", "pkg.mod") == str(pkg / "mod.py")
    assert run(str(pkg / "mod.py")) == str(pkg / "mod.py")
    assert run(str(tmp_path / "guarded.py")) == "None"


def test_a_lone_surrogate_is_the_answers_extraction_error_not_ours(baseline: str) -> None:
    """Unencodable text (a lone surrogate) can be no file: the model's extraction_error,
    scored, never an excluded infra_error a policy could hide behind."""
    raw = ScoreConfig(reward="robust", measure="none", extract=False)
    for config, text in ((raw, baseline + "\udcff"), (NO_TIMING, _fence(baseline + "\udcff"))):
        result = score_one(PROGRAM, text, baseline, config)
        assert result.verdict == "extraction_error" and result.reward is not None, result


def test_the_timing_precision_is_checked_when_the_config_is_made() -> None:
    assert ScoreConfig().timing.precision == "decision"  # what a reward needs
    with pytest.raises(ValueError, match=r"timing\.precision: 'exact' is not one of target, deci"):
        ScoreConfig(timing={"precision": "exact"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="precision must be 'target' or 'decision'"):
        ScoreConfig(timing=TimingConfig(precision="exact"))  # type: ignore[arg-type]


def test_timing_is_one_nested_config_over_the_reward_preset() -> None:
    """ScoreConfig's timing is a TimingConfig, REWARD_TIMING unless given; a mapping
    changes the fields it names, every key and value checked; it pickles (it is shipped to
    workers) and writes as plain JSON."""
    assert ScoreConfig().timing == REWARD_TIMING
    preset = (REWARD_TIMING.max_pairs, REWARD_TIMING.budget_s, REWARD_TIMING.precision)
    assert preset == (60, 10.0, "decision")
    nested = ScoreConfig.from_options(
        {"measure": "time", "timing": {"budget_s": 20, "max_pairs": 100}}
    )
    assert nested.timing == replace(REWARD_TIMING, budget_s=20.0, max_pairs=100)
    assert ScoreConfig(timing=TimingConfig(max_pairs=9)).timing.max_pairs == 9
    assert pickle.loads(pickle.dumps(nested)) == nested
    assert json.loads(json.dumps(nested.to_dict()))["timing"]["budget_s"] == 20.0
    refused = {
        "timing.budget": r"unknown timing setting 'timing.budget'; did you mean 'timing.budget_s'",
        "many": r"timing.max_pairs: expected an integer, got 'many'",
        "pairs": r"timing: need 2 <= min_pairs <= max_pairs, got 4 and 3",
    }
    for settings, message in (
        ({"budget": 3}, refused["timing.budget"]),
        ({"max_pairs": "many"}, refused["many"]),
        ({"max_pairs": 3}, refused["pairs"]),
    ):
        with pytest.raises(ValueError, match=message):
            ScoreConfig.from_options({"timing": settings})
    with pytest.raises(ValueError, match="unknown ScoreConfig setting 'mesure'; did you mean"):
        ScoreConfig.from_options({"mesure": "none"})
    with pytest.raises(InputError, match="timing: expected a TimingConfig or a mapping"):
        ScoreConfig(timing=20.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flat", "nested"),
    [
        ("timing_budget_s", "timing.budget_s"),
        ("timing_max_pairs", "timing.max_pairs"),
        ("timing_target_half_width", "timing.target_half_width"),
        ("timing_precision", "timing.precision"),
    ],
)
def test_an_old_flat_timing_key_names_its_new_spelling(flat: str, nested: str) -> None:
    with pytest.raises(ValueError, match=f"^{flat}: use {nested.replace('.', '[.]')} "):
        ScoreConfig.from_options({flat: 1})
    with pytest.raises(ValueError, match=f"^{flat}: use "):
        score(PROGRAM, "no assembly", measure="none", **{flat: 1})
