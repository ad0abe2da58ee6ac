"""The timing engine: statistics with a mock executor, then real interleaved runs."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import pytest

from asmopt.measure.speedup import MeasureStatus, TimingWarning
from asmopt.measure.timing import (
    CoreLayout,
    CoreLock,
    Round,
    RunFailure,
    RunTiming,
    SandboxSpread,
    TimingConfig,
    measure_pairs,
    time_test,
    time_tests,
)
from asmopt.programs.model import Program, TestCase
from asmopt.sandbox import Sandbox
from asmopt.toolchain import Toolchain


class MockExecutor:
    """Hands out pre-set (baseline, candidate) CPU times, round by round."""

    def __init__(self, pairs: list[tuple[float, float]], failure: RunFailure | None = None):
        self.pairs = list(pairs)
        self.failure = failure
        self.requests: list[tuple[int, int]] = []

    def run_round(self, pairs: int, warmup_pairs: int) -> Round:
        self.requests.append((pairs, warmup_pairs))
        if self.failure is not None:
            return Round(pairs=[], failure=self.failure)
        take, self.pairs = self.pairs[:pairs], self.pairs[pairs:]
        timed = [(RunTiming(b, b), RunTiming(c, c)) for b, c in take]
        return Round(pairs=timed, warmups=[(RunTiming(1, 1), RunTiming(1, 1))] * warmup_pairs)


# The pilot round (a warm-up round) is tested in test_timing_rounds.py; here the statistics.
# No between-sandbox prior and one round allowed to stand alone: the plain paired statistic
# (the rounds rule and the spread prior are tested in test_timing_rounds.py and
# test_timing_spread.py).
NO_SPREAD = SandboxSpread(((0.001, 0.0),), df=0.0, source="none")
FAST = TimingConfig(
    min_pairs=4,
    max_pairs=50,
    resolution=0.0,
    budget_s=1e9,
    pilot_round=False,
    spread=NO_SPREAD,
    min_rounds=1,
    confidence=0.95,
)


def test_known_samples_give_known_interval() -> None:
    # Paired log-ratios 0.10 +- 0.01: the engine must report exp of the t-interval.
    base = [1.0 * math.exp(x) for x in (0.10, 0.11, 0.09, 0.10)]
    ex = MockExecutor([(b, 1.0) for b in base])
    out = measure_pairs(ex, FAST, test="t1")
    sp = out.speedup
    assert out.failure is None and sp.status == MeasureStatus.MEASURED
    assert sp.ratio == pytest.approx(math.exp(0.10))
    sd = math.sqrt((0.01**2 * 2) / 3)
    assert sp.high == pytest.approx(math.exp(0.10 + 3.182446 * sd / 2), rel=1e-6)
    assert sp.n == 4 and sp.reliable and ex.requests == [(4, 1)]
    assert sp.raw["base_cpu"] == pytest.approx(base)


def test_outlier_is_flagged_kept_raw_and_left_out_of_the_estimate() -> None:
    logs = [0.0, 0.001, -0.001, 0.0005, -0.0005, 0.0, 0.001, -0.001, 0.0, 0.30]
    ex = MockExecutor([(math.exp(x), 1.0) for x in logs])
    out = measure_pairs(ex, TimingConfig(min_pairs=10, resolution=0.0, budget_s=1e9))
    sp = out.speedup
    assert sp.n_outliers == 1 and sp.raw["outlier"][-1] is True
    assert len(sp.raw["base_cpu"]) == 10  # raw samples keep the outlier
    assert sp.ratio == pytest.approx(1.0, abs=1e-3)  # the estimate does not


def test_noisy_samples_ask_for_more_pairs_then_stop_at_the_budget() -> None:
    noisy = [(1.0 + 0.2 * ((-1) ** k), 1.0) for k in range(200)]
    ex = MockExecutor(noisy)
    cfg = TimingConfig(min_pairs=4, max_pairs=30, max_rounds=3, resolution=0.0, budget_s=1e9)
    sp = measure_pairs(ex, cfg).speedup
    assert len(ex.requests) >= 2 and sum(r[0] for r in ex.requests) == 30
    # Short of the target is less precise, not unsound: reported, and still reliable.
    assert sp.reliable and str(TimingWarning.TARGET_NOT_MET) in sp.warnings
    assert "budget" in sp.message  # the warning says what to do


def test_resolution_floor_keeps_tiny_differences_insignificant() -> None:
    ex = MockExecutor([(1.003, 1.0)] * 4)
    sp = measure_pairs(ex, TimingConfig(min_pairs=4, resolution=0.01)).speedup
    assert sp.ratio == pytest.approx(1.003)
    assert sp.low < 1.0 < sp.high


def test_failure_stops_the_measurement() -> None:
    fail = RunFailure(True, "candidate failed in timing run 3 of 10: wrong_output", verdict="x")
    out = measure_pairs(MockExecutor([], failure=fail), FAST)
    assert out.failure is fail and out.speedup.status == MeasureStatus.INFRA_ERROR


def test_core_lock_never_lets_two_timings_share_a_core(tmp_path: Path) -> None:
    lock = CoreLock(CoreLayout(timing=(0,), general=(0,), isolated=False), tmp_path)
    active, overlaps = [], []

    def worker() -> None:
        for _ in range(5):
            with lock.hold() as cpu:
                active.append(cpu)
                if len(active) > 1:
                    overlaps.append(list(active))
                time.sleep(0.002)
                active.remove(cpu)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []


# ---------------------------------------------------------------------------- real runs
SPIN_C = r"""
#include <stdio.h>
int main(void) {
    long n; if (scanf("%ld", &n) != 1) return 1;
    volatile unsigned long x = 0;
    for (long i = 0; i < n; i++) x += i ^ (x >> 3);
    printf("%ld\n", n);
    return 0;
}
"""

# Counts its own runs in /tmp and says where it runs: the launcher must make every run look
# like the first, and baseline and candidate must see the same argv, environment and cwd.
OBSERVER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/shm.h>
extern char **environ;
int main(int argc, char **argv) {
    FILE *f = fopen("/tmp/seen", "r");
    int runs = 0;
    if (f) { fscanf(f, "%d", &runs); fclose(f); }
    f = fopen("/tmp/seen", "w"); fprintf(f, "%d\n", runs + 1); fclose(f);
    char cwd[256]; getcwd(cwd, sizeof cwd);
    int shm = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    printf("%s previous=%d argv0=%s execfn=%s cwd=%s argc=%d shm=%d\n", TAG, runs, argv[0],
           (char *)getauxval(AT_EXECFN), cwd, argc, shm);
    for (char **e = environ; *e; e++) printf("%s\n", *e);
    return 0;
}
"""


def _binary(toolchain: Toolchain, source: str, flags: tuple[str, ...] = ("-O2",)) -> Path:
    program = Program(id="p", source=source, tests=())
    build = toolchain.compile_binary(program, flags)
    assert build.ok and build.output is not None, build.message
    return build.output


def test_real_aa_timing_is_sane(toolchain: Toolchain, sandbox: Sandbox, tmp_path: Path) -> None:
    binary = _binary(toolchain, SPIN_C)
    test = TestCase("t1", b"3000000\n", b"3000000\n")
    cfg = TimingConfig(min_pairs=4, max_pairs=12, budget_s=10)
    out = time_test(sandbox, binary, binary, test, cfg)
    sp = out.speedup
    assert out.failure is None, out.failure
    assert sp.status == MeasureStatus.MEASURED
    assert 0.8 < sp.ratio < 1.25 and sp.low <= sp.ratio <= sp.high
    assert sp.base_mean and sp.base_mean > 0.001
    assert sp.context["runs"] >= 2 * (cfg.min_pairs + cfg.warmup_pairs)
    assert len(sp.context["env_pad"]) == sp.context["rounds"]


def test_runs_are_indistinguishable(toolchain: Toolchain, sandbox: Sandbox) -> None:
    a = _binary(toolchain, OBSERVER_C, ("-O2", '-DTAG="A"'))
    b = _binary(toolchain, OBSERVER_C, ("-O2", '-DTAG="B"'))
    result = sandbox.run_binaries([a, b], [0, 1, 0, 1], marker="m0", stdin=b"")
    assert result.segments is not None and len(result.segments) == 4
    views = [seg.decode().split(" ", 1) for seg in result.segments]
    assert [tag for tag, _ in views] == ["A", "B", "A", "B"]
    assert len({view for _, view in views}) == 1, views  # same view, run after run
    assert "previous=0" in views[0][1] and "execfn=/dev/fd/" in views[0][1]
    assert "shm=-1" in views[0][1]  # System V IPC (state across runs) is refused


def test_candidate_failing_during_timing_is_its_fault(
    toolchain: Toolchain, sandbox: Sandbox, tmp_path: Path
) -> None:
    good = _binary(toolchain, SPIN_C)
    bad = _binary(toolchain, SPIN_C.replace('printf("%ld\\n", n);', 'printf("%ld\\n", n + 1);'))
    test = TestCase("t1", b"1000\n", b"1000\n")
    out = time_test(sandbox, good, bad, test, TimingConfig())
    assert out.failure is not None and out.failure.candidate_fault
    # The first run of the candidate (run 1 or 2: a block's order starts at random).
    assert out.failure.verdict == "wrong_output"
    assert "timing run 1 of" in out.failure.message or "timing run 2 of" in out.failure.message


def test_tests_share_a_sandbox_and_failures_name_their_test(
    toolchain: Toolchain, sandbox: Sandbox, tmp_path: Path
) -> None:
    good = _binary(toolchain, SPIN_C)
    # Wrong only on input 300: the batch must blame that test, not its neighbours.
    bad = _binary(
        toolchain, SPIN_C.replace('printf("%ld\\n", n);', 'printf("%ld\\n", n == 300 ? 0 : n);')
    )
    tests = [TestCase(f"n{n}", f"{n}\n".encode(), f"{n}\n".encode()) for n in (100, 200, 300)]
    cfg = TimingConfig(min_pairs=3, max_pairs=6, budget_s=5)
    speedups, failure, failed = time_tests(sandbox, good, good, tests, cfg)
    assert failure is None and [s.test for s in speedups] == ["n100", "n200", "n300"]
    assert all(s.status == MeasureStatus.MEASURED and s.n >= 3 for s in speedups)
    speedups, failure, failed = time_tests(sandbox, good, bad, tests, cfg)
    assert failure is not None and failure.candidate_fault and failed == "n300"
    assert failure.verdict == "wrong_output"


LOUD_C = r"""
#include <stdio.h>
int main(void) {
    long n; if (scanf("%ld", &n) != 1) return 1;
    for (long i = 0; i < n; i++) fputs("0123456789abcdef0123456789abcdef\n", stdout);
    return 0;
}
"""


def test_a_hash_checked_test_that_prints_a_lot_is_timed_within_its_output_caps(
    toolchain: Toolchain, sandbox: Sandbox
) -> None:
    # Its expected output is a 32-byte digest (llvm-test-suite's HASH_PROGRAM_OUTPUT), but
    # each run writes ~660 KB: the batch's output cap must follow what runs write.
    from asmopt.compare import hashed_output
    from asmopt.programs.model import Comparison

    binary = _binary(toolchain, LOUD_C)
    lines = 20_000
    text = b"0123456789abcdef0123456789abcdef\n" * lines
    digest = hashed_output(text, 0).encode()
    test = TestCase("t1", b"%d\n" % lines, digest, compare=Comparison(mode="md5"))
    cfg = TimingConfig(min_pairs=4, max_pairs=12, budget_s=10)
    out = time_test(sandbox, binary, binary, test, cfg)
    assert out.failure is None, out.failure.message
    assert out.speedup.status == MeasureStatus.MEASURED and out.speedup.n >= 4


def test_one_sandbox_runs_the_baseline_and_eight_candidates(
    toolchain: Toolchain, sandbox: Sandbox
) -> None:
    from asmopt.sandbox.runner import MAX_BINARIES

    binaries = [_binary(toolchain, SPIN_C, ("-O2", f"-DVARIANT={k}")) for k in range(MAX_BINARIES)]
    order = list(range(MAX_BINARIES)) + list(reversed(range(MAX_BINARIES)))
    result = sandbox.run_binaries(binaries, order, marker="m1", stdin=b"1000\n")
    assert result.infra_error is None and result.segments is not None
    assert list(result.segments) == [b"1000\n"] * len(order)
    with pytest.raises(ValueError, match="binaries"):
        sandbox.run_binaries(binaries + binaries[:1], [0], stdin=b"1\n")
