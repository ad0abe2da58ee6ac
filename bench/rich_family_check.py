"""The richer task family's design check: is every speedup it claims real on this machine?

For two training-split programs of each kernel of the suite a learning run would use
(`bench/speed_learning/rich_family.py`, 7 per kernel, seed 0; validation and test programs
are not touched), every subset of the edits the family calls correct is built as a witness
answer from the program's -O3 assembly and scored by the reward service, timed (robust
reward, CPU time interleaved with the -O3 baseline, 10 s per test); the `divq` substitution
on the wide-remainder kernel, which the family calls wrong, is checked to fail. Two rules
are scored too: `popcnt` at every call site (correct everywhere, never inlines) and
`popcnt` + `divq` at every call site (wrong on the wide kernel). Each answer's size as the
zero-context diff a policy would write is recorded beside it. No policy is trained here.

    .venv/bin/python bench/rich_family_check.py           # writes bench/results/rich_family.md
    .venv/bin/python bench/rich_family_check.py --render  # the report from its raw rows
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from speed_learning import rich_family, stats  # noqa: E402

RESULTS = HERE / "results" / "rich_family.md"


def subsets(edits: tuple[str, ...]) -> list[tuple[str, ...]]:
    return [c for k in range(1, len(edits) + 1) for c in combinations(edits, k)]


def score(program: Any, answer: str) -> dict[str, Any]:
    from asmopt.reward.service import ScoreConfig, score_one

    config = ScoreConfig(
        reward="robust",
        measure="time",
        edit_format="assembly",
        extract=False,
        timing={"budget_s": 10.0},
    )
    result = score_one(program, answer, None, config)
    return {
        "verdict": result.verdict,
        "speedup": result.speedup,
        "low": result.speedup_low,
        "high": result.speedup_high,
        "raw_speedup": result.raw_speedup,
        "message": result.message[:200],
    }


PER_KERNEL = 2  # training programs checked per kernel
RULES = (("popcnt",), ("popcnt", "divq"))


def diff_size(baseline: str, answer: str) -> dict[str, int]:
    """The answer as the policy's format would carry it: a zero-context unified diff."""
    from asmopt.train.data import fenced_diff

    diff = fenced_diff(baseline, answer, 0) or ""
    return {"diff_lines": len(diff.splitlines()), "diff_chars": len(diff)}


def check(work: Path) -> list[dict[str, Any]]:
    """Every witness of PER_KERNEL training programs per kernel, and the rules' answers,
    scored."""
    from asmopt.programs import load_suite
    from asmopt.toolchain import DEFAULT_O3_FLAGS, default_toolchain

    suite = load_suite(rich_family.write_suite(work / "suite", per_kernel=7, seed=0))
    train = {p.id for p in suite.select(split="train")}
    toolchain = default_toolchain()
    out = []
    seen: dict[str, int] = {}
    for family_program in rich_family.generate(per_kernel=7, seed=0):
        if family_program.id not in train or seen.get(family_program.kernel, 0) >= PER_KERNEL:
            continue
        seen[family_program.kernel] = seen.get(family_program.kernel, 0) + 1
        program = suite.get(family_program.id)
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        trials = [(s, "witness") for s in subsets(family_program.edits)]
        trials += [
            ((trap,), "wrong where used")
            for trap in rich_family.TRAPS.get(family_program.kernel, ())
        ]
        trials += [(rule, "rule") for rule in RULES]
        for edits, kind in trials:
            if kind == "rule":
                answer = rich_family.substitute(baseline, edits)
            else:
                answer = rich_family.witness(baseline, family_program, edits)
            measured = score(program, answer)
            out.append(
                {
                    "program": program.id,
                    "kernel": family_program.kernel,
                    "edits": list(edits),
                    "kind": kind,
                    **diff_size(baseline, answer),
                    **measured,
                }
            )
            print(json.dumps(out[-1]), file=sys.stderr)
    return out


def render(rows: list[dict[str, Any]], run: dict[str, Any]) -> str:
    lines = [
        "# Richer task family: composing speedups and traps, checked on real timing",
        "",
        f"- {run['started']}, commit {run['commit']}; command: "
        f"`.venv/bin/python bench/rich_family_check.py`; {run['seconds'] / 60:.1f} min.",
        f"- Family: `bench/speed_learning/rich_family.py` ({len(rich_family.KERNELS)} kernels x 7 "
        "programs, seed 0; "
        f"{PER_KERNEL} training-split programs of each kernel checked here, validation and "
        "test untouched). Answers are full assembly built from the program's -O3 assembly: "
        "`reuse` deletes the second of two back-to-back calls of a pure helper, `inline` "
        "pastes the helper's body at each call site left, the substitutions apply on top (to "
        "the pasted copies too). Scored by the reward service: correctness "
        "on the fixed and drawn inputs, then CPU time interleaved with the -O3 baseline "
        "(10 s per test); interval 98%.",
        "- Rule rows: `popcnt` (every `__popcountdi2` call), and `popcnt + divq` (every "
        "`__umodti3` call too), substituted at every call site, no inlining.",
        "- diff: the answer as a zero-context unified diff (what a policy writes), lines / "
        "characters.",
        "- The learning run on this family: `rich_learning_run.md`.",
        *unlisted(rows),
        "",
        "| program | edits | kind | verdict | speedup [interval] | diff |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        interval = (
            f"{r['speedup']:.3f} [{r['low']:.3f}, {r['high']:.3f}]"
            if r["speedup"] is not None and r["low"] is not None
            else "-"
        )
        size = f"{r['diff_lines']} / {r['diff_chars']}" if "diff_lines" in r else "-"
        lines.append(
            f"| {r['program']} | {' + '.join(r['edits'])} | {r['kind']} | {r['verdict']} | "
            f"{interval} | {size} |"
        )
    return "\n".join(lines + ["", "## Reading", "", *reading(rows)]) + "\n"


_value = stats.held_out_speedup  # an answer's value: its speedup when it passes, else 1.0


def unlisted(rows: list[dict[str, Any]]) -> list[str]:
    """A line for witness rows whose edits the family no longer lists for their kernel (a
    check timed before the family's lists changed): still correct answers, said as such."""
    old = [
        r
        for r in rows
        if r["kind"] == "witness"
        and not set(r["edits"]) <= set(rich_family.KERNELS[r["kernel"]][0])
    ]
    if not old:
        return []
    edits = sorted({e for r in old for e in r["edits"]} - {"popcnt", "reuse", "divq"})
    return [
        f"- {len(old)} witness rows time edit sets with {', '.join(edits)} where the family "
        "no longer lists it (the check ran before the list changed): correct answers all the "
        "same, so they count among the witnesses; the family leaves them out of its lists "
        "because their diffs are longer than a policy's answer."
    ]


def _faster(row: dict[str, Any]) -> bool:
    return row["verdict"] == "pass" and row["low"] is not None and row["low"] > 1.0


def reading(rows: list[dict[str, Any]]) -> list[str]:
    """Per program: each rule's value against the best correct witness; then what the data
    say about composition, the trap and the room above the best rule (all computed here)."""
    lines = []
    programs = list(dict.fromkeys(r["program"] for r in rows))
    rule_means: dict[str, list[float]] = {}
    best_values: list[float] = []
    composed = composed_of = 0
    for program in programs:
        mine = [r for r in rows if r["program"] == program]
        rules = [r for r in mine if r["kind"] == "rule"]
        witnesses = [r for r in mine if r["kind"] == "witness" and r["verdict"] == "pass"]
        best = max(witnesses, key=_value)
        best_values.append(_value(best))
        for r in rules:
            rule_means.setdefault(" + ".join(r["edits"]), []).append(_value(r))
        said = "; ".join(
            f"rule {' + '.join(r['edits'])} {_value(r):.3f} ({r['verdict']})" for r in rules
        )
        lines.append(
            f"- {program}: {said}; best correct witness {' + '.join(best['edits'])} "
            f"{_value(best):.3f}."
        )
        singles = [r for r in witnesses if len(r["edits"]) == 1]
        pairs = [r for r in witnesses if len(r["edits"]) > 1]
        if pairs and len(singles) > 1:
            composed_of += 1
            pair = max(pairs, key=lambda r: len(r["edits"]))
            composed += _faster(pair) and _value(pair) > max(_value(r) for r in singles)
    n = len(programs)
    best_mean = sum(best_values) / n
    summary = [
        f"- Mean over the {n} programs, failures counted 1.0: "
        + ", ".join(f"rule {k} {sum(v) / len(v):.3f}" for k, v in rule_means.items())
        + f"; best correct witness per program {best_mean:.3f} (the room a policy that "
        "picks per program has above the rules; an oracle, not a policy).",
        f"- Composition: in {composed} of {composed_of} programs with two or more faster "
        "edits, all of them together are significantly faster than the baseline and faster "
        "than any one alone.",
    ]
    for edit in sorted({e for trap in rich_family.TRAPS.values() for e in trap}):
        trap = [r for r in rows if r["kind"] == "wrong where used" and r["edits"] == [edit]]
        if trap:
            summary.append(
                f"- Trap: `{edit}` where the family calls it wrong: "
                f"{sum(r['verdict'] != 'pass' for r in trap)} of {len(trap)} answers fail "
                f"({', '.join(sorted({r['verdict'] for r in trap}))})."
            )
    divq = [r for r in rows if r["kind"] == "witness" and r["edits"] == ["divq"]]
    if divq:
        summary.append(
            f"- `divq` where it is correct: {sum(_faster(r) for r in divq)} of {len(divq)} "
            "answers significantly faster."
        )
    closing = (
        "- A few programs per kernel and one timed scoring per answer: a design check, not a "
        "learning result."
    )
    return [*lines, *summary, *repeat_agreement(rows), closing]


def repeat_agreement(rows: list[dict[str, Any]]) -> list[str]:
    """The `popcnt` witness and the `popcnt` rule are the same answer text: two independent
    scorings of one binary, which show how far apart two scorings land."""
    pairs = []
    for program in dict.fromkeys(r["program"] for r in rows):
        mine = [r for r in rows if r["program"] == program and r["edits"] == ["popcnt"]]
        if len(mine) == 2 and all(r["verdict"] == "pass" and r["low"] for r in mine):
            pairs.append((mine[0], mine[1]))
    if not pairs:
        return []
    apart = sum(a["low"] > b["high"] or b["low"] > a["high"] for a, b in pairs)
    worst = max(abs(a["speedup"] / b["speedup"] - 1) for a, b in pairs)
    return [
        f"- Two scorings of one answer (the `popcnt` witness and rule, identical text) in "
        f"{len(pairs)} programs: their 98% intervals do not overlap in {apart}; the largest "
        f"gap between the two speedups is {100 * worst:.1f}%. A scoring's interval covers "
        "the noise within that scoring, not the spread between scorings made minutes apart.",
    ]


def main() -> int:
    raw = RESULTS.with_suffix("")
    if "--render" in sys.argv[1:]:
        lines = (raw / "witnesses.jsonl").read_text(encoding="utf-8").splitlines()
        run = json.loads((raw / "run.json").read_text(encoding="utf-8"))
        RESULTS.write_text(render([json.loads(line) for line in lines], run), encoding="utf-8")
        return 0
    from asmopt.provenance import git_commit

    start = time.monotonic()
    run = {"started": time.strftime("%Y-%m-%d %H:%M"), "commit": git_commit()}
    with tempfile.TemporaryDirectory() as tmp:
        rows = check(Path(tmp))
    run["seconds"] = time.monotonic() - start
    raw.mkdir(parents=True, exist_ok=True)
    (raw / "witnesses.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    (raw / "run.json").write_text(json.dumps(run) + "\n", encoding="utf-8")
    RESULTS.write_text(render(rows, run), encoding="utf-8")
    print(RESULTS.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
