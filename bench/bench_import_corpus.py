"""Imported programs graded on drawn inputs: a corpus of real stdin-driven C solutions with
their sample tests, imported with learnt input generators, and what their draws grade.

The corpus is not part of the project (programs nobody here wrote, with their own
licences): import it first, then point this at the suite,

    asmopt data import dir POOL -o SUITE --no-adequacy
    .venv/bin/python bench/bench_import_corpus.py SUITE --sources POOL/../SOURCES.md

and it writes bench/results/import_corpus.md and the raw rows beside it
(import_corpus_raw.json): per program the tests, each learnt class's level, the declared
entropy, the distinct outputs and the most common output's share over 256 draws, the
drawn inputs per class a grading needs and the probability that a constant answer per
class passes one grading there, whether it is fit for reward and why not; and identity
(the -O3 baseline as the answer) checked under `--seeds` grading seeds at `--per-class`
drawn inputs per class, where any failure is a false one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_timing_common import RESULTS, environment, md_table, setup, write_result

from asmopt.adequacy import is_reward_fit
from asmopt.adequacy.check import check_adequacy
from asmopt.adequacy.fitness import marked_program
from asmopt.entropy import MARK_KEY, declared_problems, measure_entropy, read_mark
from asmopt.evaluate import check_candidate
from asmopt.fresh import FreshInputs, graded_per_class
from asmopt.measure.coverage import measure_coverage
from asmopt.programs.model import Program
from asmopt.programs.suite_io import load_suite


def _c_bytes(data: bytes) -> str:
    return '"' + "".join(f"\\x{b:02x}" for b in data) + '"'


def memorised_answer(program: Program) -> Program:
    """The attack every fit program must fail: the answer of every fixed test from memory
    (matched byte for byte), and the first test's answer for any other input."""
    rows = ",\n".join(
        f"{{{_c_bytes(t.stdin)}, {len(t.stdin)}, {_c_bytes(t.expected_stdout)}, "
        f"{len(t.expected_stdout)}}}"
        for t in program.tests
    )
    source = (
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
        "struct k { const char *in; size_t n; const char *out; size_t m; };\n"
        f"static const struct k K[] = {{\n{rows}\n}};\n"
        "int main(void) {\n"
        "  size_t cap = 1 << 16, len = 0, got; char *b = malloc(cap);\n"
        "  while (b && (got = fread(b + len, 1, cap - len, stdin)) > 0) {\n"
        "    len += got; if (len == cap) { cap *= 2; b = realloc(b, cap); } }\n"
        "  for (size_t i = 0; b && i < sizeof K / sizeof K[0]; i++)\n"
        "    if (K[i].n == len && memcmp(K[i].in, b, len) == 0) {\n"
        "      fwrite(K[i].out, 1, K[i].m, stdout); return 0; }\n"
        "  fwrite(K[0].out, 1, K[0].m, stdout); return 0;\n}\n"
    )
    return Program("memorised", source, program.tests)


def _gradings_passed(program: Program, asm: str, toolchain: Any, sandbox: Any, seeds: int,
                     per: int) -> list[dict]:
    """The gradings (one per seed) that `asm` does not fail."""
    passed = []
    for seed in range(seeds):
        fresh = FreshInputs(seed=seed, per_class=per)
        result = check_candidate(program, asm, toolchain, sandbox, fresh=fresh)
        if result.verdict == "pass":
            passed.append({"seed": seed})
    return passed


def program_row(program: Program, toolchain: Any, sandbox: Any, seeds: int, per: int) -> dict:
    """Everything the report shows of one program."""
    report = program.meta.get("inputs_report", {})
    stored = read_mark(program)
    coverage = stored.coverage if stored is not None else None
    if program.inputs is not None and not declared_problems(program) and (
        stored is None or coverage is None
    ):
        # Measured with this tree's rules where the import did not (what an import now
        # stores); a mark the import stored for the program as it is stands.
        meta = program.meta
        measured = measure_entropy(program, toolchain, sandbox)
        reached = measure_coverage(program, toolchain, sandbox)
        measured.coverage = coverage = reached.to_dict() if reached is not None else None
        meta[MARK_KEY] = measured.to_dict()
        program = replace(program, metadata=tuple(sorted(meta.items())))
    if program.inputs is not None and "adequacy" not in program.meta:
        # What `data import` marks unless --no-adequacy: probes and mutants, judged on
        # the fixed tests and drawn inputs.
        adequacy = check_adequacy(program, toolchain, sandbox, input_seed=0)
        program = marked_program(program, adequacy, toolchain.identity())
    fit, why = is_reward_fit(program)
    mark = read_mark(program)
    row: dict[str, Any] = {
        "program": program.id,
        "tests": len(program.tests),
        "dropped_tests": sorted(report.get("dropped_tests") or {}),
        "generator": program.inputs is not None,
        "reason": report.get("reason"),
        "levels": {c: e.get("level") for c, e in report.get("classes", {}).items()},
        # the checking classes kept (data/checking_classes.py): graded, never timed
        "checking": sorted(
            c for c in (program.inputs.class_names if program.inputs else ())
            if c not in {k for _, k in program.inputs.tests}
        ),
        "fit": fit,
        "why": None if fit else why,
        "folded": sorted(report.get("folded") or {}),
        "contract": contract(program),
        "fixed_size": fixed_size(program),
        "coverage": coverage,
    }
    if mark is not None:
        k = graded_per_class(program, 2)
        row["entropy"] = {
            "declared_bits": min(c.declared_bits for c in mark.classes),
            "distinct": [c.distinct for c in mark.classes],
            "draws": [c.draws for c in mark.classes],
            "top_share": max(c.top_count / c.draws for c in mark.classes if c.draws),
            "per_class": k,
            "default_pass": mark.default_pass_bound(k),
        }
    if program.inputs is not None:
        asm = toolchain.baseline_assembly(program)
        failures = []
        for seed in range(seeds):
            fresh = FreshInputs(seed=seed, per_class=per)
            result = check_candidate(program, asm, toolchain, sandbox, fresh=fresh)
            if result.verdict != "pass":
                failures.append({"seed": seed, "verdict": str(result.verdict),
                                 "message": result.message[:200]})
        row["identity_failures"] = failures
    if fit:
        # At the grading's own K (not `per`): what a reward check draws.
        attack = toolchain.baseline_assembly(memorised_answer(program))
        row["memorised_passed"] = _gradings_passed(
            program, attack, toolchain, sandbox, seeds * 4, 2
        )
    return row


def fixed_size(program: Program) -> bool:
    """Whether every timed class reads a fixed number of values (no count or length that
    is drawn): such an input carries only what its few values' ranges allow, and a
    program whose tests accept no wider ranges cannot be drawn past 64 bits at all."""
    if program.inputs is None:
        return False
    timed = {k for _, k in program.inputs.tests}

    def grows(node: object) -> bool:
        if isinstance(node, dict):
            return any(
                (key in ("count", "length") and isinstance(value, str)) or grows(value)
                for key, value in node.items()
            )
        return isinstance(node, list) and any(grows(v) for v in node)

    classes = program.inputs.to_dict()["classes"]
    return not any(grows(body) for name, body in classes.items() if name in timed)


def contract(program: Program) -> str:
    """The inferred input contract in a few words: what the learnt generator's rules
    draw (counts that govern what follows, sorted lists, permutations, keywords among
    the source's literals, strings and their alphabets, value ranges)."""
    if program.inputs is None:
        return "-"
    seen: Counter[str] = Counter()

    def walk(variables: dict) -> None:
        for rule in variables.values():
            if "ints" in rule:
                body = rule["ints"]
                lo, hi = body["range"]
                kind = ("permutation" if body.get("distinct") else
                        f"sorted {body['order']}" if body.get("order") else f"list [{lo}, {hi}]")
                seen[kind + (" (counted)" if isinstance(body["count"], str) else "")] += 1
            elif "repeat" in rule:
                seen["records (counted)" if isinstance(rule["repeat"]["count"], str)
                     else "records"] += 1
                walk(rule["repeat"]["vars"])
            elif "text" in rule:
                text = rule["text"]
                counted = isinstance(text["length"], str)
                seen[f"string over {len(text['alphabet'])} letters"
                     + (" (counted)" if counted else "")] += 1
            elif "choice" in rule:
                seen["choice of " + str(len(rule["choice"]))] += 1
            elif "int" in rule:
                seen["int"] += 1

    for klass in program.inputs.to_dict()["classes"].values():
        walk(klass["vars"])
    return ", ".join(f"{k} x{n}" if n > 1 else k for k, n in seen.most_common(4)) or "-"


def _cell(row: dict) -> list[object]:
    e = row.get("entropy")
    levels = Counter(v or "dropped" for v in row["levels"].values())
    return [
        row["program"],
        row["tests"],
        (", ".join(f"{n} {lv}" for lv, n in sorted(levels.items())) or row["reason"] or "-")
        + (f" ({len(row['folded'])} folded)" if row.get("folded") else "")
        + (f" + {len(row['checking'])} checking" if row.get("checking") else ""),
        f"{e['declared_bits']:.0f}" if e else "-",
        f"{sum(e['distinct'])}/{sum(e['draws'])}" if e else "-",
        f"{e['top_share']:.2f}" if e else "-",
        e["per_class"] if e else "-",
        f"{e['default_pass']:.1e}" if e else "-",
        _coverage_cell(row.get("coverage")),
        len(row.get("identity_failures", [])) if row["generator"] else "-",
        len(row["memorised_passed"]) if "memorised_passed" in row else "-",
        row["contract"],
        "fit" if row["fit"] else (row["why"] or "")[:90],
    ]


def _coverage_cell(coverage: dict | None) -> str:
    if coverage is None:
        return "-"
    missed = f" ({coverage['missed']} missed)" if coverage["missed"] else ""
    return f"{coverage['drawn']} / {coverage['fixed']}{missed}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", type=Path, help="a suite imported with `asmopt data import dir`")
    ap.add_argument("--sources", type=Path, default=None,
                    help="the corpus's list of sources, quoted in the report")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--per-class", type=int, default=16)
    ap.add_argument("--name", default="import_corpus",
                    help="the report's file name (NAME.md and NAME_raw.json): a part of the "
                         "corpus measured again keeps the whole corpus's report")
    args = ap.parse_args()
    start = time.monotonic()
    toolchain, sandbox = setup()
    suite = load_suite(args.suite)
    data_report = json.loads((args.suite / "data_report.json").read_text())
    rows = [program_row(p, toolchain, sandbox, args.seeds, args.per_class) for p in suite]
    seconds = time.monotonic() - start
    found = data_report["kept"] + data_report["dropped"]
    with_gen = sum(r["generator"] for r in rows)
    fit = sum(r["fit"] for r in rows)
    false_fail = sum(bool(r.get("identity_failures")) for r in rows)
    memorised = sum(len(r.get("memorised_passed", [])) for r in rows)
    small = [r["program"] for r in rows if not r["fit"] and r.get("fixed_size")
             and "bits of declared entropy" in (r["why"] or "")]
    can_carry = len(rows) - len(small)
    text = "\n".join([
        "# Imported programs graded on drawn inputs",
        "",
        f"{found} programs found, {len(rows)} imported, {with_gen} with a learnt generator, "
        f"**{fit} fit for reward ({fit / max(1, len(rows)):.0%})**; identity failed a "
        f"grading on {false_fail} program(s) ({args.seeds} grading seeds x "
        f"{args.per_class} drawn inputs per class each); a memorised answer of every fixed "
        f"test with the first test's answer as a default passed {memorised} of "
        f"{fit * args.seeds * 4} gradings of the fit programs (each at its own K).",
        "",
        f"{len(small)} of the unfit programs have learnt classes that read a fixed number "
        "of values (no count, list or string that grows) whose ranges, at the widest their "
        f"tests accept, carry under 64 bits ({', '.join(small) or '-'}). Where the problem "
        "itself reads a few numbers, no draw can keep an answer table out; where it reads a "
        "string or list whose length no number states, a generator that grew it could. "
        f"Of the {can_carry} other programs, **{fit} are fit "
        f"({fit / max(1, can_carry):.0%})**.",
        "",
        f"Measured in {seconds / 60:.1f} min on {environment()}. Raw rows: "
        f"`{args.name}_raw.json`. Coverage: distinct basic blocks the draws reach / those "
        "the fixed tests reach (measure/coverage.py; 16 draws per class), and how many of "
        "the fixed tests' blocks no draw reached; fewer than the fixed tests' makes a "
        "program unfit. Folded: classes of samples too small to carry 64 bits, whose tests "
        "stand for a sibling class (data/class_folding.py). Checking: classes at the "
        "sample's sizes or the low end of the ranges, graded beside the timed ones and "
        "never timed (data/checking_classes.py); bits, distinct outputs and top share are "
        "the timed classes', the constant's pass probability is over every graded class.",
        "",
        md_table(["program", "tests", "classes by level", "least declared bits",
                  "distinct outputs", "top output share", "K", "constant passes",
                  "blocks drawn / fixed", "identity failures", "memorised answer passed",
                  "inferred contract", "fit"],
                 [_cell(r) for r in rows]),
        "",
        "Sources (not part of the project):",
        "",
        args.sources.read_text() if args.sources and args.sources.exists() else "-",
        "",
    ])
    write_result(f"{args.name}.md", text)
    (RESULTS / f"{args.name}_raw.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(text.split("\n\n")[1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
