"""Answers right only inside the sample's limits, graded on the fit programs of an imported
corpus: do the drawn inputs reach past what the sample shows?

For every program the corpus bench found fit (bench/results/import_corpus_raw.json), each
attack is the program itself behind a wrapper that first bends its stdin to the limits its
fixed tests show, so it answers exactly as the program does wherever an input stays inside
them (every fixed test does) and differently (in general) wherever one does not:

* `range`: every integer clamped to the range of the fixed tests' integers (an answer
  that assumes the values the samples show);
* `prefix`: every word (a token that is not a number) cut to the fixed tests' longest
  word (an answer that compares only a prefix of a string);
* `size`: the input cut after as many tokens as the largest fixed test has (an answer
  that reads only as much as the samples hold: their n, their number of test cases).

Each attack must pass the program's fixed tests (it is the program there, so the wrapper
works) and fail every grading on drawn inputs. An attack that passes a grading is either
a gap in the drawn inputs or an attack that changes nothing the program reads (a program
with no integers is not touched by `range`); the row says which by the share of 64 drawn
inputs the wrapper's rule changes.

    asmopt data import dir POOL -o SUITE --no-adequacy
    .venv/bin/python bench/bench_import_attacks.py SUITE

writes bench/results/import_attacks.md and import_attacks_raw.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_timing_common import RESULTS, environment, md_table, setup, write_result

from asmopt.evaluate import check_candidate
from asmopt.fresh import FreshInputs, graded_per_class
from asmopt.programs.generators import derive_seed
from asmopt.programs.model import Program
from asmopt.programs.suite_io import load_suite
from asmopt.sample_limits import ATTACKS, SampleLimits, bend

# The wrapper, put before the program's source: a constructor that runs before its main,
# reads all of stdin, bends it, and leaves the result as the program's stdin (a temporary
# file on descriptor 0, so FILE and read(2) readers see it alike). The program's own main
# is untouched.
WRAPPER = r"""#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static long long asmopt_lo = LO, asmopt_hi = HI;
static size_t asmopt_word = WORD, asmopt_tokens = TOKENS;
static int asmopt_kind = KIND; /* 0 range, 1 prefix, 2 size */
static int asmopt_is_int(const char *s, size_t n) {
    size_t i = (n > 1 && s[0] == '-') ? 1 : 0;
    if (i == n) return 0;
    for (; i < n; i++) if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}
static int asmopt_is_number(const char *s, size_t n) {
    size_t i = (n > 1 && s[0] == '-') ? 1 : 0, dots = 0;
    if (i == n || s[i] == '.' || s[n - 1] == '.') return 0;
    for (; i < n; i++) {
        if (s[i] == '.') { if (++dots > 1) return 0; }
        else if (s[i] < '0' || s[i] > '9') return 0;
    }
    return 1;
}
static int asmopt_space(char c) {
    return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}
static size_t asmopt_bend(const char *in, size_t n, char *out) {
    size_t m = 0, i = 0, tokens = 0;
    while (i < n) {
        if (asmopt_space(in[i])) { out[m++] = in[i++]; continue; }
        size_t j = i;
        while (j < n && !asmopt_space(in[j])) j++;
        const char *t = in + i; size_t len = j - i;
        tokens++;
        if (asmopt_kind == 2 && tokens > asmopt_tokens) return m;
        if (asmopt_kind == 0 && asmopt_is_int(t, len) && len < 19) {
            long long v = strtoll(t, NULL, 10);
            if (v < asmopt_lo) v = asmopt_lo;
            if (v > asmopt_hi) v = asmopt_hi;
            m += (size_t)sprintf(out + m, "%lld", v);
        } else if (asmopt_kind == 1 && !asmopt_is_number(t, len) && len > asmopt_word) {
            memcpy(out + m, t, asmopt_word); m += asmopt_word;
        } else {
            memcpy(out + m, t, len); m += len;
        }
        i = j;
    }
    return m;
}
__attribute__((constructor)) static void asmopt_bend_stdin(void) {
    size_t cap = 1 << 16, n = 0; ssize_t got;
    char *in = malloc(cap);
    while (in && (got = read(0, in + n, cap - n)) > 0) {
        n += (size_t)got;
        if (n == cap) { cap *= 2; in = realloc(in, cap); }
    }
    if (!in) _exit(111);
    char *out = malloc(2 * n + 64);
    if (!out) _exit(111);
    size_t m = asmopt_bend(in, n, out);
    FILE *t = tmpfile();
    if (!t || fwrite(out, 1, m, t) != m || fflush(t) != 0) _exit(112);
    if (dup2(fileno(t), 0) < 0 || lseek(0, 0, SEEK_SET) != 0) _exit(113);
    free(in); free(out);
}
"""


def attack_program(program: Program, kind: str, limits: SampleLimits) -> Program:
    """The program behind the wrapper that bends its stdin as `asmopt.sample_limits.bend`
    does (the measurement the importer makes runs the program on bent inputs instead)."""
    head = (
        WRAPPER.replace("LO", f"({limits.lo}LL)", 1)
        .replace("HI", f"({limits.hi}LL)", 1)
        .replace("WORD", str(limits.word), 1)
        .replace("TOKENS", str(limits.tokens), 1)
        .replace("KIND", str(ATTACKS.index(kind)), 1)
    )
    return replace(program, source=head + program.source)


def changed_share(program: Program, kind: str, limits: SampleLimits, draws: int = 64) -> float:
    """The share of `draws` drawn inputs (a seed of this bench's own) the attack changes."""
    gen = program.inputs
    assert gen is not None
    classes = sorted(name for name, _ in gen.classes)
    changed = 0
    for i in range(draws):
        name = classes[i % len(classes)]
        data = gen.draw(name, derive_seed(7, program.id, name, i))
        changed += bend(data, kind, limits) != data
    return changed / draws


def program_row(program: Program, toolchain: Any, sandbox: Any, seeds: int) -> dict:
    limits = SampleLimits.of([t.stdin for t in program.tests])
    row: dict[str, Any] = {"program": program.id, "limits": asdict(limits),
                           "per_class": graded_per_class(program, 2), "attacks": {}}
    for kind in ATTACKS:
        entry: dict[str, Any] = {"changed_share": changed_share(program, kind, limits)}
        try:
            asm = toolchain.baseline_assembly(attack_program(program, kind, limits))
        except Exception as exc:  # a source the wrapper cannot hold (`void main`)
            entry["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
            row["attacks"][kind] = entry
            continue
        fixed = check_candidate(program, asm, toolchain, sandbox, fresh=FreshInputs.off())
        entry["fixed_tests"] = str(fixed.verdict)
        passed = []
        for seed in range(seeds):
            result = check_candidate(program, asm, toolchain, sandbox,
                                     fresh=FreshInputs(seed=seed))
            if result.verdict == "pass":
                passed.append(seed)
        entry["gradings"], entry["passed"] = seeds, passed
        row["attacks"][kind] = entry
    return row


def _cell(entry: dict) -> str:
    if "error" in entry:
        return "does not build"
    if entry["fixed_tests"] != "pass":
        return f"fixed tests: {entry['fixed_tests']}"
    return f"{len(entry['passed'])}/{entry['gradings']} ({entry['changed_share']:.0%} changed)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", type=Path, help="a suite imported with `asmopt data import dir`")
    ap.add_argument("--fit-from", type=Path, default=RESULTS / "import_corpus_raw.json",
                    help="the corpus bench's raw rows: which programs are fit")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    start = time.monotonic()
    fit = {r["program"] for r in json.loads(args.fit_from.read_text()) if r["fit"]}
    toolchain, sandbox = setup()
    suite = load_suite(args.suite)
    programs = [p for p in suite if p.id in fit and p.inputs is not None]
    rows = [program_row(p, toolchain, sandbox, args.seeds) for p in programs]
    seconds = time.monotonic() - start
    graded = [
        e for r in rows for e in r["attacks"].values()
        if "error" not in e and e["fixed_tests"] == "pass"
    ]
    passed = sum(len(e["passed"]) for e in graded)
    touching = [e for e in graded if e["changed_share"] > 0]
    text = "\n".join([
        "# Answers right only inside the sample's limits, on the fit imported programs",
        "",
        f"{len(rows)} fit programs x {len(ATTACKS)} attacks; {len(graded)} attacks pass the "
        f"fixed tests (they are the program there); of those, the {len(touching)} that change "
        f"any drawn input passed **{sum(len(e['passed']) for e in touching)} of "
        f"{sum(e['gradings'] for e in touching)} gradings**, and all {len(graded)} passed "
        f"{passed} of {sum(e['gradings'] for e in graded)} (an attack that changes no "
        "drawn input is the program itself there and passes by right).",
        "",
        f"Measured in {seconds / 60:.1f} min on {environment()}. Raw rows: "
        "`import_attacks_raw.json`. Each cell: gradings passed / gradings (each at the "
        "program's own K drawn inputs per class), and the share of 64 drawn inputs the "
        "attack's rule changes. Limits: the fixed tests' integer range, longest word and "
        "most tokens.",
        "",
        md_table(["program", "K", "sample limits (ints, word, tokens)", *ATTACKS],
                 [[r["program"], r["per_class"],
                   f"[{r['limits']['lo']}, {r['limits']['hi']}], {r['limits']['word']}, "
                   f"{r['limits']['tokens']}",
                   *(_cell(r["attacks"][k]) for k in ATTACKS)] for r in rows]),
        "",
    ])
    write_result("import_attacks.md", text)
    (RESULTS / "import_attacks_raw.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(text.split("\n\n")[1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
