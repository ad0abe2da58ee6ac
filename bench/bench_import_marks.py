"""Imported programs as their import marked them: fit for reward or not, and why, read from
the marks a suite stores (no run). Two imports of one corpus, before and after a change to
the learnt generators, side by side.

The corpus bench (bench_import_corpus.py) also checks adequacy mutants, identity and a
memorised answer under many gradings, which costs about as long as the import itself. This
reads only what `asmopt data import` stores in each program.json: the learnt levels, the
folded classes, the entropy mark (declared bits, measured outputs and fields, coverage, the
samples' limits, the drawn inputs per class a grading needs) and `is_reward_fit`'s verdict
with adequacy not checked (`--no-adequacy` imports),

    .venv/bin/python bench/bench_import_marks.py BEFORE_SUITE AFTER_SUITE --name NAME \\
        --sources SOURCES.md

and writes bench/results/NAME.md with the raw rows beside it (NAME_raw.json).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_import_corpus import fixed_size
from bench_timing_common import md_table, write_result

from asmopt.adequacy import is_reward_fit
from asmopt.entropy import read_mark
from asmopt.programs.model import Program
from asmopt.programs.suite_io import load_suite


def why_kind(why: str) -> str:
    """The first rule a program's verdict names, in a few words."""
    for needle, kind in (
        ("no input generator", "no generator"),
        ("bits of declared entropy", "a class under 64 declared bits"),
        ("once the fields", "the fields that matter under 64 bits"),
        ("basic blocks", "draws reach fewer blocks than the tests"),
        ("samples' limits", "an answer right only inside the samples' limits"),
        ("constant answer", "a constant answer passes"),
    ):
        if needle in why:
            return kind
    return why[:60]


def program_row(program: Program) -> dict[str, Any]:
    report = program.meta.get("inputs_report", {})
    fit, why = is_reward_fit(program)
    mark = read_mark(program)
    return {
        "program": program.id,
        "tests": len(program.tests),
        "levels": {c: e.get("level") for c, e in report.get("classes", {}).items()},
        "folded": sorted(report.get("folded") or {}),
        "fit": fit,
        "why": None if fit else why,
        "kind": None if fit else why_kind(why),
        "fixed_size": fixed_size(program),
        "coverage": mark.coverage if mark is not None else None,
        "per_class": mark.required_per_class() if mark is not None else None,
    }


def render(name: str, before: list[dict], after: list[dict], sources: str) -> str:
    was = {r["program"]: r for r in before}
    fit_before = sum(r["fit"] for r in before)
    fit_after = sum(r["fit"] for r in after)
    kinds = Counter(r["kind"] for r in after if not r["fit"])
    lines = [
        "# Imported programs as their import marked them",
        "",
        f"{len(after)} programs; **{fit_after} fit for reward** as the import marks them "
        f"(after), {fit_before} before. Read from each program's stored marks by "
        "`bench/bench_import_marks.py` (no run): the entropy mark (declared bits, measured "
        "outputs and fields, coverage, the samples' limits) and the learnt levels; adequacy "
        "mutants, identity gradings and the memorised answer of the corpus bench "
        "(bench_import_corpus.py) are not in it. Raw rows: "
        f"`{name}_raw.json`.",
        "",
        "Unfit (after), by the first rule named: "
        + "; ".join(f"{n} {k}" for k, n in kinds.most_common())
        + f". Timed classes of a fixed number of values (nothing drawn grows): "
        f"{sum(r['fixed_size'] for r in after if not r['fit'])} of the unfit.",
        "",
        md_table(
            ["program", "tests", "fit before", "fit after", "K", "folded", "blocks drawn / fixed",
             "why not (after)"],
            [
                [
                    r["program"], r["tests"],
                    "fit" if was.get(r["program"], {}).get("fit") else "-",
                    "fit" if r["fit"] else "-",
                    r["per_class"] or "-",
                    ", ".join(r["folded"]) or "-",
                    f"{r['coverage']['drawn']} / {r['coverage']['fixed']}"
                    if r["coverage"] else "-",
                    (r["why"] or "")[:160].replace("|", "/"),
                ]
                for r in after
            ],
        ),
        "",
        "Sources (not part of the project):",
        "",
        sources.strip(),
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", help="the corpus imported before the change")
    ap.add_argument("after", help="the corpus imported after it")
    ap.add_argument("--name", required=True, help="the report's file name (NAME.md)")
    ap.add_argument("--sources", type=Path, help="the corpus's list of sources, quoted")
    args = ap.parse_args()
    before = [program_row(p) for p in load_suite(args.before)]
    after = [program_row(p) for p in load_suite(args.after)]
    sources = args.sources.read_text() if args.sources else ""
    write_result(f"{args.name}.md", render(args.name, before, after, sources))
    raw = {"before": before, "after": after}
    write_result(f"{args.name}_raw.json", json.dumps(raw, indent=1, sort_keys=True) + "\n")
    print(f"{sum(r['fit'] for r in after)} of {len(after)} fit (before: "
          f"{sum(r['fit'] for r in before)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
