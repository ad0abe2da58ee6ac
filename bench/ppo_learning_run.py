"""Format-validity learning run on the real task: a CPU-size looped policy, SFT warm start,
then PPO on the sandboxed execution reward (untimed); build, pass and reward on held-out
programs before and after. What it measures is whether answers are valid diffs that build
and pass, not speed: its SFT targets only remove alignment directives, so a valid answer is
essentially the baseline (see the report's headline).

    .venv/bin/python bench/ppo_learning_run.py            # the run and its report
    .venv/bin/python bench/ppo_learning_run.py --quick    # a few steps of each phase (plumbing)

Phases (each resumes from its output directory, so rerunning the command continues a run
that was stopped; a finished phase is not repeated):
1. Tokenizer: byte-level BPE (2,048 entries) learnt on the training split only (C sources and
   gcc -O0..-O3 assembly); held-out programs never shape the vocabulary.
2. SFT (`bench/learning_run/sft.yaml`): a fresh PLT model (R = 2) learns to answer the `diff`
   prompt with a unified diff against the -O3 baseline.
3. PPO (`bench/learning_run/ppo.yaml`) from the SFT model on `reward: execution`: every answer
   is applied to the baseline, assembled, linked and run on all tests in the sandbox. The
   step-0 validation is the SFT model (before PPO); the last one is after.
   Validations during training use the validation split only: it is the one looked at
   while tuning the recipe.
4. Final evaluation on the test split, untouched until then: one answer per test program
   from the SFT model and from the PPO model (same seed and temperature), judged and timed
   against the baseline in the sandbox (the PPO reward itself is not timed at this size).
5. Report: Markdown with a headline naming what was measured, the validation table at every
   validation, the training curve and the timed test answers; the raw metrics (SFT and PPO
   metrics.jsonl, timed answers) are copied next to it, in `ppo_learning_run/`.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import learning_common  # noqa: E402
from learning_common import fmt  # noqa: E402

CONFIG_DIR = HERE / "learning_run"
TOKENIZER_VOCAB = 2048


def build_tokenizer(out: Path) -> Path:
    """The BPE tokenizer of the run, learnt once from the training split."""
    from asmopt.programs import load_builtin_suite

    return learning_common.build_tokenizer(
        out, load_builtin_suite().select(split="train"), TOKENIZER_VOCAB
    )


def run_sft(out: Path, tokenizer: Path, quick: bool) -> dict[str, Any]:
    from asmopt.train.config import SFTConfig, load_config
    from asmopt.train.sft import train_sft

    cfg = load_config(SFTConfig, CONFIG_DIR / "sft.yaml")
    cfg.output_dir = str(out)
    cfg.tokenizer = str(tokenizer)
    if quick:
        cfg.total_steps, cfg.eval_every, cfg.save_every, cfg.val_max_rows = 4, 2, 2, 2
    return train_sft(cfg, progress=sys.stderr.isatty())


def run_ppo(out: Path, model: Path, quick: bool) -> dict[str, Any]:
    from asmopt.train.config import PPOConfig, load_config
    from asmopt.train.ppo import train_ppo

    cfg = load_config(PPOConfig, CONFIG_DIR / "ppo.yaml")
    cfg.output_dir = str(out)
    cfg.model = str(model)
    if quick:
        cfg.total_steps, cfg.eval_every, cfg.save_every = 2, 1, 1
        cfg.val_max_rows, cfg.val_samples_per_prompt = 2, 1
        cfg.prompts_per_step, cfg.rollout_batch_size, cfg.mini_batch_size = 2, 2, 2
    return train_ppo(cfg, progress=sys.stderr.isatty())


def time_answers(
    model_dir: Path, ppo_config: Path, split: str = "test", seed: int = 0
) -> list[dict[str, Any]]:
    """One sampled answer per program of `split`, judged and timed (interleaved CPU time)."""
    from dataclasses import replace

    from asmopt.programs import load_builtin_suite
    from asmopt.reward.service import REWARD_TIMING, ScoreConfig, score_one

    answers = learning_common.sample_answers(
        model_dir, ppo_config, f"suite:{split}", seed=seed, batch_size=64
    )
    suite = load_builtin_suite()
    score = ScoreConfig(
        reward="supercoder-design1",
        measure="time",
        edit_format="diff",
        timing=replace(REWARD_TIMING, budget_s=20.0),
    )
    out = []
    for row, answer, _ in answers:
        result = score_one(suite.get(row["program_id"]), answer, None, score)
        removed = sum(
            line.startswith("-") and not line.startswith("---") for line in answer.splitlines()
        )
        out.append(
            {
                "program": row["program_id"],
                "verdict": result.verdict,
                "removed_lines": removed,
                "speedup": result.raw_speedup,
                "low": result.speedup_low,
                "high": result.speedup_high,
                "answer": answer,
            }
        )
    return out


def timed_table(title: str, timed: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"{title}:",
        "",
        "| program | verdict | lines removed | speedup (95% interval) |",
        "|---|---|---|---|",
    ]
    for t in timed:
        interval = (
            f"{t['speedup']:.3f} ({t['low']:.3f}-{t['high']:.3f})"
            if t["speedup"] is not None and t["low"] is not None
            else "-"
        )
        lines.append(f"| {t['program']} | {t['verdict']} | {t['removed_lines']} | {interval} |")
    return [*lines, ""]


# --------------------------------------------------------------------------- report
def headline(ppo_val: list[dict[str, Any]], timed: dict[str, list[dict[str, Any]]]) -> str:
    """One sentence that names what was measured (validity) and what was not (speed)."""
    first, last = (ppo_val[0], ppo_val[-1]) if ppo_val else ({}, {})
    after = timed.get("after PPO", [])
    passed = [t for t in after if t["verdict"] == "pass"]
    faster = [t for t in passed if t["low"] is not None and t["low"] > 1.0]
    slower = [t for t in passed if t["high"] is not None and t["high"] < 1.0]
    return (
        f"**Headline: format validity, not speed.** Validation pass rate (answers that are "
        f"valid diffs that build and pass) {fmt(first.get('pass_rate'))} before PPO -> "
        f"{fmt(last.get('pass_rate'))} after; on the test split after PPO, {len(passed)} of "
        f"{len(after)} timed answers pass, {len(faster)} significantly faster than -O3, "
        f"{len(slower)} significantly slower. The SFT targets only remove alignment "
        "directives, so a valid answer is essentially the baseline: this run shows the loop "
        "learns validity, and says nothing about learning speed. One seed, and a handful of "
        "programs each answered several times (answers of one program are not independent): "
        "the change is described, not tested."
    )


def save_raw(root: Path, timed: dict[str, list[dict[str, Any]]], dest: Path) -> None:
    """The run's raw metrics beside its report, so every number in it can be recomputed."""
    import json
    import shutil

    from asmopt.train.metrics_log import METRICS_FILE

    dest.mkdir(parents=True, exist_ok=True)
    for phase in ("sft", "ppo"):
        if (root / phase / METRICS_FILE).is_file():
            shutil.copyfile(root / phase / METRICS_FILE, dest / f"{phase}_metrics.jsonl")
    with (dest / "timed_test_answers.jsonl").open("w", encoding="utf-8") as fh:
        for model, rows in timed.items():
            for row in rows:
                fh.write(json.dumps({"model": model, **row}) + "\n")


def _outcomes(record: dict[str, Any]) -> str:
    shares = sorted(
        ((k.split("/", 1)[1], v) for k, v in record.items() if k.startswith("outcome/") and v),
        key=lambda item: -item[1],
    )
    return ", ".join(f"{name} {share:.0%}" for name, share in shares)


def report(
    root: Path,
    args: argparse.Namespace,
    seconds: dict[str, float],
    load: tuple[float, ...],
    timed: dict[str, list[dict[str, Any]]],
) -> str:
    """The learning run's report (Markdown).

    Long because it writes the document's sections top to bottom, in the order a reader
    meets them, so the whole layout reads in one place."""
    from asmopt.train.metrics_log import read_metrics

    sft = read_metrics(root / "sft")
    ppo = read_metrics(root / "ppo")
    sft_train = [r for r in sft if r["kind"] == "train"]
    sft_val = [r for r in sft if r["kind"] == "val"]
    ppo_train = [r for r in ppo if r["kind"] == "train"]
    ppo_val = [r for r in ppo if r["kind"] == "val"]
    import torch

    from asmopt.provenance import git_commit

    commit = git_commit()

    lines = [
        "# Format-validity learning run: SFT warm start, then PPO on the untimed execution reward",
        "",
        headline(ppo_val, timed),
        "",
        f"- {time.strftime('%Y-%m-%d %H:%M')}, commit {commit}; command: "
        f"`{' '.join(['.venv/bin/python bench/ppo_learning_run.py', *args.argv])}`",
        f"- torch {torch.__version__}, {platform.machine()}, {os.cpu_count()} logical CPUs; "
        f"load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}",
        "- configs: `bench/learning_run/sft.yaml`, `bench/learning_run/ppo.yaml`; wall time "
        + ", ".join(f"{k} {v / 60:.1f} min" for k, v in seconds.items())
        + " (this invocation; a resumed phase counts only its remainder); summed step times "
        f"of the runs: SFT {sum(r.get('time/step_s', 0) for r in sft_train) / 60:.1f} min, "
        f"PPO {sum(r.get('time/step_s', 0) for r in ppo_train) / 60:.1f} min (validation and "
        "scoring of held-out answers not included)",
        "",
        "## Validation programs (the split used while tuning)",
        "",
        "Sampled at the rollout temperature (0.5), `val_samples_per_prompt` answers per "
        "program; step 0 is the SFT model before PPO. Rates are over judged answers "
        "(build = applies, assembles and links; pass = every test's output right).",
        "",
        "| PPO step | answers | reward mean | build rate | pass rate | outcomes | answer tokens |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in ppo_val:
        lines.append(
            f"| {r['step']} | {r.get('rows')} | {fmt(r.get('reward/mean'))} | "
            f"{fmt(r.get('build_rate'))} | {fmt(r.get('pass_rate'))} | {_outcomes(r)} | "
            f"{fmt(r.get('response/length_mean'), 0)} |"
        )
    lines += [
        "",
        "## PPO training curve (training programs)",
        "",
        "| step | reward mean | build rate | pass rate | answer tokens | truncated | "
        "approx KL | clip frac |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in ppo_train:
        lines.append(
            f"| {r['step']} | {fmt(r.get('reward/mean'))} | {fmt(r.get('build_rate'))} | "
            f"{fmt(r.get('pass_rate'))} | {fmt(r.get('response/length_mean'), 0)} | "
            f"{fmt(r.get('response/truncated_frac'), 2)} | {fmt(r.get('policy/approx_kl'), 4)} | "
            f"{fmt(r.get('policy/clipfrac'), 3)} |"
        )
    lines += [
        "",
        "## Timed answers on the test split (untouched until this final evaluation)",
        "",
        "One answer per program at the rollout temperature, same seed for both models; each "
        "is applied, built, run on every test and timed against the -O3 baseline "
        "(interleaved CPU time, adaptive to a +-2% interval or 20 s).",
        "",
    ]
    for name, rows in timed.items():
        lines += timed_table(name, rows)
    example = next((t for t in timed.get("after PPO", []) if t["verdict"] == "pass"), None)
    if example is not None:
        lines += [
            f"An answer of the PPO model ({example['program']}):",
            "",
            "````",
            example["answer"].strip(),
            "````",
        ]
    lines += [
        "",
        "## SFT warm start",
        "",
        "| step | train loss | held-out loss | held-out token accuracy |",
        "|---|---|---|---|",
    ]
    val_by_step = {r["step"]: r for r in sft_val}
    if 0 in val_by_step:
        v = val_by_step[0]
        lines.append(
            f"| 0 (untrained) | - | {fmt(v.get('loss'))} | {fmt(v.get('token_accuracy'))} |"
        )
    for r in sft_train:
        v = val_by_step.get(r["step"], {})
        if r["step"] in val_by_step or r["step"] in (1, sft_train[-1]["step"]):
            lines.append(
                f"| {r['step']} | {fmt(r.get('loss'))} | {fmt(v.get('loss'))} | "
                f"{fmt(v.get('token_accuracy'))} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out-dir", type=Path, default=Path("runs/ppo-learning-run"))
    parser.add_argument("--quick", action="store_true", help="a few steps of each phase")
    parser.add_argument(
        "--report",
        type=Path,
        default=HERE / "results" / "ppo_learning_run.md",
        help="where the Markdown report goes (--quick: next to the run instead)",
    )
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    root: Path = args.out_dir / ("quick" if args.quick else "full")
    load = os.getloadavg()
    seconds: dict[str, float] = {}

    start = time.monotonic()
    tokenizer = build_tokenizer(root / "tokenizer")
    seconds["tokenizer"] = time.monotonic() - start
    start = time.monotonic()
    sft = run_sft(root / "sft", tokenizer, args.quick)
    seconds["SFT"] = time.monotonic() - start
    start = time.monotonic()
    sft_model = Path(sft.get("final_model") or root / "sft" / "final")
    ppo = run_ppo(root / "ppo", sft_model, args.quick)
    seconds["PPO"] = time.monotonic() - start
    start = time.monotonic()
    ppo_model = Path(ppo.get("final_model") or root / "ppo" / "final")
    timed = {
        "before PPO (SFT model)": time_answers(sft_model, CONFIG_DIR / "ppo.yaml", "test"),
        "after PPO": time_answers(ppo_model, CONFIG_DIR / "ppo.yaml", "test"),
    }
    seconds["timing"] = time.monotonic() - start

    text = report(root, args, seconds, load, timed)
    target = root / "report.md" if args.quick else args.report
    learning_common.publish(text, target, lambda dest: save_raw(root, timed, dest))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
