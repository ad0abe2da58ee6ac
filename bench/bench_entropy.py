"""No answer can be precomputed, measured on the whole built-in suite: for every timed class
of every program, the declared entropy (from the spec), the distinct baseline outputs over
256 draws, and the least share of draws in which changing one field (or only the high half
of a 64-bit field) changed the output (asmopt.entropy, the measurement `suite verify`
makes).

Writes bench/results/entropy_builtin.md and the raw reports beside it
(entropy_builtin_raw.json), one per program, as `EntropyReport.to_dict` gives them.

    .venv/bin/python bench/bench_entropy.py [--draws 256] [--only ID ...] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_timing_common import RESULTS, environment, md_table, setup, write_result

from asmopt.entropy import DRAWS, FIELD_DRAWS, MIN_ENTROPY_BITS, EntropyReport, measure_entropy
from asmopt.parallel import parallel_map
from asmopt.programs import load_builtin_suite


def _provenance(paths: list[Path] | None, seconds: float) -> str:
    if paths:
        return f"Read from `asmopt suite verify --json` ({', '.join(p.name for p in paths)})"
    return f"Measured in {seconds / 60:.1f} min"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=DRAWS)
    ap.add_argument("--only", nargs="+", default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--from-verify", nargs="+", type=Path, default=None, metavar="JSON",
        help="read the measurements from `asmopt suite verify --json` outputs (the same "
        "measurement, made beside the -O0/-O3 and adequacy checks) instead of measuring",
    )
    args = ap.parse_args()
    start = time.monotonic()
    if args.from_verify:
        reports = [
            EntropyReport.from_dict(r)
            for path in args.from_verify
            for r in json.loads(path.read_text())["entropy"]
        ]
        args.draws = reports[0].draws if reports else args.draws
    else:
        toolchain, sandbox = setup()
        programs = load_builtin_suite().select(split="all", ids=args.only)
        reports = parallel_map(
            lambda p: measure_entropy(p, toolchain, sandbox, draws=args.draws),
            programs,
            jobs=args.jobs,
            desc="entropy",
            progress=True,
        )
    seconds = time.monotonic() - start
    rows = []
    for r in reports:
        bits = min(c.declared_bits for c in r.classes)
        distinct = sum(c.distinct for c in r.classes)
        draws = sum(c.draws for c in r.classes)
        shares = [v for c in r.classes for v in c.fields.values()]
        rows.append(
            (
                r.program_id,
                len(r.classes),
                f"{bits:.0f}",
                f"{distinct}/{draws}",
                f"{min(shares):.0%}" if shares else "-",
                "TABULABLE: " + "; ".join(r.problems()) if r.tabulable else "ok",
            )
        )
    tabulable = [r.program_id for r in reports if r.tabulable]
    text = "\n".join(
        [
            "# No answer can be precomputed: the built-in suite's timed classes",
            "",
            f"{len(reports)} programs, {sum(len(r.classes) for r in reports)} timed classes, "
            f"{args.draws} draws per class and {FIELD_DRAWS} per field; tabulable: "
            f"{len(tabulable)} ({', '.join(tabulable) or 'none'}). A class is tabulable below "
            f"{MIN_ENTROPY_BITS:g} declared bits, with any output collision, or with a field "
            "whose change changed the output in under half of its draws (asmopt.entropy).",
            "",
            _provenance(args.from_verify, seconds) + f" on {environment()}.",
            "Raw reports: `entropy_builtin_raw.json`; rerun: `.venv/bin/python "
            "bench/bench_entropy.py`.",
            "",
            md_table(
                ["program", "timed classes", "least declared bits", "distinct outputs",
                 "least field share", "verdict"],
                rows,
            ),
            "",
        ]
    )
    write_result("entropy_builtin.md", text)
    raw = RESULTS / "entropy_builtin_raw.json"
    raw.write_text(json.dumps([r.to_dict() for r in reports], indent=1) + "\n")
    print(text)
    return 1 if tabulable else 0


if __name__ == "__main__":
    raise SystemExit(main())
