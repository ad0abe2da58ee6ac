"""Discovery by amplification, step 1: the discovery warm start's base rate p0 of the fast edit.

Pre-registered in docs/training.md ("Pre-registered: discovery by amplification"). For one
rung of the ladder (`speed_learning/amplification.py`: rung 0 is the discovery warm start
as it is; rung k adds LADDER[k] near-miss rows to its SFT rows), this builds the discovery
variant's suite, tokenizer, SFT rows and SFT warm start, then samples 63 answers for each of
the 32 training programs (2,016) at each candidate rollout temperature (0.6, 0.8, 1.0;
seeded) and classifies each by text with the family's classifier: no timing. p0 is the
share of answers that hold the fast edit (`fast` or `partial`), with its exact 95%
interval. The exploration rule's validation sample (`speed_learning/exploration.py`) is
taken too: the PPO arms' temperature is chosen with it.

    .venv/bin/python bench/amplification_base_rate.py --quick      # plumbing, tiny sizes
    .venv/bin/python bench/amplification_base_rate.py --rung 0     # the measurement
    .venv/bin/python bench/amplification_base_rate.py --render-only

Every phase resumes from `--out-dir` (suite and tokenizer shared, one `rung-<k>/` per rung:
its SFT rows, warm start, exploration choice and one file of classified answers per
temperature; a finished temperature is not sampled again). Results: per rung a raw file of
classified answers (`rung-<k>_raw.jsonl.gz`: program, kernel template, temperature, sample
index, class, whether the diff applies) and a summary JSON under
`bench/results/amplification_base_rate/`, and one report over every measured rung,
`bench/results/amplification_base_rate.md`, drawn from those files alone.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import learning_common  # noqa: E402
import speed_learning_run as run  # noqa: E402
from speed_learning import amplification as amp  # noqa: E402
from speed_learning import exploration  # noqa: E402
from speed_learning.baselines import applied  # noqa: E402
from speed_learning.families import POPCOUNT, classify_popcount, kernel_of  # noqa: E402
from speed_learning.family import FAST_LINE  # noqa: E402

EDITS = POPCOUNT.variants["discovery"]
RESULTS = HERE / "results" / "amplification_base_rate"
REPORT = HERE / "results" / "amplification_base_rate.md"
NEAR_FILE = "near_rows.jsonl"


# --------------------------------------------------------------------------- warm start
def near_rows(root: Path, suite_dir: Path, count: int) -> list[dict[str, Any]]:
    """The first `count` near-miss SFT rows of the ladder's one seeded list, each checked to
    fail its program's tests (a draw that passes is drawn again); cached in `root`, whose
    rows are a prefix of the list, so a larger rung extends a smaller one's rows."""
    from asmopt.programs import load_suite
    from asmopt.toolchain import DEFAULT_O3_FLAGS, default_toolchain
    from asmopt.train.data import rows_from_suite

    cache = root / NEAR_FILE
    done = amp.read_jsonl(cache) if cache.is_file() else []
    if len(done) >= count:
        return done[:count]
    suite, toolchain = load_suite(suite_dir), default_toolchain()
    rows = {r["program_id"]: r for r in rows_from_suite(suite, "train", template="diff")}
    kernels = [(pid, kernel_of(suite.get(pid))) for pid in rows]
    order = amp.ladder_order(kernels, rounds=-(-count // len(kernels)))
    for round_, pid in order[len(done) : count]:
        program = suite.get(pid)
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        completion, draw, verdict = failing_near_miss(program, baseline, f"near-{round_}-{pid}")
        row = {**rows[pid], "completion": completion, "edit": "near"}
        done.append({**row, "round": round_, "draw": draw, "verdict": verdict})
        with cache.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(done[-1]) + "\n")
    return done[:count]


def failing_near_miss(program: Any, baseline: str, seed: str) -> tuple[str, int, str]:
    """(answer, draw, verdict): the first near miss drawn from `seed` that fails the
    program's tests (untimed check)."""
    from asmopt.reward.service import ScoreConfig, score_one
    from asmopt.train.data import fenced_diff

    check = ScoreConfig(reward="robust", measure="none", edit_format="diff")
    rng = random.Random(seed)
    for draw in range(amp.MAX_DRAWS):
        completion = fenced_diff(baseline, amp.near_rewrite(baseline, rng), 0) or ""
        verdict = score_one(program, completion, baseline, check).verdict
        if verdict != "pass":
            return completion, draw, verdict
    raise RuntimeError(f"{program.id}: every near miss drawn passes the tests")


def rung_rows(out: Path, suite_dir: Path, rung: int) -> Path:
    """The rung's SFT rows: the discovery rows plus LADDER[rung] near-miss rows, shuffled
    with seed 0; the validation rows (loss only) are the discovery ones unchanged."""
    base = out / "data"
    run.sft_rows(suite_dir, "train", base / "sft_train.jsonl", EDITS)
    run.sft_rows(suite_dir, "validation", base / "sft_validation.jsonl", EDITS)
    dest = out / f"rung-{rung}" / "data"
    if (dest / "sft_train.jsonl").is_file():
        return dest.parent
    dest.mkdir(parents=True, exist_ok=True)
    rows = amp.read_jsonl(base / "sft_train.jsonl")
    extra = near_rows(out, suite_dir, amp.LADDER[rung])
    keep = ("round", "draw", "verdict")
    rows += [{k: v for k, v in r.items() if k not in keep} for r in extra]
    random.Random(0).shuffle(rows)
    shutil.copyfile(base / "sft_validation.jsonl", dest / "sft_validation.jsonl")
    tmp = dest / "sft_train.tmp"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(dest / "sft_train.jsonl")
    return dest.parent


def warm_start(out: Path, suite_dir: Path, rung: int, quick: bool, threads: int = 0) -> Path:
    """The rung's SFT warm start (`sft.yaml`, the discovery tokenizer), trained once."""
    tokenizer = run.build_tokenizer(out / "tokenizer", suite_dir, EDITS)
    root = rung_rows(out, suite_dir, rung)
    record_start(root / "sft")
    return run.run_sft(root, tokenizer, quick, threads)


def record_start(out: Path) -> None:
    """Which commit and command started the warm start's training (`run_meta.json`, read
    by the report), and every later command that resumed it before it finished."""
    from asmopt.provenance import git_commit

    meta = out / run.RUN_META
    if (out / "final" / "config.json").is_file():
        return
    record = {
        "commit": git_commit(),
        "command": " ".join(["bench/amplification_base_rate.py", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    if meta.is_file():
        first = json.loads(meta.read_text(encoding="utf-8"))
        record = {**first, "resumed": [*first.get("resumed", []), record]}
    out.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps(record) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- base rate
def train_baselines(suite_dir: Path) -> dict[str, str]:
    """The -O3 assembly of every training program, by program id."""
    from asmopt.programs import load_suite
    from asmopt.toolchain import DEFAULT_O3_FLAGS, default_toolchain

    suite, toolchain = load_suite(suite_dir), default_toolchain()
    return {
        p.id: toolchain.baseline_assembly(p, DEFAULT_O3_FLAGS)
        for p in suite.select(split="train")
    }


def classify_answers(
    suite_dir: Path,
    answers: list[tuple[dict[str, Any], str, int, str | None]],
    temperature: float,
    baselines: dict[str, str],
) -> list[dict[str, Any]]:
    """One raw row per answer: its program, template, sample index and class by text (an
    answer cut while sampled is classed by its cut, and whether it applies is unknown)."""
    from asmopt.programs import load_suite

    suite = load_suite(suite_dir)
    seen: dict[str, int] = {}
    out = []
    for row, answer, tokens, cut in answers:
        pid = row["program_id"]
        baseline = baselines[pid]
        asm = None if cut else applied(baseline, answer)
        seen[pid] = seen.get(pid, -1) + 1
        plus = [line[1:].rstrip() for line in answer.splitlines() if line.startswith("+")]
        out.append(
            {
                "program": pid,
                "kernel": kernel_of(suite.get(pid)),
                "temperature": temperature,
                "sample": seen[pid],
                "class": cut or classify_popcount(baseline, asm),
                "applies": None if cut else asm is not None,
                "fast_line": FAST_LINE in plus,
                "popcntq": "popcntq" in answer,
                "tokens": tokens,
                "answer": answer,
            }
        )
    return out


def sample_temperature(
    root: Path, suite_dir: Path, model: Path, temperature: float, per_program: int
) -> list[dict[str, Any]]:
    """The rung's classified answers at one temperature; sampled once, then read back."""
    dest = root / "base_rate" / f"T{temperature}.jsonl"
    if dest.is_file():
        return amp.read_jsonl(dest)
    start = time.monotonic()
    baselines = train_baselines(suite_dir)
    answers = amp.shared_prefix_answers(
        model,
        run.CONFIG_DIR / "ppo.yaml",
        "suite:train",
        suite=str(suite_dir),
        samples=per_program,
        seed=amp.sample_seed(temperature),
        temperature=temperature,
        baselines=baselines,
    )
    rows = classify_answers(suite_dir, answers, temperature, baselines)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(dest)
    log_time(root, f"sample T={temperature}", time.monotonic() - start)
    return rows


def log_time(root: Path, phase: str, seconds: float) -> None:
    path = root / "timings.json"
    times = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    times[phase] = round(seconds, 1)
    path.write_text(json.dumps(times, indent=1) + "\n", encoding="utf-8")


def timed(root: Path, phase: str, done: Path, fn: Any) -> Any:
    """`fn()`, its wall time logged under `phase` unless `done` existed before (resumed)."""
    fresh = not done.exists()
    start = time.monotonic()
    value = fn()
    if fresh:
        log_time(root, phase, time.monotonic() - start)
    return value


# --------------------------------------------------------------------------- results
def examples(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """A few answers, whole: those holding the fast edit and those writing `popcntq`."""
    return {
        "fast_edit": [r["answer"] for r in rows if amp.holds_fast(r["class"])][:3],
        "popcntq_other": [
            r["answer"] for r in rows if r["popcntq"] and not amp.holds_fast(r["class"])
        ][:3],
    }


def cut_at(rows: list[dict[str, Any]]) -> dict[str, int]:
    """The line at which cut answers were cut, as far as it was written: the five most
    common, with their counts."""
    lines: dict[str, int] = {}
    for r in rows:
        if r["applies"] is None:
            last = r["answer"].split("\n")[-1]
            lines[last] = lines.get(last, 0) + 1
    return dict(sorted(lines.items(), key=lambda kv: -kv[1])[:5])


def save_results(
    root: Path, rung: int, per_t: dict[float, list[dict[str, Any]]], dest: Path
) -> dict[str, Any]:
    """The rung's raw rows (compressed, no answer text) and its summary JSON in `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    with gzip.open(dest / f"rung-{rung}_raw.jsonl.gz", "wt", encoding="utf-8") as fh:
        for rows in per_t.values():
            for r in rows:
                fh.write(json.dumps({k: v for k, v in r.items() if k != "answer"}) + "\n")
    sft_meta = root / "sft" / run.RUN_META
    summary = {
        "rung": rung,
        "command": " ".join(["bench/amplification_base_rate.py", *sys.argv[1:]]),
        "near_rows": amp.LADDER[rung],
        "sft_rows": warm_start_data(root),
        "sft": json.loads(sft_meta.read_text(encoding="utf-8")) if sft_meta.is_file() else {},
        "sft_log": sft_log(root / "sft" / "metrics.jsonl"),
        "exploration": exploration_record(root),
        "temperatures": {
            str(t): {
                **amp.summarize(rows),
                "seed": amp.sample_seed(t),
                "cut_at": cut_at(rows),
                "examples": examples(rows),
            }
            for t, rows in per_t.items()
        },
        "timings_s": json.loads((root / "timings.json").read_text(encoding="utf-8")),
    }
    (dest / f"rung-{rung}_summary.json").write_text(
        json.dumps(summary, indent=1) + "\n", encoding="utf-8"
    )
    return summary


def sft_log(path: Path) -> dict[str, Any]:
    """The warm start's training log in brief: steps, the summed step times of the steps
    kept (a resumed run logs again the steps after its checkpoint), and how many steps were
    logged twice."""
    train = [r for r in amp.read_jsonl(path) if r.get("kind") == "train"] if path.is_file() else []
    last = {r["step"]: r for r in train}
    return {
        "steps": len(last),
        "step_time_s": round(sum(r.get("time/step_s", 0.0) for r in last.values()), 1),
        "steps_redone_after_resume": len(train) - len(last),
        "final_train_loss": train[-1]["loss"] if train else None,
    }


def exploration_record(root: Path) -> dict[str, Any]:
    """The exploration rule's validation sample, where it was taken (it is only needed once
    a temperature's p0 reaches the range), without its example answers."""
    path = root / exploration.CHOICE_FILE
    if not path.is_file():
        return {"trials": [], "taken": False}
    record = json.loads(path.read_text(encoding="utf-8"))
    record["trials"] = [{k: v for k, v in t.items() if k != "examples"} for t in record["trials"]]
    return {**record, "taken": True}


def warm_start_data(root: Path) -> dict[str, int]:
    """The rung's SFT training rows by edit."""
    edits: dict[str, int] = {}
    for r in amp.read_jsonl(root / "data" / "sft_train.jsonl"):
        edits[r["edit"]] = edits.get(r["edit"], 0) + 1
    return edits


def measure_rung(args: argparse.Namespace) -> None:
    """Warm start, base rate and (where a temperature's p0 reaches the range) the
    exploration rule's validation sample of one rung; its results saved."""
    out, rung = args.out_dir, args.rung
    root = out / f"rung-{rung}"
    root.mkdir(parents=True, exist_ok=True)
    suite_dir = timed(root, "suite", out / "suite", lambda: run.build_suite(out))
    final = root / "sft" / "final"
    model = timed(
        root,
        "tokenizer, rows, SFT",
        final,
        lambda: warm_start(out, suite_dir, rung, args.quick, args.threads),
    )
    if args.stop_after == "sft":
        return
    per_program = 1 if args.quick else amp.SAMPLES_PER_PROGRAM
    per_t = {}
    for t in amp.TEMPERATURES:
        per_t[t] = sample_temperature(root, suite_dir, model, t, per_program)
        print(f"rung {rung} T={t}: {json.dumps(amp.summarize(per_t[t]))}", file=sys.stderr)
    if any(amp.summarize(rows)["p0"] >= amp.P0_RANGE[0] for rows in per_t.values()):
        timed(
            root,
            "exploration (validation)",
            root / exploration.CHOICE_FILE,
            lambda: exploration.choose_temperature(root, suite_dir, model, args.quick),
        )
    dest = root / "results" if args.quick else args.results
    save_results(root, rung, per_t, dest)
    report = root / "report.md" if args.quick else args.report
    learning_common.publish(render(dest, os.getloadavg()), report, lambda d: None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out-dir", type=Path, default=None, help="default: runs/amplification")
    parser.add_argument("--rung", type=int, default=0, choices=range(len(amp.LADDER)))
    parser.add_argument("--quick", action="store_true", help="plumbing: 4 SFT steps, 1 answer")
    parser.add_argument(
        "--threads", type=int, default=0, help="torch threads (default: the configs')"
    )
    parser.add_argument("--stop-after", choices=["sft"], help="end after the warm start")
    parser.add_argument("--render-only", action="store_true", help="the report from results")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--report", type=Path, default=REPORT)
    args = parser.parse_args(argv)
    if args.out_dir is None:
        args.out_dir = Path("runs/amplification-quick" if args.quick else "runs/amplification")
    if args.render_only:
        learning_common.publish(render(args.results, None), args.report, lambda d: None)
        return 0
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    measure_rung(args)
    return 0


# --------------------------------------------------------------------------- report
def render(results: Path, load: tuple[float, ...] | None) -> str:
    from speed_learning.amplification_report import report

    return report(results, load)


if __name__ == "__main__":
    raise SystemExit(main())
