"""Reward throughput: an RL-shaped batch scored through the reward service, with hyperfine's
method on the same answers in the same run.

The batch: 16 built-in programs (training split), four answers each, 64 in all:

* wrong: `main` returns at once (prints nothing), so the correctness check rejects it;
* near-copy: the -O3 assembly with one `nop` at the start of `main` (not a copy after
  canonicalisation, so it is timed: an A/A pair of equivalent, non-identical binaries);
* slower: the -O3 assembly with a spin loop at the start of `main` worth SLOWER of the
  program's shortest test's CPU time;
* faster: the plain -O3 assembly, scored against a baseline that carries a spin loop worth
  FASTER[k] of the shortest test (k cycles over the programs), so the answer is truly
  faster by a known amount (per test: (t + spin) / t, from the measured run times; the
  program's known ratio is their mean).

It is scored twice through `RewardService.score_batch` (two workers, one timing core): with
the reward's default "decision" timing precision, and with "target" precision (every test
to +-2%, what the service did before decisions existed). Reported: answers per
timing-core-hour, the split of time (check = extraction + build + correctness runs on the
general cores; timing; waiting for the core), the A/A false-positive rate (near-copies
called significantly faster, per program and per test), the sensitivity on the known
answers, and hyperfine's reference method (3 warm-ups + 10 runs per binary and test,
sequential) on the same correct answers: its CPU time beside our timing-core time.

    .venv/bin/python bench/bench_reward_throughput.py [--quick] [--programs N]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_timing_common import (
    RESULTS,
    environment,
    md_table,
    reference,
    setup,
    spin_assembly,
    spin_pair,
    write_result,
)

from asmopt.measure.timing import SandboxSpread, default_core_lock, machine_spread
from asmopt.programs import load_builtin_suite
from asmopt.reward.service import REWARD_TIMING, RewardService, ScoreConfig, ScoreRequest

SLOWER = 0.10
FASTER = (0.05, 0.10, 0.20)
KINDS = ("wrong", "near_copy", "slower", "faster")
# Test lengths (the baseline's run, ms) whose pairs are set against the floor separately:
# a short test's per-pair noise is larger, so it needs more pairs for the same decision.
LENGTH_CLASSES = ((0.0, 2.0, "under 2 ms"), (2.0, 20.0, "2-20 ms"), (20.0, math.inf, "20 ms up"))
# The engine reports 98% two-sided intervals; a design that knew the noise would use z.
FLOOR_Z = statistics.NormalDist().inv_cdf(0.99)


def pairs_floor(pair_sd: float, ratio: float, target: float, precision: str) -> int:
    """The statistical floor of one test: the fewest pairs a fixed-size design that knew the
    per-pair noise and the true ratio would need for the same stop. Target precision:
    a 98% interval of +-target, n = (z * sd / log(1 + target))^2. Decision precision: that,
    or an interval that excludes 1.0, whichever comes first, so the half-width needed is the
    larger of log(1 + target) and |log ratio|. At least 2 (a spread needs two pairs). It
    leaves out what the engine must also pay for: the rounds that cover the between-sandbox
    spread, warm-ups, and the trimmed mean's small loss of efficiency."""
    need = math.log1p(target)
    if precision == "decision":
        need = max(need, abs(math.log(ratio)))
    return max(2, math.ceil((FLOOR_Z * pair_sd / need) ** 2))


def pairs_floor_with_spread(
    pair_sd: float, ratio: float, target: float, precision: str, tau: float
) -> int:
    """The floor of one test for a design that must also cover the between-sandbox spread
    `tau` (the machine's, at the test's run length), as any valid interval must: R rounds of
    n pairs give a standard error sqrt((tau^2 + sd^2 / n) / R), so the fewest pairs R * n
    with R >= 2 and n >= 2 (one sandbox says nothing of what differs between sandboxes;
    a round's spread needs two pairs) whose error meets the same half-width as
    `pairs_floor`'s."""
    need = math.log1p(target)
    if precision == "decision":
        need = max(need, abs(math.log(ratio)))
    best = math.inf
    for rounds in range(2, 1_000):
        room = (need / FLOOR_Z) ** 2 * rounds - tau**2
        if room <= 0:
            continue
        per_round = max(2, math.ceil(pair_sd**2 / room))
        best = min(best, rounds * per_round)
        if per_round == 2:  # more rounds only add pairs from here on
            break
    return int(best)


# The stops a floor is set against: the test got what its precision asks. A test that ran
# into a limit (its pairs, rounds or budget) got less, so its pairs are counted apart.
REACHED = ("decided", "target")


def floor_rows(raw: dict[str, Any], target: float) -> list[list[str]]:
    """Per precision and test length class: the tests that reached their stop, their pairs
    used, the floor, used / floor; the tests that stopped on a limit instead, and those the
    program's settled verdict stopped (decisions.program_decided: set against the program's
    floor, `program_floor_rows`)."""
    rows = []
    spread = SandboxSpread.from_dict(raw["spread"]) if raw.get("spread") else None
    for precision, run in raw["runs"].items():
        for low, high, name in LENGTH_CLASSES:
            used = floor = spread_floor = tests = limited = by_program = 0
            for answer in run["per_answer"]:
                for t in answer["cost"].get("per_test", []):
                    if t["pair_sd"] is None or t["base_ms"] is None:
                        continue
                    if not low <= t["base_ms"] < high:
                        continue
                    if t["stopped"] == "program":
                        by_program += 1
                        continue
                    if t["stopped"] not in REACHED:
                        limited += 1
                        continue
                    tests += 1
                    used += t["pairs"]
                    floor += pairs_floor(t["pair_sd"], t["ratio"], target, precision)
                    tau = spread.tau(t["base_ms"] / 1000.0) if spread else 0.0
                    spread_floor += pairs_floor_with_spread(
                        t["pair_sd"], t["ratio"], target, precision, tau
                    )
            rows.append(
                [
                    precision,
                    name,
                    str(tests),
                    str(used),
                    str(floor),
                    f"**{used / floor:.2f}x**" if floor else "-",
                    str(spread_floor) if spread else "-",
                    f"{used / spread_floor:.2f}x" if spread and spread_floor else "-",
                    str(limited),
                    str(by_program),
                ]
            )
    return rows


def program_pairs_floor(tests: list[dict[str, Any]], target: float) -> int:
    """The statistical floor of one answer under the decision precision: the fewest pairs,
    over all its tests, a fixed design that knew each test's per-pair noise sd_i and ratio
    r_i would need for the reward's decision on the mean of the ratios m. Its variance is
    sum(r_i^2 sd_i^2 / n_i) / k^2 to first order; the interval must exclude 1.0 or be
    within +-target of m, so the half-width needed is H = max(target * m, |m - 1|); the
    allocation n_i proportional to r_i sd_i minimises the total, (z sum(r_i sd_i) / (k H))^2,
    and each test takes at least 2 pairs."""
    k = len(tests)
    mean = sum(t["ratio"] for t in tests) / k
    need = max(target * mean, abs(mean - 1.0))
    weights = [t["ratio"] * t["pair_sd"] for t in tests]
    if sum(weights) == 0:
        return 2 * k
    total = (FLOOR_Z * sum(weights) / (k * need)) ** 2
    return sum(max(2, math.ceil(total * w / sum(weights))) for w in weights)


# The fewest pairs a valid interval rests on: two rounds (sandboxes) of two pairs.
LEAST_PAIRS = 4


def pair_seconds(test: dict[str, Any]) -> float:
    """Seconds of runs one pair of a test takes: the baseline's run and the answer's
    (the baseline's over the ratio)."""
    return test["base_ms"] / 1000.0 * (1.0 + 1.0 / test["ratio"])


def program_seconds_floor(tests: list[dict[str, Any]], target: float) -> float:
    """The floor of one answer in seconds of runs, for the same decision as
    `program_pairs_floor`: a fixed design that also knew each test's cost a pair c_i
    spends the least with n_i proportional to r_i sd_i / sqrt(c_i), which costs
    (z sum(r_i sd_i sqrt(c_i)) / (k H))^2 seconds; each test takes at least LEAST_PAIRS,
    the least a valid interval rests on (the engine now plans by cost the same way)."""
    k = len(tests)
    mean = sum(t["ratio"] for t in tests) / k
    need = max(target * mean, abs(mean - 1.0))
    costs = [pair_seconds(t) for t in tests]
    weights = [t["ratio"] * t["pair_sd"] / math.sqrt(c) for t, c in zip(tests, costs, strict=True)]
    scale = (FLOOR_Z / (k * need)) ** 2 * sum(
        t["ratio"] * t["pair_sd"] * math.sqrt(c) for t, c in zip(tests, costs, strict=True)
    )
    return sum(c * max(LEAST_PAIRS, scale * w) for c, w in zip(costs, weights, strict=True))


def program_floor_rows(raw: dict[str, Any], target: float) -> list[list[str]]:
    """Decision precision, per kind of timed answer: the answers set against their
    program's floor (every test with its noise measured), their pairs, the floor, and
    used / floor."""
    rows = []
    run = raw["runs"].get("decision")
    if run is None:
        return rows
    for kind in KINDS[1:]:
        answers = used = floor = 0
        used_s = floor_s = 0.0
        for answer in run["per_answer"]:
            tests = answer["cost"].get("per_test", []) if answer.get("cost") else []
            if answer["kind"] != kind or not tests:
                continue
            if any(t["pair_sd"] is None or t["base_ms"] is None for t in tests):
                continue
            answers += 1
            used += sum(t["pairs"] for t in tests)
            floor += program_pairs_floor(tests, target)
            used_s += sum(t["pairs"] * pair_seconds(t) for t in tests)
            floor_s += program_seconds_floor(tests, target)
        share = f"**{used / floor:.2f}x**" if floor else "-"
        share_s = f"**{used_s / floor_s:.2f}x**" if floor_s else "-"
        rows.append(
            [kind, str(answers), str(used), str(floor), share, f"{used_s:.1f} s",
             f"{floor_s:.1f} s", share_s]
        )
    return rows


def _fence(asm: str) -> str:
    return f"```asm\n{asm}\n```"


def _wrong(asm: str) -> str:
    return asm.replace("\nmain:\n", "\nmain:\n\txorl\t%eax, %eax\n\tret\n", 1)


def _near_copy(asm: str) -> str:
    return asm.replace("\nmain:\n", "\nmain:\n\tnop\n", 1)


def _test_costs(toolchain: Any, sandbox: Any, program: Any, asm: str) -> tuple[float, list[float]]:
    """(seconds per spin iteration, each test's median CPU seconds) for this program."""

    def cpus(assembly: str) -> list[float]:
        build = toolchain.assemble_and_link(assembly, program.ldflags)
        assert build.ok and build.output is not None, build.message
        out = []
        for test in program.tests:
            runs = [
                sandbox.run_program(build.output, argv=test.argv, stdin=test.stdin).cpu_time_s
                for _ in range(5)
            ]
            out.append(statistics.median(runs))
        return out

    plain = cpus(asm)
    n = 20_000_000
    spun = cpus(spin_assembly(asm, n))
    per_iter = statistics.median(s - p for s, p in zip(spun, plain, strict=True)) / n
    return max(1e-10, per_iter), plain


def build_batch(toolchain: Any, sandbox: Any, programs: list[Any]) -> list[dict[str, Any]]:
    """Four answers per program. A spin loop adds the same seconds to every test, so it is
    sized to a share of the program's SHORTEST test (no test is changed by more), and the
    known program-level ratio (the mean of per-test ratios, the reward's statistic) is
    computed from the measured test times."""
    answers = []
    for k, program in enumerate(programs):
        asm = toolchain.baseline_assembly(program)
        per_iter, times = _test_costs(toolchain, sandbox, program, asm)
        shortest = min(times)
        slow_s = SLOWER * shortest
        fast = FASTER[k % len(FASTER)]
        fast_s = fast * shortest
        slower_ratio = statistics.mean(t / (t + slow_s) for t in times)
        faster_ratio = statistics.mean((t + fast_s) / t for t in times)
        common = {"program": program, "test_ms": [round(t * 1e3, 3) for t in times]}
        answers += [
            {**common, "kind": "wrong", "completion": _fence(_wrong(asm)), "baseline": asm},
            {
                **common,
                "kind": "near_copy",
                "completion": _fence(_near_copy(asm)),
                "baseline": asm,
                "expected": 1.0,
            },
            {  # both sides carry the loop (one layout); the answer runs it longer
                **common,
                "kind": "slower",
                "completion": _fence(spin_pair(asm, int(slow_s / per_iter))[1]),
                "baseline": spin_pair(asm, 0)[0],
                "expected": slower_ratio,
                "shortest_test_change": 1.0 / (1.0 + SLOWER),
            },
            {
                **common,
                "kind": "faster",
                "completion": _fence(spin_pair(asm, 0)[0]),
                "baseline": spin_pair(asm, int(fast_s / per_iter))[1],
                "expected": faster_ratio,
                "shortest_test_change": 1.0 + fast,
            },
        ]
    return answers


def score(answers: list[dict[str, Any]], precision: str) -> tuple[list[Any], float]:
    config = ScoreConfig(timing=replace(REWARD_TIMING, precision=precision))  # type: ignore[arg-type]
    requests = [ScoreRequest(a["program"], a["completion"], a["baseline"]) for a in answers]
    start = time.monotonic()
    with RewardService(config, workers=2) as service:
        results = service.score_batch(requests)
    return results, time.monotonic() - start


def reference_cost(
    toolchain: Any, answers: list[dict[str, Any]]
) -> tuple[float, list[float | None]]:
    """hyperfine 3+10 on every correct answer, sequentially: its CPU seconds (hyperfine and
    the processes it started) and each answer's reference ratio."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    ratios: list[float | None] = []
    for a in answers:
        if a["kind"] == "wrong":
            ratios.append(None)
            continue
        program = a["program"]
        base = toolchain.assemble_and_link(a["baseline"], program.ldflags).output
        cand_asm = a["completion"].removeprefix("```asm\n").removesuffix("\n```")
        cand = toolchain.assemble_and_link(cand_asm, program.ldflags).output
        ratios.append(reference(base, cand, program.tests, workers=1).ratio)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, ratios


def summarise(answers: list[dict[str, Any]], results: list[Any], wall_s: float) -> dict[str, Any]:
    timed = [r for r in results if r.cost.get("timing_s") is not None]
    core_s = sum(r.cost.get("timing_s", 0.0) for r in results)
    check_s = sum(r.cost.get("check_s", 0.0) for r in results)
    waited_s = sum(r.cost.get("waited_s", 0.0) for r in results)
    by_kind: dict[str, list[Any]] = {k: [] for k in KINDS}
    for a, r in zip(answers, results, strict=True):
        by_kind[a["kind"]].append((a, r))
    copies = by_kind["near_copy"]
    copy_faster = sum((r.speedup_low or 0) > 1.0 for _, r in copies)
    copy_tests = sum(r.cost.get("tests", 0) for _, r in copies)
    copy_tests_faster = sum(r.cost.get("tests_faster", 0) for _, r in copies)
    found = {
        "slower": sum((r.speedup_high or 2) < 1.0 for _, r in by_kind["slower"]),
        "faster": sum((r.speedup_low or 0) > 1.0 for _, r in by_kind["faster"]),
    }
    wrong_sign = sum((r.speedup_low or 0) > 1.0 for _, r in by_kind["slower"]) + sum(
        (r.speedup_high or 2) < 1.0 for _, r in by_kind["faster"]
    )
    return {
        "answers": len(results),
        "timed": len(timed),
        "wall_s": wall_s,
        "core_s": core_s,
        "check_s": check_s,
        "waited_s": waited_s,
        "answers_per_core_hour": len(results) / (core_s / 3600.0) if core_s > 0 else math.inf,
        "timing_s_by_kind": {
            k: sum(r.cost.get("timing_s", 0.0) for _, r in v) for k, v in by_kind.items()
        },
        "verdicts": {k: sorted({r.verdict for _, r in v}) for k, v in by_kind.items()},
        "copy_faster_programs": copy_faster,
        "copy_tests": copy_tests,
        "copy_tests_faster": copy_tests_faster,
        "copies": len(copies),
        "found": found,
        "wrong_sign": wrong_sign,
        "per_answer": [
            {
                "program": a["program"].id,
                "kind": a["kind"],
                "expected": a.get("expected"),
                "verdict": r.verdict,
                "speedup": r.raw_speedup,
                "low": r.speedup_low,
                "high": r.speedup_high,
                "reward": r.reward,
                "cost": r.cost,
            }
            for a, r in zip(answers, results, strict=True)
        ],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="4 programs (16 answers)")
    ap.add_argument("--programs", type=int, default=16)
    ap.add_argument("--render", metavar="RAW_JSON", help="re-render a report from its raw data")
    args = ap.parse_args()
    if args.render:
        raw = json.loads(Path(args.render).read_text())
        text = render(raw, raw["machine_before"], raw["machine_after"])
        write_result(Path(args.render).name.replace("_raw.json", ".md"), text)
        print(text)
        return 0
    n = 4 if args.quick else args.programs
    toolchain, sandbox = setup()
    suite = load_builtin_suite()
    programs = suite.select(split="train")[:n]
    began = time.monotonic()
    env_before = environment()
    spread = machine_spread(sandbox, default_core_lock())
    answers = build_batch(toolchain, sandbox, programs)
    runs = {}
    for precision in ("decision", "target"):
        results, wall = score(answers, precision)
        runs[precision] = summarise(answers, results, wall)
    ref_cpu, ref_ratios = reference_cost(toolchain, answers)
    env_after = environment()
    timed_answers = sum(a["kind"] != "wrong" for a in answers)
    raw = {
        "command": "bench/bench_reward_throughput.py" + (" --quick" if args.quick else ""),
        "programs": [p.id for p in programs],
        "spread": spread.to_dict(),
        "runs": runs,
        "reference": {"cpu_s": ref_cpu, "ratios": ref_ratios, "answers": timed_answers},
        "seconds": time.monotonic() - began,
        "machine_before": env_before,
        "machine_after": env_after,
    }
    name = "reward_throughput" + ("_quick" if args.quick else "")
    (RESULTS / f"{name}_raw.json").write_text(json.dumps(raw, indent=1, default=str))
    write_result(f"{name}.md", render(raw, env_before, env_after))
    print(render(raw, env_before, env_after))
    return 0


def render(raw: dict[str, Any], env_before: str, env_after: str) -> str:
    """The throughput report (Markdown) from the raw figures.

    Long because it writes the document's sections top to bottom, in the order a reader
    meets them, so the whole layout reads in one place."""
    ref = raw["reference"]
    ref_per = ref["cpu_s"] / ref["answers"]
    rows = []
    for precision, r in raw["runs"].items():
        per = r["core_s"] / max(1, r["timed"])
        rows.append(
            [
                precision,
                f"{r['wall_s']:.0f} s",
                f"{r['check_s']:.0f} s",
                f"{r['core_s']:.0f} s",
                f"{r['waited_s']:.0f} s",
                f"{r['answers_per_core_hour']:.0f}",
                f"{per:.2f} s",
                f"**{per / ref_per:.2f}x**",
                f"{r['copy_faster_programs']}/{r['copies']} programs, "
                f"{r['copy_tests_faster']}/{r['copy_tests']} tests",
                f"{r['found']['faster']}/{r['copies']} faster, "
                f"{r['found']['slower']}/{r['copies']} slower, {r['wrong_sign']} wrong sign",
            ]
        )
    dec, tgt = raw["runs"]["decision"], raw["runs"]["target"]
    gain = dec["answers_per_core_hour"] / tgt["answers_per_core_hour"]
    kinds = md_table(
        ["precision", *KINDS],
        [
            [p, *(f"{r['timing_s_by_kind'][k]:.0f} s" for k in KINDS)]
            for p, r in raw["runs"].items()
        ],
    )
    lines = [
        f"# Reward throughput: {4 * len(raw['programs'])} RL-shaped answers through the reward "
        "service",
        "",
        f"Command: `.venv/bin/python {raw['command']}` ({raw['seconds']:.0f} s in all).",
        f"Machine before: {env_before}.",
        f"Machine after: {env_after}.",
        f"Programs ({len(raw['programs'])}, training split): {', '.join(raw['programs'])}.",
        f"Between-sandbox spread used: {raw['spread']['source']}; "
        + ", ".join(f"{t * 100:.2f}% at {s * 1e3:.2g} ms" for s, t in raw["spread"]["points"])
        + ".",
        "",
        "Per program: a wrong answer, a near-copy (one `nop`), an answer slower by 10% of its "
        "shortest test (a spin loop), and one truly faster by 5%, 10% or 20% of its shortest "
        "test (the baseline carries the spin loop; longer tests change less, and each "
        "answer's known program ratio is computed from the measured test times). "
        "Two service workers, one timing core. Core time is the timing core's seconds charged "
        "to the answers; the reference is hyperfine 3 warm-ups + 10 runs per binary and test, "
        "run sequentially on the same correct answers, its CPU time counted from rusage.",
        "",
        md_table(
            [
                "precision",
                "wall",
                "check",
                "timing core",
                "waited",
                "answers / core-hour",
                "core per timed answer",
                "vs hyperfine CPU",
                "near-copies called faster",
                "known answers",
            ],
            rows,
        ),
        "",
        f"hyperfine's method: {ref['cpu_s']:.0f} s of CPU for {ref['answers']} answers "
        f"({ref_per:.2f} s each).",
        "",
        f"Throughput, decision over target precision (same code, same batch, same run): "
        f"**{gain:.2f}x**.",
        "",
        "**Scaling (on paper; measured here with one timing core).** Timing is exclusive per "
        "physical core (a machine-wide lock per core) and is the only work that needs one; "
        "checks (build, correctness runs) run on the other cores and need "
        f"{dec['check_s'] / max(1.0, dec['core_s']):.2f} general-core seconds per timing-core "
        "second in this batch (their wall time, which on 2 cores includes waiting for the "
        "one general core). A machine with N timing cores and M general cores so scores "
        "about min(N / core_s, M / check_s) answers per second for this mix, where core_s "
        "and check_s are the per-answer figures above; the reward service's pool runs that "
        "many workers. Across Ray nodes each node has its own cores and its own locks (the "
        "lock files are machine-local) and calibrates its own between-sandbox spread, so "
        "throughput adds up over nodes; what does not scale is a batch's slowest answer "
        "(its `batch_finish_s`), which bounds a synchronous PPO step.",
        "",
        "Timing-core seconds by kind of answer:",
        "",
        kinds,
        "",
        *_floor_section(raw),
        "Known answers, decision precision (the reward's statistic: the mean of per-test "
        "ratios, with its interval; `called` is what the reward sees):",
        "",
        md_table(
            ["program", "answer", "known ratio", "measured", "interval", "called"],
            [
                [
                    a["program"],
                    a["kind"],
                    f"{a['expected']:.3f}",
                    f"{a['speedup']:.3f}" if a["speedup"] else "-",
                    f"[{a['low']:.3f}, {a['high']:.3f}]" if a["low"] else "-",
                    _called(a),
                ]
                for a in raw["runs"]["decision"]["per_answer"]
                if a["kind"] in ("slower", "faster", "near_copy")
            ],
        ),
        "",
        "Raw data: `"
        + ("reward_throughput_quick" if "quick" in raw["command"] else "reward_throughput")
        + "_raw.json`.",
    ]
    return "\n".join(lines) + "\n"


def _floor_section(raw: dict[str, Any]) -> list[str]:
    """The pairs-against-floor paragraph and table (none for a report made before the
    per-test rows were kept)."""
    target = REWARD_TIMING.target_half_width
    rows = floor_rows(raw, target)
    if not any(r[2] != "0" for r in rows):
        return []
    return [
        "**Pairs against the statistical floor**, per test length: the pairs the engine used "
        "and the fewest a fixed-size design would need that knew each test's per-pair noise "
        "(the standard deviation of its log-ratios within a sandbox, measured) and its "
        f"ratio: (z * sd / h)^2 with z = {FLOOR_Z:.3f} (98% two-sided) and h = "
        f"log(1 + {target:g}), or under decision precision the larger of that and |log "
        "ratio| (an interval that excludes 1.0 decides). The floor leaves out what the "
        "engine also pays for: the rounds that cover the between-sandbox spread, warm-ups, "
        "and the trimmed mean's small loss of efficiency; the goal is at most 1.2x. Only "
        "tests that reached their stop (decided, or at the target) are set against it; a "
        "test that ran into its pairs, rounds or budget got less than the floor buys. The "
        "floor with the spread is the same fixed design made to cover the machine's "
        "between-sandbox spread at the test's run length, as a valid interval must: at "
        "least 2 rounds of 2 pairs, R rounds of n pairs erring by sqrt((tau^2 + sd^2/n)/R) "
        "(pairs_floor_with_spread).",
        "",
        md_table(
            [
                "precision",
                "test length",
                "tests that reached their stop",
                "their pairs",
                "floor",
                "used/floor",
                "floor with the spread",
                "used/that floor",
                "tests stopped on a limit",
                "tests stopped by the program",
            ],
            rows,
        ),
        "",
        *_program_floor_section(raw, target),
    ]


def _program_floor_section(raw: dict[str, Any], target: float) -> list[str]:
    """The answer-level floor of the decision precision (none before it was recorded)."""
    rows = program_floor_rows(raw, target)
    if not any(r[1] != "0" for r in rows):
        return []
    return [
        "**Pairs against the answer's floor** (decision precision): the reward reads the "
        "mean of an answer's test ratios, and the engine stops an answer's unfinished tests "
        "once both program statistics are settled (`stopped` = program). The floor of an "
        "answer is the fewest pairs over all its tests that a fixed design knowing each "
        "test's noise and ratio would need for that decision on the mean m: half-width "
        f"max({target:g} m, |m - 1|) at z = {FLOOR_Z:.3f}, pairs allocated to tests in "
        "proportion to ratio x noise (bench_reward_throughput.program_pairs_floor). Like "
        "the per-test floor it leaves out the between-sandbox rounds. Since pairs of a 1 ms "
        "test and of a 150 ms test cost differently, the same is also set out in seconds "
        "of runs (a pair's run seconds: the baseline's run and the answer's): the engine's "
        "pairs at each test's cost against the least a design that also knew each test's "
        "cost would spend, n_i proportional to ratio x noise / sqrt(cost), each test at "
        f"least {LEAST_PAIRS} pairs, two rounds of two, the least a valid interval rests on "
        "(program_seconds_floor).",
        "",
        md_table(
            ["answer", "answers", "their pairs", "floor", "used/floor", "their run seconds",
             "floor in seconds", "used/floor (seconds)"],
            rows,
        ),
        "",
    ]


def _called(a: dict[str, Any]) -> str:
    if a["low"] is None:
        return a["verdict"]
    if a["low"] > 1.0:
        return "faster"
    if a["high"] < 1.0:
        return "slower"
    return "not different"


if __name__ == "__main__":
    raise SystemExit(main())
