"""Shared pieces of the timing benchmarks: our method, the reference method, load, output.

The reference method is the one the SuperCoder harness uses (docs in the project's shared
notes): hyperfine with 3 warm-ups and 10 runs per binary, baseline then candidate,
whole-process wall clock through a shell, speedup = mean_base / mean_cand, the tests of a
program timed concurrently by a pool of 2 workers, no sandbox.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT / "src"))

from asmopt.measure.speedup import MeasureMode, ProgramSpeedup, TestSpeedup  # noqa: E402
from asmopt.measure.stats import t_quantile  # noqa: E402
from asmopt.measure.timing import (  # noqa: E402
    TimingConfig,
    default_core_lock,
    time_test,  # noqa: F401  (re-exported for the other benchmarks)
    time_tests,
)
from asmopt.programs import load_builtin_suite  # noqa: E402
from asmopt.programs.model import Program, TestCase  # noqa: E402
from asmopt.provenance import machine  # noqa: E402
from asmopt.sandbox.runner import Sandbox, default_sandbox  # noqa: E402
from asmopt.toolchain import Toolchain, default_toolchain  # noqa: E402

# Ten built-in programs whose heavy test runs 100-200 ms at -O3 on the development machine:
# long enough to matter, short enough for several trials in a few minutes.
PROGRAMS = (
    "gcd_pairs",
    "sieve_primes",
    "collatz_longest",
    "popcount_swar",
    "crc32_table",
    "sha256_blocks",
    "radix_sort_u32",
    "scc_kosaraju",
    "floyd_warshall",
    "coin_change_ways",
)


def setup() -> tuple[Toolchain, Sandbox]:
    sandbox = default_sandbox()
    sandbox.check()
    return default_toolchain(), sandbox


def programs(ids: Sequence[str] = PROGRAMS) -> list[Program]:
    suite = load_builtin_suite()
    return [suite.get(i) for i in ids]


def baseline_binary(toolchain: Toolchain, program: Program, asm: str | None = None) -> Path:
    asm = asm if asm is not None else toolchain.baseline_assembly(program)
    build = toolchain.assemble_and_link(asm, program.ldflags)
    if not build.ok or build.output is None:
        raise RuntimeError(f"{program.id}: {build.message}")
    return build.output


def spin_assembly(asm: str, iterations: int) -> str:
    """The same program with `iterations` of a 1-cycle spin loop at the start of `main`.

    %r11 is scratch at function entry, so argc/argv and callee-saved registers survive."""
    if iterations <= 0:
        return asm
    spin = f"main:\n\tmovq\t${iterations}, %r11\n.Lbench_spin:\n\tdecq\t%r11\n\tjnz\t.Lbench_spin\n"
    if "\nmain:\n" not in asm:
        raise ValueError("no `main:` label at the start of a line")
    return asm.replace("\nmain:\n", "\n" + spin, 1)


# A known effect must not move code: a spin loop inserted into one binary only shifts every
# later instruction of it, and that layout change alone moved some tests by about 3%. So
# both sides of a known effect carry the loop, and only its trip count differs (`movq
# $N, %r11` is 7 bytes for any N below 2^31: the two binaries have the same layout).
LAYOUT_FLOOR_ITERATIONS = 1


def spin_pair(asm: str, extra: int) -> tuple[str, str]:
    """(the program with a spin loop of LAYOUT_FLOOR_ITERATIONS, the same with `extra`
    iterations more): one layout, a known difference of `extra` iterations."""
    if not 0 <= extra < 2**31 - LAYOUT_FLOOR_ITERATIONS:
        raise ValueError(f"extra iterations out of range: {extra}")
    return (
        spin_assembly(asm, LAYOUT_FLOOR_ITERATIONS),
        spin_assembly(asm, LAYOUT_FLOOR_ITERATIONS + extra),
    )


# ---------------------------------------------------------------------------- load
@contextlib.contextmanager
def busy_load(n: int = 2) -> Iterator[list[int]]:
    """`n` processes that spin forever (unpinned: the scheduler spreads them over the cores).

    Each asks the kernel to kill it when the benchmark dies, so a benchmark stopped by a
    signal (its clean-up never runs) does not leave the machine loaded for whatever
    runs next."""
    spin = (
        "import ctypes, os, signal\n"
        "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
        f"os.getppid() == {os.getpid()} or os._exit(0)\n"
        "while True: pass\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(n)]
    try:
        time.sleep(0.5)
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def environment() -> str:
    m = machine()
    load = " ".join(f"{x:.2f}" for x in m["loadavg"])
    layout = default_core_lock().layout
    return (
        f"{m['cpu_model']}, {m['cpus']} CPUs, kernel {m['kernel']}, load average {load}; "
        f"timing cores {list(layout.timing)}, other work on {list(layout.general)}"
    )


# ---------------------------------------------------------------------------- our method
@dataclass
class OursResult:
    program: ProgramSpeedup
    tests: list[TestSpeedup]
    wall_s: float


def fresh_draw(program: Program, seed: int | None = None) -> tuple[object, list[bool]] | None:
    """The draw of a grading (asmopt.fresh): every pair of a test that stands for a size
    class on its own fresh input, as `asmopt eval` times it; None for fixed inputs only."""
    from asmopt.fresh import FreshInputs, pair_draws

    fresh = FreshInputs(seed=seed) if seed is not None else FreshInputs()
    draw, flags = pair_draws(program, [(fresh, 0)])
    return None if draw is None or flags is None else (draw, flags)


def ours(
    sandbox: Sandbox,
    base: Path,
    cand: Path,
    tests: Sequence[TestCase],
    config: TimingConfig | None = None,
    check_output: bool = True,
    program: Program | None = None,
) -> OursResult:
    """Our procedure on every test of a program, then the per-program aggregate; with the
    `program` (and its input generator), every pair runs on its own fresh input."""
    config = config or TimingConfig()
    start = time.monotonic()
    fresh = fresh_draw(program) if program is not None else None
    draw, flags = fresh if fresh is not None else (None, None)
    per_test, failure, failed = time_tests(
        sandbox, base, cand, tests, config, draw=draw, fresh_tests=flags  # type: ignore[arg-type]
    )
    if failure is not None:
        raise RuntimeError(f"{failed}: {failure.message}")
    program = ProgramSpeedup.from_tests(MeasureMode.TIME, per_test)  # the tests' resolution
    return OursResult(program, per_test, time.monotonic() - start)


# ---------------------------------------------------------------------------- reference method
@dataclass
class RefTest:
    ratio: float
    half_width: float  # relative half-width of a 95% interval for the ratio of means
    base_times: list[float]
    cand_times: list[float]


def _welch_log_interval(a: list[float], b: list[float]) -> float:
    """Relative 95% half-width of mean(a)/mean(b) by the delta method with Welch's df."""
    ma, mb = statistics.mean(a), statistics.mean(b)
    va = statistics.variance(a) / (len(a) * ma * ma)
    vb = statistics.variance(b) / (len(b) * mb * mb)
    se = math.sqrt(va + vb)
    if se == 0:
        return 0.0
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return math.exp(t_quantile(0.975, df) * se) - 1.0


def hyperfine_test(
    base: Path, cand: Path, stdin: bytes, warmup: int = 3, runs: int = 10
) -> RefTest:
    """One test, the reference way: hyperfine times the baseline, then the candidate."""
    if shutil.which("hyperfine") is None:
        raise RuntimeError("hyperfine is not installed (apt-get install hyperfine)")
    with tempfile.TemporaryDirectory(prefix="asmopt-ref-") as tmp:
        d = Path(tmp)
        (d / "in").write_bytes(stdin)
        report = d / "out.json"
        subprocess.run(
            [
                "hyperfine",
                "--warmup",
                str(warmup),
                "--runs",
                str(runs),
                "--style",
                "none",
                "--export-json",
                str(report),
                f"{base} < {d / 'in'}",
                f"{cand} < {d / 'in'}",
            ],
            check=True,
            capture_output=True,
        )
        data = json.loads(report.read_text())["results"]
    a, b = data[0]["times"], data[1]["times"]
    ma, mb = statistics.mean(a), statistics.mean(b)
    if ma <= 0 or mb <= 0:
        # hyperfine subtracts the shell's start-up time; for a ~1 ms program under load the
        # corrected mean can come out as 0, and the reference's ratio is then undefined.
        ratio = math.inf if mb <= 0 < ma else (0.0 if ma <= 0 < mb else math.nan)
        return RefTest(ratio, math.inf, a, b)
    return RefTest(ma / mb, _welch_log_interval(a, b), a, b)


@dataclass
class RefResult:
    tests: list[RefTest]
    wall_s: float

    @property
    def ratio(self) -> float:
        """The reference's per-program speedup (unfloored): the mean of per-test ratios."""
        return statistics.mean(t.ratio for t in self.tests)


def reference(base: Path, cand: Path, tests: Sequence[TestCase], workers: int = 2) -> RefResult:
    """The reference harness on one program: its tests timed by a pool of `workers`."""
    start = time.monotonic()
    with cf.ThreadPoolExecutor(max_workers=workers) as pool:
        out = list(pool.map(lambda t: hyperfine_test(base, cand, t.stdin), tests))
    return RefResult(out, time.monotonic() - start)


# ---------------------------------------------------------------------------- output
def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_result(name: str, text: str) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(text)
    return path


def quantiles(values: Sequence[float]) -> str:
    s = sorted(v for v in values if not math.isnan(v))
    undefined = len(values) - len(s)
    if not s:
        return "-"
    if undefined:
        return f"{undefined} undefined; " + quantiles(s)
    q = lambda p: s[min(len(s) - 1, int(p * (len(s) - 1) + 0.5))]  # noqa: E731
    return (
        f"min {s[0]:.4f}, p5 {q(0.05):.4f}, median {q(0.5):.4f}, p95 {q(0.95):.4f}, max {s[-1]:.4f}"
    )
