"""The base-rate report of discovery by amplification, drawn from its result files alone
(`bench/results/amplification_base_rate/rung-<k>_summary.json`, one per measured rung)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from speed_learning import amplification as amp


def pct(x: float, digits: int = 2) -> str:
    return f"{100 * x:.{digits}f}%"


def summaries(results: Path) -> list[dict[str, Any]]:
    def rung(path: Path) -> int:
        return int(path.stem.removeprefix("rung-").removesuffix("_summary"))

    paths = sorted(results.glob("rung-*_summary.json"), key=rung)
    return [json.loads(p.read_text(encoding="utf-8")) for p in paths]


def rung_table(rungs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| rung | near-miss rows (SFT rows by edit) | T | validation answers applying "
        "| answers | cut while sampled | applying (of the rest) | fast edit (fast + partial) "
        "| p0 [95% exact interval] | `popcntq` anywhere | fast line anywhere | classes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in rungs:
        applied = {float(t["temperature"]): t for t in s["exploration"]["trials"]}
        edits = ", ".join(f"{k} {v}" for k, v in sorted(s["sft_rows"].items()))
        for t, r in s["temperatures"].items():
            v = applied.get(float(t))
            val = "-" if v is None else f"{pct(v['applied_share'], 0)} of {v['answers']}"
            classes = ", ".join(f"{k} {n}" for k, n in r["classes"].items())
            lines.append(
                f"| {s['rung']} | {s['near_rows']} ({edits}) | {t} | {val} | {r['answers']} "
                f"| {r['cut']} | {applying(r)} | {r['fast_edit']} "
                f"| {pct(r['p0'])} [{pct(r['p0_low'])}, {pct(r['p0_high'])}] "
                f"| {r['popcntq_text']} | {r['fast_line_text']} | {classes} |"
            )
    return lines


def applying(r: dict[str, Any]) -> str:
    rest = r["answers"] - r["cut"]
    return "-" if rest == 0 else f"{pct(r['applies'] / rest, 1)} of {rest}"


def cut_lines(rungs: list[dict[str, Any]]) -> list[str]:
    """Where answers were cut, as written when cut (a line is cut at its first characters
    that no kept line starts with)."""
    out = []
    for s in rungs:
        for t, r in s["temperatures"].items():
            at = r.get("cut_at", {})
            cuts = ", ".join(f"`{json.dumps(line)[1:-1]}` {n}" for line, n in at.items())
            out.append(f"- Rung {s['rung']}, T = {t}: {cuts or 'none cut'}.")
    return out


def implication(s: dict[str, Any]) -> str:
    """What the rung's p0 implies for the PPO arms' length (20 / p0 rollouts per seed)."""
    parts = []
    for t, r in s["temperatures"].items():
        if r["p0"] > 0:
            parts.append(
                f"T = {t}: 20 / {pct(r['p0'])} = {r['rollouts_needed']:,} rollouts per seed, "
                f"{r['steps_needed']:,} steps of {amp.ROLLOUTS_PER_STEP}"
            )
        else:
            parts.append(
                f"T = {t}: p0 = 0 of {r['answers']:,}, so no finite count; even at the "
                f"interval's upper end ({pct(r['p0_high'])}) it would be at least "
                f"{r['rollouts_needed_at_high']:,} rollouts per seed"
            )
    return "; ".join(parts) + "."


def verdict_line(s: dict[str, Any]) -> str:
    d = amp.decision(s)
    low, high = (pct(x, 1) for x in amp.P0_RANGE)
    if d["verdict"] == "lands":
        return (
            f"Rung {s['rung']} lands: p0 is in [{low}, {high}] at a temperature whose validation "
            f"answers apply at least half the time; the PPO arms' temperature is "
            f"{d['temperature']} (the highest such)."
        )
    if d["verdict"] == "above":
        return (
            f"Rung {s['rung']} overshoots: p0 is above {high} at a checked temperature and in "
            "range at none; the pre-registered midpoint rung comes next."
        )
    nxt = s["rung"] + 1
    step = (
        f"the next rung is {nxt} ({amp.LADDER[nxt]} near-miss rows)"
        if nxt < len(amp.LADDER)
        else "it is the ladder's last rung: the ladder ends without a landing"
    )
    return (
        f"Rung {s['rung']} does not land: p0 is below {low} at every checked temperature "
        f"(or in range only where fewer than half the validation answers apply); {step}."
    )


def provenance(rungs: list[dict[str, Any]]) -> list[str]:
    lines = []
    for s in rungs:
        sft = s.get("sft", {})
        times = ", ".join(f"{k} {v / 60:.1f} min" for k, v in s["timings_s"].items())
        seeds = ", ".join(f"T = {t}: {r['seed']}" for t, r in s["temperatures"].items())
        lines.append(
            f"- Rung {s['rung']}: warm start trained at commit {sft.get('commit', '?')} by "
            f"`{sft.get('command', '?')}`, started {sft.get('started', '?')}"
            + resumed_words(sft)
            + f". Answers sampled by `{s.get('command', '?')}`, seeds {seeds}. Wall time per "
            f"phase, as logged by the invocation that ran it (a resumed SFT: its resumed part "
            f"only): {times}."
            + sft_words(s.get("sft_log", {}))
        )
    return lines


def resumed_words(sft: dict[str, Any]) -> str:
    resumed = sft.get("resumed", [])
    return "".join(
        f", resumed at commit {r['commit']} by `{r['command']}`, {r['started']}"
        + (f" ({r['note']})" if r.get("note") else "")
        for r in resumed
    )


def sft_words(log: dict[str, Any]) -> str:
    if not log.get("steps"):
        return ""
    redone = log["steps_redone_after_resume"]
    again = f"; {redone} steps logged twice (resumed from a checkpoint)" if redone else ""
    return (
        f" SFT: {log['steps']} steps, their logged step times summing to "
        f"{log['step_time_s'] / 60:.1f} min{again}; final training loss "
        f"{log['final_train_loss']:.3f}."
    )


def example_lines(rungs: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for s in rungs:
        for t, r in s["temperatures"].items():
            for kind, texts in r["examples"].items():
                for text in texts[:1]:
                    lines += [f"Rung {s['rung']}, T = {t}, {kind.replace('_', ' ')}:", ""]
                    lines += ["````", text, "````", ""]
    return lines or ["No answer at any temperature holds `popcntq`.", ""]


def report(results: Path, load: tuple[float, ...] | None) -> str:
    rungs = summaries(results)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_words = "" if load is None else f"; load average at the end {load[0]:.2f}"
    out = [
        "# Discovery by amplification, step 1: the warm start's base rate of the fast edit",
        "",
        "Pre-registered in `docs/training.md` (\"Pre-registered: discovery by "
        "amplification\"), committed before any of these numbers was measured. p0 is the "
        "share of the discovery warm start's answers for the 32 training programs that hold "
        "the fast edit (`popcntq %rdi, %rax` at one or more `__popcountdi2` call sites, "
        "nothing else changed: the family's classifier, `fast` or `partial`), read from the "
        "answer's text: no timing. 63 answers per program (2,016) at each candidate rollout "
        "temperature, seeded; interval: exact (Clopper-Pearson) 95%. The validation column "
        "is the exploration rule's sample (4 answers per validation program), which the "
        "ladder's landing check and the PPO arms' temperature use. `popcntq` anywhere and "
        "fast line anywhere count answers whose text holds the mnemonic, or the whole fast "
        "line as an added line, whatever else they do (a description, not p0).",
        "",
        f"- Rendered {stamp} by `bench/amplification_base_rate.py`{load_words}; raw rows "
        "(one per answer: program, kernel template, temperature, sample index, class, "
        "whether the diff applies) and summaries in `amplification_base_rate/`.",
        *provenance(rungs),
        "",
        "## Base rate per rung and temperature",
        "",
        *rung_table(rungs),
        "",
        "Cut answers by the line they were cut at, as far as it was written (an added line is "
        "cut at its first characters that neither the fast line nor a baseline line starts "
        "with; a deleted line at its first characters that the call line does not start "
        "with, so `cut_deletes_other` holds deletions cut before their kind shows):",
        "",
        *cut_lines(rungs),
        "",
        "## The ladder",
        "",
        *[f"- {verdict_line(s)}" for s in rungs],
        "",
        "## What it implies for the PPO arms",
        "",
        *[f"- Rung {s['rung']}: {implication(s)}" for s in rungs],
        "",
        "## Examples",
        "",
        *example_lines(rungs),
    ]
    return "\n".join(out).rstrip() + "\n"
