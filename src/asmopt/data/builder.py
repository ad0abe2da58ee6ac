"""Build a benchmark suite from any pool of C programs with test inputs.

This reproduces the reference dataset pipeline (docs/datasets.md) on any pool, in this
order, counting every program it drops under one reason:

1. `duplicate_source`: deduplicate by normalised source (comments and whitespace removed);
   the first program in id order is kept. Done first so duplicates cost no compile time
   and cannot take two places in the top N.
2. `compile_failed`: compile at -O0 and at -O3 (sandboxed gcc).
3. Keep at most `max_tests` tests (the first ones in name order), then regenerate every
   expected output by running the reference build (plain gcc, whose default is -O0) on
   each input in the sandbox with the reference's 60 s limit: `crash`, `timeout`,
   `nonzero_exit`, `output_limit`, `sandbox_violation` drop the program.
4. Time the -O0 and the -O3 binary on the first input (the minimum wall time of
   `timing_runs` sandboxed runs each, one program at a time so parallel compiles do not
   disturb the clock; the reference times concurrently) and select: `below_speedup`
   under the threshold (3.0), then `beyond_top_n` past the N fastest-improving (10,000).
5. `o3_fails_tests`: the -O3 build must reproduce the regenerated outputs (programs with
   undefined behaviour that changes with optimisation go here).
6. `too_long`: prompt + answer (C + -O3 assembly, see prompt.py) must fit `max_tokens`
   (4,000) by a local tokenizer, or by the character estimate in tokens.py.
7. Split train / validation / test by a hash of the problem id (common.split_for), so
   submissions to one problem are never on both sides.

`infra_error` marks drops caused by our side (sandbox or toolchain), never the program.
"""

from __future__ import annotations

import logging
import math
import signal as _signal
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from asmopt.compare import compare_output
from asmopt.evaluate import check_binary
from asmopt.judge import Verdict, classify_run
from asmopt.parallel import parallel_map
from asmopt.programs.model import Program, Suite, TestCase
from asmopt.sandbox.records import Limits
from asmopt.sandbox.runner import Sandbox
from asmopt.toolchain import Toolchain
from asmopt.typed_config import renamed_keywords

from .common import RENAMED_KEYWORDS, DataError, ItemError, assign_splits, problem_of
from .export import flatten_program
from .normalize import source_key
from .prompt import build_question, format_answer
from .report import DataReport
from .tokens import DEFAULT_CHARS_PER_TOKEN, TokenCounter

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

# timer(program, level, binary, test) -> seconds `binary` (the program built at `level`,
# "O0" or "O3") takes on `test`. Tests pass a fake one to exercise selection exactly.
Timer = Callable[[Program, str, Path, TestCase], float]
_MIN_TIME_S = 1e-6  # guards the speedup division; real runs take far longer


@renamed_keywords(RENAMED_KEYWORDS)
@dataclass(frozen=True)
class BuildConfig:
    """Every selection rule of the pipeline; the defaults reproduce the reference."""

    speedup_threshold: float = 3.0  # keep programs with t(-O0) / t(-O3) >= this
    top_n: int | None = 10_000  # then keep this many with the largest speedup (None: all)
    max_tests: int = 10  # tests kept per program (the first ones)
    max_tokens: int | None = 4_000  # prompt + answer budget (None: no length filter)
    tokenizer: str | None = None  # local tokenizer path; None: character estimate
    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN
    reference_flags: tuple[str, ...] = ("-O0",)  # "plain gcc": gcc's default level is -O0
    o0_flags: tuple[str, ...] = ("-O0",)
    o3_flags: tuple[str, ...] = ("-O3",)
    run_seconds: float = 60.0  # limit per reference run (the reference uses 60 s)
    timing_runs: int = 3  # runs per binary when timing; the minimum is used
    val_frac: float = 0.025  # reference: 200 of 8,072 programs are validation
    test_frac: float = 0.0  # the reference has no test split; set e.g. 0.05 for one
    split_seed: str = "asmopt"  # hashed with each problem id to pick its split
    dedup: bool = True
    jobs: int = 2

    def __post_init__(self) -> None:
        if self.speedup_threshold < 0:
            raise DataError(f"speedup threshold must be >= 0, got {self.speedup_threshold}")
        if self.top_n is not None and self.top_n < 1:
            raise DataError(f"top N must be at least 1, got {self.top_n}")
        if self.max_tests < 1:
            raise DataError(f"max tests must be at least 1, got {self.max_tests}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise DataError(f"max tokens must be at least 1, got {self.max_tokens}")
        if self.run_seconds <= 0 or self.timing_runs < 1 or self.jobs < 1:
            raise DataError("run seconds, timing runs and jobs must be positive")
        if min(self.val_frac, self.test_frac) < 0 or self.val_frac + self.test_frac > 1:
            raise DataError(
                f"split fractions must be >= 0 and sum to at most 1 "
                f"(validation {self.val_frac}, test {self.test_frac})"
            )

    def limits(self) -> Limits:
        return Limits(cpu_seconds=math.ceil(self.run_seconds), wall_seconds=self.run_seconds * 2)


@dataclass
class _Prepared:
    program: Program  # tests truncated, expected outputs regenerated
    o0_binary: Path
    o3_binary: Path
    time_o0: float = math.nan
    time_o3: float = math.nan

    @property
    def speedup(self) -> float:
        return self.time_o0 / max(self.time_o3, _MIN_TIME_S)


_RUN_FAILURES = {
    Verdict.TIMEOUT: "timeout",
    Verdict.CRASH: "crash",
    Verdict.NONZERO_EXIT: "nonzero_exit",
    Verdict.OUTPUT_LIMIT: "output_limit",
    Verdict.SANDBOX_VIOLATION: "sandbox_violation",
    Verdict.INFRA_ERROR: "infra_error",
}


def sandbox_timer(sandbox: Sandbox, limits: Limits, runs: int) -> Timer:
    """Minimum sandboxed wall time over `runs` runs (whole process, like the reference)."""

    def timer(program: Program, level: str, binary: Path, test: TestCase) -> float:
        best = math.inf
        for _ in range(runs):
            run = sandbox.run_program(binary, argv=test.argv, stdin=test.stdin, limits=limits)
            if run.infra_error:
                raise ItemError("infra_error", f"timing run: {run.infra_error}")
            best = min(best, run.wall_time_s)
        return best

    return timer


class Builder:
    """Runs the pipeline; create one per build (it holds the toolchain, sandbox, timer)."""

    def __init__(
        self,
        config: BuildConfig,
        *,
        toolchain: Toolchain | None = None,
        sandbox: Sandbox | None = None,
        timer: Timer | None = None,
        progress: bool = False,
    ) -> None:
        from asmopt.toolchain import default_toolchain

        self.config = config
        self.toolchain = toolchain or default_toolchain()
        self.sandbox = sandbox or self.toolchain.sandbox
        self.limits = config.limits()
        self.timer = timer or sandbox_timer(self.sandbox, self.limits, config.timing_runs)
        self.progress = progress
        self.tokens = TokenCounter(config.tokenizer, config.chars_per_token)

    # ------------------------------------------------------------------ helpers
    def _map(
        self, desc: str, fn: Callable[[T], R], items: list[T], jobs: int | None = None
    ) -> list[R]:
        return parallel_map(
            fn, items, jobs=jobs or self.config.jobs, desc=desc, progress=self.progress
        )

    def _compile(self, program: Program, flags: tuple[str, ...]) -> Path:
        build = self.toolchain.compile_binary(program, flags)
        if not build.ok or build.output is None:
            reason = "infra_error" if build.stage == "infra" else "compile_failed"
            raise ItemError(reason, f"gcc {' '.join(flags)}: {build.message}")
        return build.output

    def _reference_outputs(self, program: Program, binary: Path) -> Program:
        """The program with at most max_tests tests whose outputs come from `binary`."""
        tests = []
        for test in program.tests[: self.config.max_tests]:
            run = self.sandbox.run_program(
                binary, argv=test.argv, stdin=test.stdin, limits=self.limits
            )
            probe = replace(test, expected_stdout=run.stdout, expected_exit=0)
            verdict = classify_run(probe, run, self.limits)
            if verdict.verdict != Verdict.PASS:
                reason = _RUN_FAILURES.get(verdict.verdict, "crash")
                if run.signal == _signal.SIGXCPU:
                    reason = "timeout"  # the CPU limit, whatever the rounding of cpu time
                raise ItemError(reason, f"test {test.name}: {verdict.message}")
            tests.append(replace(test, expected_stdout=run.stdout, expected_exit=0))
        return program.with_tests(tuple(tests))

    def _prepare(self, program: Program) -> _Prepared | ItemError:
        try:
            if not program.tests:
                raise ItemError("no_tests", "the program has no tests")
            o0 = self._compile(program, self.config.o0_flags)
            o3 = self._compile(program, self.config.o3_flags)
            ref = (
                o0
                if self.config.reference_flags == self.config.o0_flags
                else self._compile(program, self.config.reference_flags)
            )
            return _Prepared(self._reference_outputs(program, ref), o0, o3)
        except ItemError as exc:
            return exc
        except Exception as exc:  # ours: record it, never lose the program silently
            log.exception("build step failed on %s", program.id)
            return ItemError("infra_error", f"{type(exc).__name__}: {exc}")

    def _time(self, item: _Prepared) -> ItemError | None:
        first = item.program.tests[0]
        try:
            item.time_o0 = self.timer(item.program, "O0", item.o0_binary, first)
            item.time_o3 = self.timer(item.program, "O3", item.o3_binary, first)
        except ItemError as exc:
            return exc
        except Exception as exc:  # ours (sandbox gone): the program is not to blame
            log.exception("timing failed on %s", item.program.id)
            return ItemError("infra_error", f"timing: {type(exc).__name__}: {exc}")
        return None

    def _self_check(self, item: _Prepared) -> str | None:
        result = check_binary(item.program, item.o3_binary, self.sandbox, self.limits)
        return None if result.correct else f"{result.verdict}: {result.message}"

    def _length(self, program: Program) -> int | ItemError:
        flat, _ = flatten_program(program)
        given = program.meta.get("baseline_asm")
        try:
            if isinstance(given, str) and given.strip():
                baseline = given
            else:
                baseline = self.toolchain.baseline_assembly(flat, self.config.o3_flags)
        except Exception as exc:
            return ItemError("compile_failed", f"baseline assembly: {exc}")
        text_tokens = self.tokens.count(build_question(flat.source, baseline))
        return text_tokens + self.tokens.count(format_answer(baseline))

    # ------------------------------------------------------------------ pipeline
    def build(
        self, pool: Suite | Iterable[Program], name: str | None = None
    ) -> tuple[Suite, DataReport]:
        """The pipeline of the module docstring, one method per step; each step drops
        programs into the report under its reason and hands the rest to the next."""
        cfg = self.config
        programs = pool.select() if isinstance(pool, Suite) else sorted(pool, key=lambda p: p.id)
        pool_name = pool.name if isinstance(pool, Suite) else "pool"
        report = DataReport("build")
        report.stats.update(
            pool=len(programs),
            config=asdict(cfg),
            length_measure=self.tokens.description,
            timing="min sandboxed wall time over timing_runs runs on the first test",
        )
        if not programs:
            raise DataError("the pool has no programs")
        self.sandbox.check()

        if cfg.dedup:
            programs = self._deduplicate(programs, report)  # 1
        prepared = self._compile_and_run(programs, report)  # 2-3
        selected = self._select_by_speedup(self._time_all(prepared, report), report)  # 4
        checked = self._check_o3(selected, report)  # 5
        final = self._fit_length(checked, report)  # 6

        # 7. split by problem
        splits = assign_splits(final, cfg.val_frac, cfg.test_frac, cfg.split_seed)
        report.kept = sorted(p.id for p in final)
        report.stats["splits"] = {
            s: sum(1 for v in splits.values() if v == s) for s in ("train", "validation", "test")
        }
        suite = Suite(
            name=name or f"{pool_name}-built",
            programs={p.id: p for p in final},
            splits=splits,
            description=(
                f"built from {pool_name}: speedup >= {cfg.speedup_threshold:g}, "
                f"top {cfg.top_n}, <= {cfg.max_tests} tests, <= {cfg.max_tokens} tokens"
            ),
        )
        return suite, report

    def _deduplicate(self, programs: list[Program], report: DataReport) -> list[Program]:
        """Step 1: one program per normalised source (with its headers), the first by id."""
        seen: dict[str, str] = {}
        unique = []
        for p in programs:
            key = source_key(p.source + "\0".join(h for _, h in p.headers))
            if key in seen:
                report.drop(p.id, "duplicate_source", f"same source as {seen[key]}")
            else:
                seen[key] = p.id
                unique.append(p)
        return unique

    def _compile_and_run(self, programs: list[Program], report: DataReport) -> list[_Prepared]:
        """Steps 2-3: compiled programs with their outputs regenerated by the reference
        build. Given outputs that the reference build disagrees with are replaced, and
        the report notes which programs had them (a sign of a wrong dataset, not a drop)."""
        prepared: list[_Prepared] = []
        for p, outcome in zip(
            programs, self._map("compile+run", self._prepare, programs), strict=True
        ):
            if isinstance(outcome, ItemError):
                report.drop(p.id, outcome.reason, outcome.detail)
            else:
                prepared.append(outcome)
        given = {p.id: p for p in programs}
        changed = sorted(
            {
                item.program.id
                for item in prepared
                for new, old in zip(item.program.tests, given[item.program.id].tests, strict=False)
                if old.expected_stdout
                and compare_output(old.expected_stdout, new.expected_stdout, old.compare)
            }
        )
        if changed:
            report.note(
                f"{len(changed)} program(s) had given expected outputs that differ from the "
                f"reference build's (replaced): {', '.join(changed[:5])}"
                + (" ..." if len(changed) > 5 else "")
            )
        return prepared

    def _time_all(self, prepared: list[_Prepared], report: DataReport) -> list[_Prepared]:
        """Step 4, timing: one program at a time, so compiles and other timings do not
        disturb the clock."""
        timed = []
        for item, error in zip(
            prepared, self._map("timing", self._time, prepared, jobs=1), strict=True
        ):
            if error is not None:
                report.drop(item.program.id, error.reason, error.detail)
            else:
                timed.append(item)
        return timed

    def _select_by_speedup(self, timed: list[_Prepared], report: DataReport) -> list[_Prepared]:
        """Step 4, selection: the -O0 / -O3 speedup threshold, then the top N by speedup
        (ties by id, so the selection is deterministic)."""
        cfg = self.config
        selected = []
        for item in timed:
            if item.speedup < cfg.speedup_threshold:
                report.drop(
                    item.program.id,
                    "below_speedup",
                    f"{item.speedup:.2f}x < {cfg.speedup_threshold:g}x "
                    f"(-O0 {item.time_o0 * 1e3:.2f} ms, -O3 {item.time_o3 * 1e3:.2f} ms)",
                )
            else:
                selected.append(item)
        selected.sort(key=lambda it: (-it.speedup, it.program.id))
        if cfg.top_n is not None and len(selected) > cfg.top_n:
            for item in selected[cfg.top_n :]:
                report.drop(
                    item.program.id, "beyond_top_n", f"{item.speedup:.2f}x, top {cfg.top_n} kept"
                )
            selected = selected[: cfg.top_n]
        return selected

    def _check_o3(self, selected: list[_Prepared], report: DataReport) -> list[_Prepared]:
        """Step 5: the -O3 build must pass its own tests."""
        checked = []
        for item, failure in zip(
            selected, self._map("-O3 check", self._self_check, selected), strict=True
        ):
            if failure is None:
                checked.append(item)
            else:
                report.drop(item.program.id, "o3_fails_tests", failure)
        return checked

    def _fit_length(self, checked: list[_Prepared], report: DataReport) -> list[Program]:
        """Step 6: prompt + answer within `max_tokens`; the kept programs carry their
        problem, speedup, times and length in their metadata."""
        cfg = self.config
        final: list[Program] = []
        lengths = self._map("length", lambda it: self._length(it.program), checked)
        for item, length in zip(checked, lengths, strict=True):
            if isinstance(length, ItemError):
                report.drop(item.program.id, length.reason, length.detail)
                continue
            if cfg.max_tokens is not None and length > cfg.max_tokens:
                report.drop(
                    item.program.id,
                    "too_long",
                    f"{length} tokens > {cfg.max_tokens} ({self.tokens.description})",
                )
                continue
            meta: dict[str, Any] = dict(item.program.metadata)
            meta.update(
                problem=problem_of(item.program),
                speedup_o0_o3=round(item.speedup, 3),
                time_o0_s=item.time_o0,
                time_o3_s=item.time_o3,
                prompt_answer_tokens=length,
                tokens_estimated=self.tokens.estimated,
            )
            final.append(replace(item.program, metadata=tuple(sorted(meta.items()))))
        return final


def build_suite(
    pool: Suite | Iterable[Program],
    config: BuildConfig | None = None,
    *,
    toolchain: Toolchain | None = None,
    sandbox: Sandbox | None = None,
    timer: Timer | None = None,
    progress: bool = False,
    name: str | None = None,
) -> tuple[Suite, DataReport]:
    """Run the reference pipeline on a pool; see the module docstring for each step."""
    builder = Builder(
        config or BuildConfig(),
        toolchain=toolchain,
        sandbox=sandbox,
        timer=timer,
        progress=progress,
    )
    return builder.build(pool, name=name)
