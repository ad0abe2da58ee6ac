"""Speed-learning run: does PPO on the timed reward make held-out answers faster?

A task family where a faster correct answer exists and differs from the baseline (the
popcount family, `bench/speed_learning/family.py`: gcc -O3 calls libgcc's `__popcountdi2`
where one `popcnt` instruction does the same), a CPU-size looped policy (PLT, R = 2), an SFT
warm start that writes three edits in equal shares (fast and correct, correct and no faster,
fast and wrong), then PPO on the sandboxed execution reward, timed. A control arm runs the
same PPO with the untimed reward, which pays the fast edit and the alignment edit the same.

    .venv/bin/python bench/speed_learning_run.py                  # the run and its report
    .venv/bin/python bench/speed_learning_run.py --quick          # plumbing: a few steps

Phases (each resumes from its directory under --out-dir; a finished phase is not repeated):
1. Suite: the family written as a suite (56 programs, train/validation/test 4:1:2 per
   kernel), reference outputs from the -O3 build.
2. Tokenizer: byte-level BPE learnt on the training split only.
3. SFT rows (JSONL): per training program its three edits as unified diffs, checked to apply.
4. SFT (`bench/speed_learning/sft.yaml`), one warm start shared by every PPO run.
5. PPO (`bench/speed_learning/ppo.yaml`) per seed: timed arm (`measure: time`) and
   control arm (`measure: none`). Validation uses the validation split only.
6. Final evaluation on the test split, untouched until then: `--samples` answers per program
   from the SFT model and every PPO model (the rollout temperature, seeded), each applied,
   built, run on every test and timed against the baseline (interleaved CPU time, +-2% or
   10 s).
7. Report: headline = mean speedup of held-out answers (an answer that fails counts 1.0, as
   the baseline is kept) with a 95% bootstrap interval over test programs, per seed; the raw
   answers and metrics are written beside it (`speed_learning_run/`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import learning_common  # noqa: E402
from learning_common import fmt  # noqa: E402
from speed_learning.family import (  # noqa: E402
    FAST_LINE,
    POPCOUNT_CALL,
    WRONG_LINE,
    rewrite,
    write_suite,
)

CONFIG_DIR = HERE / "speed_learning"
TOKENIZER_VOCAB = 2048
EDITS = ("fast", "align", "wrong")
ARMS = {"timed": "time", "control": "none"}
BOOTSTRAP = 2000


# --------------------------------------------------------------------------- preparation
def build_suite(root: Path) -> Path:
    dest = root / "suite"
    if (dest / "suite.json").is_file():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    return write_suite(dest, per_kernel=7, seed=0)


def build_tokenizer(out: Path, suite_dir: Path) -> Path:
    """BPE learnt on the training split, its edits included (held-out programs never shape
    the vocabulary)."""
    from asmopt.programs import load_suite

    return learning_common.build_tokenizer(
        out,
        load_suite(suite_dir).select(split="train"),
        TOKENIZER_VOCAB,
        extra=lambda program, o3: [rewrite(o3, edit) for edit in EDITS],
    )


def sft_rows(suite_dir: Path, split: str, dest: Path) -> Path:
    """Every program of `split` three times, once per edit, as unified diffs (context 0)."""
    from asmopt.programs import load_suite
    from asmopt.toolchain import DEFAULT_O3_FLAGS, default_toolchain
    from asmopt.train.data import fenced_diff, rows_from_suite

    if dest.is_file():
        return dest
    suite = load_suite(suite_dir)
    toolchain = default_toolchain()
    rows = rows_from_suite(suite, split, template="diff", toolchain=toolchain)
    out: list[dict[str, Any]] = []
    for row in rows:
        baseline = toolchain.baseline_assembly(suite.get(row["program_id"]), DEFAULT_O3_FLAGS)
        for edit in EDITS:
            completion = fenced_diff(baseline, rewrite(baseline, edit), 0)
            if completion is None:
                raise AssertionError(f"{row['program_id']}: edit {edit} changes nothing")
            out.append({**row, "completion": completion, "edit": edit})
    random.Random(0).shuffle(out)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
    tmp.replace(dest)
    return dest


# --------------------------------------------------------------------------- training
def run_sft(root: Path, tokenizer: Path, quick: bool) -> Path:
    from asmopt.train.config import SFTConfig, load_config
    from asmopt.train.sft import train_sft

    cfg = load_config(SFTConfig, CONFIG_DIR / "sft.yaml")
    cfg.output_dir = str(root / "sft")
    cfg.tokenizer = str(tokenizer)
    cfg.train_data = str(root / "data" / "sft_train.jsonl")
    cfg.val_data = str(root / "data" / "sft_validation.jsonl")
    if quick:
        cfg.total_steps, cfg.eval_every, cfg.save_every, cfg.val_max_rows = 4, 2, 2, 2
    final = root / "sft" / "final"
    if (final / "config.json").is_file():
        return final
    result = train_sft(cfg, progress=sys.stderr.isatty())
    return Path(result.get("final_model") or final)


def ppo_dir(root: Path, arm: str, seed: int) -> Path:
    return root / f"ppo-{arm}-s{seed}"


def run_ppo(root: Path, suite_dir: Path, model: Path, arm: str, seed: int, quick: bool) -> Path:
    from asmopt.train.config import PPOConfig, load_config
    from asmopt.train.ppo import train_ppo

    out = ppo_dir(root, arm, seed)
    final = out / "final"
    if (final / "config.json").is_file():
        return final
    cfg = load_config(PPOConfig, CONFIG_DIR / "ppo.yaml")
    cfg.output_dir = str(out)
    cfg.model = str(model)
    cfg.seed = seed
    cfg.suite = str(suite_dir)
    cfg.reward_options = {**cfg.reward_options, "suite": str(suite_dir), "measure": ARMS[arm]}
    if quick:
        cfg.total_steps, cfg.save_every = 2, 1
        cfg.val_max_rows, cfg.val_samples_per_prompt = 2, 1
        cfg.prompts_per_step, cfg.rollout_batch_size, cfg.mini_batch_size = 2, 4, 4
    result = train_ppo(cfg, progress=sys.stderr.isatty())
    return Path(result.get("final_model") or final)


# --------------------------------------------------------------------------- evaluation
def classify(baseline: str, answer_asm: str | None) -> str:
    """Which edit an applied answer is: one of EDITS, `partial` (some call sites fast, the
    rest untouched), `other`, or `none` (the diff did not apply)."""
    if answer_asm is None:
        return "none"
    lines = [line.rstrip() for line in answer_asm.splitlines()]
    for edit in EDITS:
        if lines == [line.rstrip() for line in rewrite(baseline, edit).splitlines()]:
            return edit
    base = [line.rstrip() for line in baseline.splitlines()]
    if len(lines) == len(base):
        changed = [(b, a) for b, a in zip(base, lines, strict=True) if a != b]
        if changed and all(b == POPCOUNT_CALL and a == FAST_LINE for b, a in changed):
            return "partial"
        if changed and all(b == POPCOUNT_CALL and a == WRONG_LINE for b, a in changed):
            return "wrong_partial"
    return "other"


def evaluate(
    model_dir: Path, suite_dir: Path, samples: int, seed: int, dest: Path
) -> list[dict[str, Any]]:
    """`samples` answers per test program, judged and timed; identical applied answers of a
    program are timed once (the same binary) and share that measurement."""
    if dest.is_file():
        return [json.loads(line) for line in dest.read_text(encoding="utf-8").splitlines()]
    from dataclasses import replace

    from asmopt.policies.diff_format import DiffError, apply_unified_diff
    from asmopt.policies.extract import extract_diff
    from asmopt.programs import load_suite
    from asmopt.reward.service import REWARD_TIMING, ScoreConfig, score_one
    from asmopt.toolchain import DEFAULT_O3_FLAGS, default_toolchain

    answers = learning_common.sample_answers(
        model_dir,
        CONFIG_DIR / "ppo.yaml",
        "suite:test",
        suite=str(suite_dir),
        samples=samples,
        seed=seed,
    )
    suite = load_suite(suite_dir)
    toolchain = default_toolchain()
    score = ScoreConfig(
        reward="robust",
        measure="time",
        edit_format="diff",
        timing=replace(REWARD_TIMING, budget_s=10.0),
    )
    measured: dict[tuple[str, str], dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for row, answer, tokens in answers:
        program = suite.get(row["program_id"])
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        try:
            applied: str | None = apply_unified_diff(baseline, extract_diff(answer) or "")
        except (DiffError, ValueError):
            applied = None
        key = (program.id, hashlib.sha256((applied or answer).encode()).hexdigest())
        if key not in measured:
            result = score_one(program, answer, None, score)
            measured[key] = {
                "verdict": result.verdict,
                "reward": result.reward,
                "speedup": result.speedup,
                "low": result.speedup_low,
                "high": result.speedup_high,
                "is_copy": result.is_copy,
                "message": result.message[:200],
            }
        out.append(
            {
                "program": program.id,
                "kernel": program.meta.get("kernel"),
                "edit": classify(baseline, applied),
                "answer_tokens": tokens,
                **measured[key],
                "answer": answer,
            }
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
    tmp.replace(dest)
    return out


# --------------------------------------------------------------------------- statistics
def held_out_speedup(answer: dict[str, Any]) -> float:
    """An answer's contribution: its measured speedup when it passes, else 1.0 (the -O3
    baseline is kept, as in the reference evaluation)."""
    if answer["verdict"] == "pass" and answer["speedup"] is not None:
        return float(answer["speedup"])
    return 1.0


def program_means(answers: list[dict[str, Any]]) -> dict[str, float]:
    """Mean held-out speedup of each test program's answers (in first-seen order)."""
    by_program: dict[str, list[float]] = {}
    for a in answers:
        by_program.setdefault(a["program"], []).append(held_out_speedup(a))
    return {k: sum(v) / len(v) for k, v in by_program.items()}


def bootstrap_interval(values: list[float], seed: int) -> tuple[float, float] | None:
    """95% percentile-bootstrap interval of the mean of `values` (None for no values)."""
    if not values:
        return None
    rng = random.Random(seed)
    boots = sorted(sum(rng.choice(values) for _ in values) / len(values) for _ in range(BOOTSTRAP))
    return boots[int(0.025 * BOOTSTRAP)], boots[int(0.975 * BOOTSTRAP) - 1]


def summarize(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean held-out speedup with a 95% bootstrap interval that resamples test programs
    (answers of one program are not independent), plus edit shares and rates."""
    means = list(program_means(answers).values())
    point = sum(means) / len(means) if means else float("nan")
    low, high = bootstrap_interval(means, 12345) or (None, None)
    n = len(answers)
    passed = [a for a in answers if a["verdict"] == "pass"]
    faster = [a for a in passed if a["low"] is not None and a["low"] > 1.0]
    slower = [a for a in passed if a["high"] is not None and a["high"] < 1.0]
    shares = {
        e: sum(a["edit"] == e for a in answers) / n for e in sorted({a["edit"] for a in answers})
    }
    return {
        "programs": len(means),
        "answers": n,
        "mean_speedup": point,
        "low": low,
        "high": high,
        "pass_rate": len(passed) / n if n else 0.0,
        "faster_rate": len(faster) / n if n else 0.0,
        "slower_rate": len(slower) / n if n else 0.0,
        "fast_share": shares.get("fast", 0.0) + shares.get("partial", 0.0),
        "edits": shares,
    }


def paired_gain(after: list[dict[str, Any]], before: list[dict[str, Any]]) -> dict[str, float]:
    """Mean over test programs of (after - before) program-mean speedup, with a bootstrap
    interval over programs: the gain of PPO on the same programs."""
    b, a = program_means(before), program_means(after)
    diffs = [a[k] - b[k] for k in sorted(set(a) & set(b))]
    low, high = bootstrap_interval(diffs, 54321) or (float("nan"), float("nan"))
    return {"gain": sum(diffs) / len(diffs), "low": low, "high": high}


# --------------------------------------------------------------------------- report
def _interval(s: dict[str, Any]) -> str:
    return f"{s['mean_speedup']:.3f} [{s['low']:.3f}, {s['high']:.3f}]"


def _arm(
    results: dict[str, list[dict[str, Any]]], arm: str, seeds: list[int]
) -> list[tuple[int, dict[str, Any], dict[str, float]]]:
    """(seed, held-out summary, paired gain over SFT) of every finished run of an arm."""
    return [
        (s, summarize(results[key]), paired_gain(results[key], results["sft"]))
        for s in seeds
        if (key := f"{arm}-s{s}") in results
    ]


def headline(
    results: dict[str, list[dict[str, Any]]], seeds: list[int], control_seeds: list[int]
) -> str:
    sft = summarize(results["sft"])
    timed = _arm(results, "timed", seeds)
    control = _arm(results, "control", control_seeds)
    learnt = [g for _, _, g in timed if g["low"] > 0]
    verdict = "yes" if timed and len(learnt) == len(timed) else "no" if not learnt else "partly"
    text = (
        f"**Headline: held-out speed, learnt: {verdict}.** Mean speedup of sampled answers on "
        f"the {sft['programs']} test programs (failing answers count 1.0; 95% bootstrap "
        f"interval over programs): SFT model {_interval(sft)}; after PPO on the timed reward, "
        + "; ".join(f"seed {s} {_interval(t)}" for s, t, _ in timed)
        + f". The paired gain over the SFT model excludes 0 in {len(learnt)} of {len(timed)} "
        "seeds."
    )
    if control:
        moved = sum(g["low"] > 0 for _, _, g in control)
        text += (
            " The untimed control (same PPO, reward without timing): "
            + "; ".join(f"seed {s} {_interval(t)}" for s, t, _ in control)
            + f", gain excluding 0 in {moved} of {len(control)} seeds."
        )
    return text + (
        " What PPO learnt is to choose, among edits the SFT model already writes, the one the "
        "timed reward pays; it did not discover a rewrite."
    )


def reading(results: dict[str, list[dict[str, Any]]], seeds: list[int]) -> list[str]:
    """The reading's computed lines: edit shares before and after."""
    sft = summarize(results["sft"])["edits"]
    timed = [t["fast_share"] for _, t, _ in _arm(results, "timed", seeds)]
    control = [t["fast_share"] for _, t, _ in _arm(results, "control", seeds)]

    def span(xs: list[float]) -> str:
        return f"{min(xs):.0%}-{max(xs):.0%}" if xs else "-"

    return [
        f"- Before PPO the SFT model writes the fast edit in {sft.get('fast', 0):.0%} of "
        f"held-out answers, the alignment edit in {sft.get('align', 0):.0%}, the wrong edit in "
        f"{sft.get('wrong', 0):.0%}, and {sft.get('none', 0):.0%} do not apply (it was trained "
        "on equal shares). PPO on the timed reward raises the fast share to "
        f"{span(timed)}; the untimed control to {span(control)}. Only the timed reward "
        "separates the fast edit from the alignment edit (it pays log speedup; the untimed "
        "one pays both 0); both punish the wrong edit.",
    ]


def report(
    root: Path,
    suite_dir: Path,
    argv: list[str],
    seeds: list[int],
    control_seeds: list[int],
    results: dict[str, list[dict[str, Any]]],
    seconds: dict[str, float],
    load: tuple[float, ...],
) -> str:
    """The speed-learning run's report (Markdown).

    Long on purpose: it writes the document's sections top to bottom, in the order a
    reader meets them, so the whole layout reads in one place."""
    import torch

    from asmopt.provenance import git_commit
    from asmopt.train.metrics_log import read_metrics

    lines = [
        "# Speed-learning run: PPO on the timed reward, popcount task family",
        "",
        headline(results, seeds, control_seeds),
        "",
        f"- {time.strftime('%Y-%m-%d %H:%M')}, commit {git_commit()}; command: "
        f"`{' '.join(['.venv/bin/python bench/speed_learning_run.py', *argv])}`",
        f"- torch {torch.__version__}, {platform.machine()}, {os.cpu_count()} logical CPUs; "
        f"load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}",
        "- wall time of this invocation (a resumed phase counts only its remainder): "
        + ", ".join(f"{k} {v / 60:.1f} min" for k, v in seconds.items()),
        "- summed step times of the runs: "
        + ", ".join(f"{name} {minutes:.1f} min" for name, minutes in step_minutes(root)),
        "- task: `bench/speed_learning/family.py` (8 kernels x 7 programs; train/validation/"
        "test 32/8/16); configs `bench/speed_learning/sft.yaml`, `ppo.yaml`; policy: a fresh "
        "PLT (R = 2) model, d = 128, 2 shared layers, BPE vocabulary 2,048 learnt on the "
        "training split",
        "",
        "## Held-out answers (test split, evaluated once at the end)",
        "",
        "Answers per program sampled at the rollout temperature (0.6, seeded). Speedup = "
        "the reward service's mean over tests of baseline/candidate CPU time, interleaved, "
        "to +-2% or 10 s per test; a failing answer counts 1.0. Interval: 95% bootstrap over test "
        "programs. faster/slower = the answer's own 95% interval excludes 1. fast share = "
        "answers that put `popcnt` at one or more call sites and change nothing else.",
        "",
        "| model | answers | mean speedup [95%] | paired gain vs SFT [95%] | pass | "
        "significantly faster | significantly slower | fast share | edits |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    order = ["sft"] + [f"timed-s{s}" for s in seeds] + [f"control-s{s}" for s in control_seeds]
    for key in order:
        if key not in results:
            continue
        s = summarize(results[key])
        gain = (
            "-"
            if key == "sft"
            else (lambda g: f"{g['gain']:+.3f} [{g['low']:+.3f}, {g['high']:+.3f}]")(
                paired_gain(results[key], results["sft"])
            )
        )
        name = {"sft": "SFT (before PPO)"}.get(
            key,
            key.replace("timed-s", "PPO timed, seed ").replace(
                "control-s", "PPO untimed (control), seed "
            ),
        )
        edits = ", ".join(
            f"{e} {v:.0%}" for e, v in sorted(s["edits"].items(), key=lambda x: -x[1])
        )
        lines.append(
            f"| {name} | {s['answers']} | {_interval(s)} | {gain} | {s['pass_rate']:.0%} | "
            f"{s['faster_rate']:.0%} | {s['slower_rate']:.0%} | {s['fast_share']:.0%} | {edits} |"
        )
    lines += [
        "",
        "## PPO training curves (training programs)",
        "",
        "Reward mean per step (robust reward; timed arm: log speedup when significant).",
        "",
    ]
    runs = [(a, s) for a, ss in (("timed", seeds), ("control", control_seeds)) for s in ss]
    header = "| step | " + " | ".join(f"{a} s{s}" for a, s in runs) + " |"
    lines += [header, "|" + "---|" * (len(runs) + 1)]
    curves = {
        (a, s): {r["step"]: r for r in read_metrics(ppo_dir(root, a, s)) if r["kind"] == "train"}
        for a, s in runs
        if ppo_dir(root, a, s).exists()
    }
    steps = sorted({k for c in curves.values() for k in c})
    for step in steps:
        cells = [fmt(curves.get(run, {}).get(step, {}).get("reward/mean")) for run in runs]
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Validation split at the end of PPO",
        "",
        "| run | answers | reward mean | pass rate |",
        "|---|---|---|---|",
    ]
    for a, s in runs:
        if not ppo_dir(root, a, s).exists():
            continue
        vals = [r for r in read_metrics(ppo_dir(root, a, s)) if r["kind"] == "val"]
        if vals:
            v = vals[-1]
            lines.append(
                f"| {a} s{s} | {v.get('rows')} | {fmt(v.get('reward/mean'))} | "
                f"{fmt(v.get('pass_rate'))} |"
            )
    lines += [
        "",
        "## Per kernel (test split)",
        "",
        "| kernel | " + " | ".join(k for k in order if k in results) + " |",
        "|" + "---|" * (1 + sum(k in results for k in order)),
    ]
    kernels = sorted({a["kernel"] for a in results["sft"]})
    for kernel in kernels:
        cells = []
        for key in order:
            if key not in results:
                continue
            sub = [a for a in results[key] if a["kernel"] == kernel]
            cells.append(f"{summarize(sub)['mean_speedup']:.2f}" if sub else "-")
        lines.append(f"| {kernel} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Reading",
        "",
        *reading(results, sorted({*seeds, *control_seeds})),
        f"- Answers whose diff did not apply: {hunk_overshoot(results, suite_dir)}.",
        "- The family has one learnable rewrite, and the SFT data contains it: this run shows "
        "that policy, sandbox, timing, reward and PPO together move a policy toward faster "
        "correct answers on programs it never trained on. It does not show that a small "
        "model can find optimizations it was never shown.",
        "- Raw data: every held-out answer with its verdict, edit class and measured speedup "
        "interval, and each PPO run's metrics.jsonl, are in `speed_learning_run/`.",
    ]
    return "\n".join(lines) + "\n"


def step_minutes(root: Path) -> list[tuple[str, float]]:
    """Training time of every run from its own metrics (independent of resumption)."""
    from asmopt.train.metrics_log import read_metrics

    out = []
    for path in [root / "sft", *sorted(root.glob("ppo-*"))]:
        if path.is_dir():
            rows = [r for r in read_metrics(path) if r["kind"] == "train"]
            out.append((path.name, sum(r.get("time/step_s", 0.0) for r in rows) / 60))
    return out


def hunk_overshoot(results: dict[str, list[dict[str, Any]]], suite_dir: Path) -> str:
    """How many unapplied answers write more hunks than the program has call sites: the
    model does not count the call sites of a program it has not seen."""
    from asmopt.programs import load_suite
    from asmopt.toolchain import DEFAULT_O3_FLAGS, default_toolchain

    suite, toolchain = load_suite(suite_dir), default_toolchain()
    sites: dict[str, int] = {}
    failed = over = 0
    for rows in results.values():
        for a in rows:
            if a["edit"] != "none":
                continue
            if a["program"] not in sites:
                asm = toolchain.baseline_assembly(suite.get(a["program"]), DEFAULT_O3_FLAGS)
                sites[a["program"]] = sum(
                    line.rstrip() == POPCOUNT_CALL for line in asm.splitlines()
                )
            failed += 1
            hunks = sum(line.startswith("@@") for line in a["answer"].splitlines())
            over += hunks > sites[a["program"]]
    return (
        f"{failed} of {sum(len(r) for r in results.values())} over all models; {over} of them "
        "write more hunks than the program has `__popcountdi2` call sites (the model does "
        "not count the call sites of a program it has not seen); the others have a hunk that "
        "does not parse or does not match the baseline"
    )


def save_raw(root: Path, results: dict[str, list[dict[str, Any]]], dest: Path) -> None:
    from asmopt.train.metrics_log import METRICS_FILE

    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(root.glob("ppo-*")):
        if (path / METRICS_FILE).is_file():
            shutil.copyfile(path / METRICS_FILE, dest / f"{path.name}_metrics.jsonl")
    if (root / "sft" / METRICS_FILE).is_file():
        shutil.copyfile(root / "sft" / METRICS_FILE, dest / "sft_metrics.jsonl")
    with (dest / "test_answers.jsonl").open("w", encoding="utf-8") as fh:
        for model, rows in results.items():
            for row in rows:
                fh.write(json.dumps({"model": model, **row}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out-dir", type=Path, default=Path("runs/speed-learning-run"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--control-seeds", type=int, nargs="*", default=[0])
    parser.add_argument("--samples", type=int, default=4, help="answers per test program")
    parser.add_argument("--quick", action="store_true", help="a few steps of each phase")
    parser.add_argument("--report", type=Path, default=HERE / "results" / "speed_learning_run.md")
    args = parser.parse_args(argv)
    if not args.seeds or args.samples < 1:
        parser.error("--seeds needs at least one seed and --samples must be >= 1")
    raw_argv = sys.argv[1:] if argv is None else argv
    root: Path = args.out_dir / ("quick" if args.quick else "full")
    load = os.getloadavg()
    seconds: dict[str, float] = {}

    start = time.monotonic()
    suite_dir = build_suite(root)
    tokenizer = build_tokenizer(root / "tokenizer", suite_dir)
    sft_rows(suite_dir, "train", root / "data" / "sft_train.jsonl")
    sft_rows(suite_dir, "validation", root / "data" / "sft_validation.jsonl")
    seconds["preparation"] = time.monotonic() - start

    start = time.monotonic()
    sft_model = run_sft(root, tokenizer, args.quick)
    seconds["SFT"] = time.monotonic() - start
    models: dict[str, Path] = {"sft": sft_model}
    for arm, seeds in (("timed", args.seeds), ("control", args.control_seeds)):
        for seed in seeds:
            start = time.monotonic()
            models[f"{arm}-s{seed}"] = run_ppo(root, suite_dir, sft_model, arm, seed, args.quick)
            seconds[f"PPO {arm} s{seed}"] = time.monotonic() - start

    start = time.monotonic()
    samples = 1 if args.quick else args.samples
    results = {
        key: evaluate(model, suite_dir, samples, 1000, root / "eval" / f"{key}.jsonl")
        for key, model in models.items()
    }
    seconds["held-out evaluation"] = time.monotonic() - start

    text = report(root, suite_dir, raw_argv, args.seeds, args.control_seeds, results, seconds, load)
    target = root / "report.md" if args.quick else args.report
    learning_common.publish(text, target, lambda dest: save_raw(root, results, dest))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
