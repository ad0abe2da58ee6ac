"""Speed-learning run: does PPO on the timed reward make held-out answers faster?

A task family where a faster correct answer exists and differs from the baseline (the
popcount family, `bench/speed_learning/family.py`: gcc -O3 calls libgcc's `__popcountdi2`
where one `popcnt` instruction does the same), a CPU-size looped policy (PLT, R = 2), an SFT
warm start that writes three edits in equal shares (fast and correct, correct and no faster,
fast and wrong), then PPO on the sandboxed execution reward, timed. A control arm runs the
same PPO with the untimed reward, which pays the fast edit and the alignment edit the same.

    .venv/bin/python bench/speed_learning_run.py                  # the run and its report
    .venv/bin/python bench/speed_learning_run.py --quick          # plumbing: a few steps
    .venv/bin/python bench/speed_learning_run.py --family rich    # the richer family
    .venv/bin/python bench/speed_learning_run.py \
        --answers bench/results/speed_learning_run/test_answers.jsonl  # baselines only
    .venv/bin/python bench/speed_learning_run.py --render-only    # the report, from raw rows

`--family rich` runs the same phases on the richer family (`speed_learning/rich_family.py`:
speedups that compose, one that no substitution writes, traps), whose warm start is shown
every set of a kernel's edits; `speed_learning/families.py` is what a family provides.

Phases (each resumes from its directory under --out-dir; a finished phase is not repeated):
1. Suite: the family written as a suite (56 programs, train/validation/test 4:1:2 per
   kernel), reference outputs from the -O3 build.
2. Tokenizer: byte-level BPE learnt on the training split only.
3. SFT rows (JSONL): per training program its three edits as unified diffs, checked to apply.
4. SFT (`bench/speed_learning/sft.yaml`), one warm start shared by every PPO run; each
   training run records the commit and command that started it (`run_meta.json`).
5. PPO (`bench/speed_learning/ppo.yaml`) per seed: timed arm (`measure: time`) and
   control arm (`measure: none`). Validation uses the validation split only.
6. Sampling on the test split, untouched until then: `--samples` answers per program from
   the SFT model and every PPO model (the rollout temperature, seeded), each scored once.
   `--answers FILE` skips phases 2-6 and takes the sampled answers from FILE.
7. Baselines (`bench/speed_learning/baselines.py`): the rule's answer per test program, and
   two independent timed scorings of every answer (`select`: what best-of-N picks on;
   `score`: what every row is scored on), resumable from their logs.
8. Report: one table of every row (rule, best-of-N, warm start, each PPO seed) on the
   `score` measurement, t-intervals over kernel templates, and one declared family of three
   comparisons (seeds averaged per template, exact sign-flip test over templates, Holm;
   `bench/speed_learning/stats.py`); raw data beside it. `--render-only` redraws the report
   from the committed raw rows alone.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import learning_common  # noqa: E402
from learning_common import fmt  # noqa: E402
from speed_learning import baselines, exploration, stats  # noqa: E402
from speed_learning.families import (  # noqa: E402
    FAMILIES,
    POPCOUNT,
    RICH,
    TaskFamily,
    classify_popcount,
    kernel_of,
)
from speed_learning.family import FAST_LINE  # noqa: E402

CONFIG_DIR = HERE / "speed_learning"
TOKENIZER_VOCAB = 2048
# The popcount family's warm-start edits per variant: `main` shows all three; `discovery`
# leaves out the fast edit, so a faster correct answer would have to come from PPO's own
# sampling. (Every family names its variants: `families.py`.)
VARIANT_EDITS = POPCOUNT.variants
EDITS = VARIANT_EDITS["main"]
ARMS = {"timed": "time", "control": "none"}
REPORT_NAMES = {
    ("popcount", "main"): "speed_learning_run.md",
    ("popcount", "discovery"): "speed_learning_discovery.md",
    ("rich", "main"): "rich_learning_run.md",
}
RUN_META = "run_meta.json"  # beside a run's metrics: the commit and command that trained it


# --------------------------------------------------------------------------- preparation
def build_suite(root: Path, family: TaskFamily = POPCOUNT) -> Path:
    dest = root / "suite"
    if (dest / "suite.json").is_file():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    return family.write_suite(dest)


def build_tokenizer(
    out: Path, suite_dir: Path, edits: tuple[str, ...] = EDITS, family: TaskFamily = POPCOUNT
) -> Path:
    """BPE learnt on the training split, the warm start's edits included (held-out
    programs, and an edit the warm start is not shown, never shape the vocabulary)."""
    from asmopt.programs import load_suite

    return learning_common.build_tokenizer(
        out,
        load_suite(suite_dir).select(split="train"),
        TOKENIZER_VOCAB,
        extra=lambda program, o3: [
            answer for _, answer in family.sft_answers(kernel_of(program), o3, edits)
        ],
    )


def sft_rows(
    suite_dir: Path,
    split: str,
    dest: Path,
    edits: tuple[str, ...] = EDITS,
    family: TaskFamily = POPCOUNT,
) -> Path:
    """Every program of `split` once per edit of `edits` it has (`family.sft_answers`), as
    unified diffs (context 0)."""
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
        program = suite.get(row["program_id"])
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        for edit, target in family.sft_answers(kernel_of(program), baseline, edits):
            completion = fenced_diff(baseline, target, 0)
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
def run_sft(root: Path, tokenizer: Path, quick: bool, threads: int = 0) -> Path:
    """The warm start (`sft.yaml`); `threads` > 0 replaces its thread count, which a run
    may change when it resumes (a loaded machine trains faster on fewer threads)."""
    from asmopt.train.config import SFTConfig, load_config
    from asmopt.train.sft import train_sft

    cfg = load_config(SFTConfig, CONFIG_DIR / "sft.yaml")
    cfg.num_threads = threads or cfg.num_threads
    cfg.output_dir = str(root / "sft")
    cfg.tokenizer = str(tokenizer)
    cfg.train_data = str(root / "data" / "sft_train.jsonl")
    cfg.val_data = str(root / "data" / "sft_validation.jsonl")
    if quick:
        cfg.total_steps, cfg.eval_every, cfg.save_every, cfg.val_max_rows = 4, 2, 2, 2
    final = root / "sft" / "final"
    if (final / "config.json").is_file():
        return final
    record_run(root / "sft")
    result = train_sft(cfg, progress=sys.stderr.isatty())
    return Path(result.get("final_model") or final)


def record_run(out: Path) -> None:
    """Write which commit and command start a training run into its directory, so a report
    can name what produced each model (a resumed run keeps its first record)."""
    from asmopt.provenance import git_commit

    out.mkdir(parents=True, exist_ok=True)
    if (out / RUN_META).is_file():
        return
    meta = {
        "commit": git_commit(),
        "command": " ".join(["bench/speed_learning_run.py", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    (out / RUN_META).write_text(json.dumps(meta) + "\n", encoding="utf-8")


def ppo_dir(root: Path, arm: str, seed: int) -> Path:
    return root / f"ppo-{arm}-s{seed}"


def run_ppo(
    root: Path,
    suite_dir: Path,
    model: Path,
    arm: str,
    seed: int,
    quick: bool,
    temperature: float | None = None,
) -> Path:
    from asmopt.train.config import PPOConfig, load_config
    from asmopt.train.ppo import train_ppo

    out = ppo_dir(root, arm, seed)
    final = out / "final"
    if (final / "config.json").is_file():
        return final
    cfg = load_config(PPOConfig, CONFIG_DIR / "ppo.yaml")
    cfg.output_dir = str(out)
    cfg.model = str(model)
    cfg.train_seed = seed
    cfg.suite = str(suite_dir)
    cfg.reward_options = {**cfg.reward_options, "suite": str(suite_dir), "measure": ARMS[arm]}
    if temperature is not None:
        cfg.temperature = cfg.val_temperature = temperature
    if quick:
        cfg.total_steps, cfg.save_every = 2, 1
        cfg.val_max_rows, cfg.val_samples_per_prompt = 2, 1
        cfg.prompts_per_step, cfg.rollout_batch_size, cfg.mini_batch_size = 2, 4, 4
    record_run(out)
    result = train_ppo(cfg, progress=sys.stderr.isatty())
    return Path(result.get("final_model") or final)


# --------------------------------------------------------------------------- evaluation
def classify(baseline: str, answer_asm: str | None) -> str:
    """The popcount family's edit label of an applied answer (`families.classify_popcount`)."""
    return classify_popcount(baseline, answer_asm)


def evaluate(
    model_dir: Path,
    suite_dir: Path,
    samples: int,
    seed: int,
    dest: Path,
    temperature: float | None = None,
    family: TaskFamily = POPCOUNT,
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
        temperature=temperature,
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
                "edit": family.classify(kernel_of(program), baseline, applied),
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
held_out_speedup = stats.held_out_speedup


def program_means(answers: list[dict[str, Any]]) -> dict[str, float]:
    """Mean held-out speedup of each test program's answers (in first-seen order)."""
    by_program: dict[str, list[float]] = {}
    for a in answers:
        by_program.setdefault(a["program"], []).append(held_out_speedup(a))
    return {k: sum(v) / len(v) for k, v in by_program.items()}


def templates_of(answers: list[dict[str, Any]]) -> dict[str, str]:
    """Each program's kernel template (the unit of analysis); a program without one is its
    own template."""
    return {a["program"]: a.get("kernel") or a["program"] for a in answers}


def template_values(answers: list[dict[str, Any]]) -> dict[str, float]:
    """One row's value per kernel template: the mean of its programs' mean speedups."""
    return stats.template_means(program_means(answers), templates_of(answers))


def arm_values(rows: dict[str, list[dict[str, Any]]], keys: list[str]) -> dict[str, float]:
    """Per-template values of an arm, its rows (seeds) averaged per template first."""
    return stats.seed_average([template_values(rows[k]) for k in keys])


def summarize(
    answers: list[dict[str, Any]], share: Callable[[str], bool] = POPCOUNT.share_labels
) -> dict[str, Any]:
    """Mean held-out speedup with its 95% t-interval over kernel templates (the answers of
    one program, and the programs of one template, are not independent: a template is one
    value), plus edit shares and rates; `fast_share` is the share of answers whose edit
    label `share` counts (the family's)."""
    values = program_means(answers)
    interval = stats.t_summary(list(template_values(answers).values()))
    n = len(answers)
    passed = [a for a in answers if a["verdict"] == "pass"]
    faster = [a for a in passed if a["low"] is not None and a["low"] > 1.0]
    slower = [a for a in passed if a["high"] is not None and a["high"] < 1.0]
    shares = {
        e: sum(a["edit"] == e for a in answers) / n for e in sorted({a["edit"] for a in answers})
    }
    return {
        "programs": len(values),
        "templates": interval["k"],
        "answers": n,
        "mean_speedup": interval["mean"],
        "low": interval["low"],
        "high": interval["high"],
        "pass_rate": len(passed) / n if n else 0.0,
        "faster_rate": len(faster) / n if n else 0.0,
        "slower_rate": len(slower) / n if n else 0.0,
        "fast_share": sum(v for e, v in shares.items() if share(e)),
        "edits": shares,
    }


def paired_gain(after: list[dict[str, Any]], before: list[dict[str, Any]]) -> dict[str, Any]:
    """`after` minus `before` on the same programs, one difference per kernel template
    (`stats.compare`: t-interval, sign-flip and t-test p); `gain` is the mean difference."""
    result = stats.compare(template_values(after), template_values(before))
    return {"gain": result["mean"], **result}


# A report's family: (label, the rows of the arm tested, the rows it is compared with).
Plan = list[tuple[str, list[str], list[str]]]


def timed_keys(rows: dict[str, list[dict[str, Any]]], seeds: list[int]) -> list[str]:
    return [f"timed-s{s}" for s in seeds if f"timed-s{s}" in rows]


def control_keys(rows: dict[str, list[dict[str, Any]]], control_seeds: list[int]) -> list[str]:
    return [f"control-s{s}" for s in control_seeds if f"control-s{s}" in rows]


def comparison_plan(
    rows: dict[str, list[dict[str, Any]]], seeds: list[int], control_seeds: list[int]
) -> Plan:
    """The report's declared family of three comparisons, the same in every report, each
    with the timed seeds averaged per template: timed PPO minus the rule, minus the warm
    start's best-of-N, and minus the untimed control (seeds averaged too), or, in a run
    without a control, minus the warm start it started from."""
    timed = timed_keys(rows, seeds)
    control = control_keys(rows, control_seeds)
    third = ("timed PPO minus untimed PPO", control) if control else None
    if third is None:
        third = ("timed PPO minus its warm start", ["sft"])
    return [
        ("timed PPO minus the rule", timed, ["rule"]),
        (f"timed PPO minus the warm start's best-of-{samples_per_program(rows)}", timed, [BEST_OF]),
        (third[0], timed, third[1]),
    ]


def samples_per_program(rows: dict[str, list[dict[str, Any]]]) -> int:
    """How many answers each test program has from a sampled model (the N of best-of-N)."""
    return len(rows["sft"]) // max(1, len(program_means(rows["sft"])))


def comparisons(rows: dict[str, list[dict[str, Any]]], plan: Plan) -> list[dict[str, Any]]:
    """Each planned comparison whose rows exist, tested over templates (seeds averaged
    first), with Holm over the family (`stats.family`)."""
    found = [
        (label, a, b) for label, a, b in plan if a and b and all(k in rows for k in [*a, *b])
    ]
    tested = stats.family(
        [stats.compare(arm_values(rows, a), arm_values(rows, b)) for _, a, b in found]
    )
    return [
        {"label": label, "row": a, "minus": b, **t}
        for (label, a, b), t in zip(found, tested, strict=True)
    ]


def per_seed_plan(
    rows: dict[str, list[dict[str, Any]]], seeds: list[int], control_seeds: list[int]
) -> list[tuple[str, str]]:
    """The per-seed differences a report shows outside its family (descriptive, not
    corrected): each timed seed minus the rule, best-of-N, the warm start and the untimed
    seed of the same number; each untimed seed minus the rule."""
    pairs = [(t, b) for t in timed_keys(rows, seeds) for b in ("rule", BEST_OF, "sft")]
    pairs += [(f"timed-s{s}", f"control-s{s}") for s in seeds if s in control_seeds]
    pairs += [(c, "rule") for c in control_keys(rows, control_seeds)]
    return [(a, b) for a, b in pairs if a in rows and b in rows]


def per_seed(
    rows: dict[str, list[dict[str, Any]]], pairs: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """`paired_gain` of every pair, uncorrected: what each seed did, shown, not tested."""
    return [{"row": a, "minus": b, **paired_gain(rows[a], rows[b])} for a, b in pairs]


# --------------------------------------------------------------------------- baselines
BEST_OF = "sft-best"
BEST_OF_ORACLE = "sft-best-oracle"
PASSES = ("select", "score")


def rule_rows(
    programs: dict[str, Any], base: dict[str, str], family: TaskFamily = POPCOUNT
) -> list[dict[str, Any]]:
    """The rule's one answer per test program, as a row like a model's answer; where the
    rule changes nothing the baseline is kept (`baselines.KEPT`)."""

    def answer(pid: str) -> str:
        try:
            return baselines.rule_answer(base[pid], family.rule)
        except ValueError:
            return baselines.KEPT

    return [
        {
            "program": pid,
            "kernel": program.meta.get("kernel"),
            "answer": answer(pid),
            "answer_tokens": None,
        }
        for pid, program in programs.items()
    ]


def scored_row(
    row: dict[str, Any],
    key: str,
    logs: dict[str, baselines.MeasurementLog],
    baseline: str,
    family: TaskFamily = POPCOUNT,
) -> dict[str, Any]:
    """A table row: the answer, its edit class, both new measurements (`select`, `score`),
    the committed one when it had one (`committed`), and the `score` measurement's fields
    at top level (what the table's statistics read)."""
    measured = {name: _public(logs[name].rows[key]) for name in PASSES}
    out = {
        "program": row["program"],
        "kernel": row["kernel"],
        "edit": "kept"
        if row["answer"] == baselines.KEPT
        else family.classify(row["kernel"], baseline, baselines.applied(baseline, row["answer"])),
        "committed_edit": row.get("edit"),
        "answer_tokens": row.get("answer_tokens"),
        "answer": row["answer"],
        **measured,
        **measured["score"],
    }
    if "verdict" in row:
        out["committed"] = {f: row.get(f) for f in ("verdict", "reward", "speedup", "low", "high")}
    return out


def _public(measured: dict[str, Any]) -> dict[str, Any]:
    return {f: measured.get(f) for f in baselines.MEASURED_FIELDS}


def best_rows(rows: list[dict[str, Any]], pick_on: str) -> list[dict[str, Any]]:
    """Best-of-N per program: of a program's N answers, the one measurement `pick_on` ranks
    first, scored on the `score` measurement."""
    by_program: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_program.setdefault(r["program"], []).append(r)
    return [{**baselines.best_of(rs, pick_on), "picked_on": pick_on} for rs in by_program.values()]


def remeasure(
    root: Path,
    suite_dir: Path,
    answers: dict[str, list[dict[str, Any]]],
    family: TaskFamily = POPCOUNT,
) -> dict[str, list[dict[str, Any]]]:
    """The baselines phase: the rule's answer for every test program, then two independent
    timed scorings of every answer (the models' and the rule's): `select`, the one
    best-of-N picks on, and `score`, the one every row of the table is scored on. Identical
    applied answers of a program share one measurement per pass. Each pass resumes from its
    log under `root/baselines/`."""
    from asmopt.programs import load_suite
    from asmopt.toolchain import DEFAULT_O3_FLAGS, default_toolchain

    programs = {p.id: p for p in load_suite(suite_dir).select(split="test")}
    toolchain = default_toolchain()
    base = {pid: toolchain.baseline_assembly(p, DEFAULT_O3_FLAGS) for pid, p in programs.items()}
    rows = {"rule": rule_rows(programs, base, family), **answers}
    keys = {
        model: [baselines.answer_key(r["program"], base[r["program"]], r["answer"]) for r in rs]
        for model, rs in rows.items()
    }
    items = [
        (programs[r["program"]], r["answer"], key)
        for model, rs in rows.items()
        for r, key in zip(rs, keys[model], strict=True)
    ]
    logs = {name: baselines.MeasurementLog(root / "baselines" / f"{name}.jsonl") for name in PASSES}
    for name in PASSES:
        baselines.measure_pass(items, logs[name], lambda text: print(text, file=sys.stderr))
    out = {
        model: [
            scored_row(r, key, logs, base[r["program"]], family)
            for r, key in zip(rs, keys[model], strict=True)
        ]
        for model, rs in rows.items()
    }
    out[BEST_OF] = best_rows(out["sft"], "select")
    out[BEST_OF_ORACLE] = best_rows(out["sft"], "score")
    return out


def load_answers(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Sampled answers by model from a `test_answers.jsonl` (the committed raw data)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.setdefault(row.pop("model"), []).append(row)
    return out


# --------------------------------------------------------------------------- report
ROW_ORDER_HEAD = ("rule", BEST_OF, BEST_OF_ORACLE, "sft")
# A PPO arm's seeds pooled into one table row (every seed's answers together).
POOLED = {"timed": "timed-pooled", "control": "control-pooled"}


def row_order(seeds: list[int], control_seeds: list[int]) -> list[str]:
    return [
        *ROW_ORDER_HEAD,
        *(f"timed-s{s}" for s in seeds),
        POOLED["timed"],
        *(f"control-s{s}" for s in control_seeds),
        POOLED["control"],
    ]


def with_pooled(
    rows: dict[str, list[dict[str, Any]]], seeds: list[int], control_seeds: list[int]
) -> dict[str, list[dict[str, Any]]]:
    """The tables' rows: every row, plus each PPO arm with more than one seed pooled. Every
    seed has the same number of answers per program, so the pooled row's program means
    are the seed average, the value the family's comparisons use."""
    out = dict(rows)
    arms = (("timed", timed_keys(rows, seeds)), ("control", control_keys(rows, control_seeds)))
    for arm, keys in arms:
        if len(keys) > 1:
            out[POOLED[arm]] = [a for k in keys for a in rows[k]]
    return out


def row_name(key: str) -> str:
    """A row's name in the tables (both families' rule is the same substitution)."""
    names = {
        "rule": POPCOUNT.rule_name,
        BEST_OF: "SFT best-of-4, picked on a separate timed scoring",
        BEST_OF_ORACLE: "SFT best-of-4, picked on the scored measurement (oracle)",
        "sft": "SFT warm start (before PPO)",
        POOLED["timed"]: "PPO timed, seeds pooled (the seed average)",
        POOLED["control"]: "PPO untimed, seeds pooled (the seed average)",
    }
    if key in names:
        return names[key]
    return key.replace("timed-s", "PPO timed, seed ").replace("control-s", "PPO untimed, seed ")


def _interval(s: dict[str, Any]) -> str:
    if s["low"] is None:
        return f"{s['mean_speedup']:.3f}"
    return f"{s['mean_speedup']:.3f} [{s['low']:.3f}, {s['high']:.3f}]"


def _signed(c: dict[str, Any]) -> str:
    if c["low"] is None:
        return f"{c['mean']:+.3f}"
    return f"{c['mean']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"


def _flip_p(c: dict[str, Any]) -> str:
    """An exact sign-flip p as the fraction it is (of 2^k patterns) and as a decimal."""
    patterns = 2 ** c["k"]
    return f"{round(c['p'] * patterns)}/{patterns} = {c['p']:.4f}"


def _t_p(p: float | None) -> str:
    return "-" if p is None else f"{p:.4f}"


def committed_mean(rows: list[dict[str, Any]]) -> str:
    """The row's mean speedup on the measurement committed with the answers (the first
    evaluation), for a row that has one: how much a re-measurement moves the numbers."""
    if not rows or "committed" not in rows[0]:
        return "-"
    return f"{summarize([{**r, **r['committed']} for r in rows])['mean_speedup']:.3f}"


def held_out_table(
    rows: dict[str, list[dict[str, Any]]], order: list[str], family: TaskFamily = POPCOUNT
) -> list[str]:
    """The main table: every row on the same held-out programs and the same measurement."""
    lines = [
        "| row | answers | mean speedup [95% t-interval over templates] | first measurement | "
        f"pass | significantly faster | significantly slower | {family.share_name} | edits |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key in order:
        if key not in rows:
            continue
        s = summarize(rows[key], family.share_labels)
        edits = ", ".join(
            f"{e} {v:.0%}" for e, v in sorted(s["edits"].items(), key=lambda x: -x[1])
        )
        lines.append(
            f"| {row_name(key)} | {s['answers']} | {_interval(s)} | {committed_mean(rows[key])} "
            f"| {s['pass_rate']:.0%} | {s['faster_rate']:.0%} | {s['slower_rate']:.0%} | "
            f"{s['fast_share']:.0%} | {edits} |"
        )
    return lines


def family_table(comps: list[dict[str, Any]]) -> list[str]:
    """The declared family: each comparison's difference over templates, both tests and
    their Holm-adjusted p; `holds` is read from the sign-flip test's."""
    lines = [
        "| # | comparison (seeds averaged per template) | mean difference [95% t-interval] | "
        "templates above / below / equal | sign-flip p (exact) | Holm p | t-test p | "
        "Holm p (t-test) | holds after Holm (sign-flip, 0.05) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n, c in enumerate(comps, 1):
        lines.append(
            f"| F{n} | {c['label']} | {_signed(c)} | {c['above']} / {c['below']} / "
            f"{c['equal']} | {_flip_p(c)} | {c['holm_p']:.4f} | {_t_p(c['p_t'])} | "
            f"{c['holm_p_t']:.4f} | {'yes' if c['holds'] else 'no'} |"
        )
    return lines


def per_seed_table(per: list[dict[str, Any]]) -> list[str]:
    """Every per-seed difference, uncorrected and outside the family: a description of
    what each seed did, with no verdict."""
    lines = [
        "| row minus row | mean difference [95% t-interval] | templates above / below / equal "
        "| sign-flip p (uncorrected) |",
        "|---|---|---|---|",
    ]
    for c in per:
        lines.append(
            f"| {row_name(c['row'])} minus {row_name(c['minus'])} | {_signed(c)} | "
            f"{c['above']} / {c['below']} / {c['equal']} | {_flip_p(c)} |"
        )
    return lines


def family_statement(comps: list[dict[str, Any]], templates: int) -> str:
    """The paragraph that names the family before any number of the report."""
    names = "; ".join(f"F{n} {c['label']}" for n, c in enumerate(comps, 1))
    return (
        f"**The comparisons this report tests** (one family of {len(comps)}, named before "
        f"any number): {names}. Each PPO arm's seeds are averaged per kernel template first, "
        f"so every comparison is {templates} differences, one per template. The test is the "
        f"exact sign-flip test over the {templates} templates (all {2**templates} sign "
        f"patterns; the smallest two-sided p is {2}/{2**templates}) with Holm's correction "
        "over the family (family-wise 5%); the paired t-test over templates is shown beside "
        "it, and its 95% interval is the one printed. The family was fixed in a re-analysis "
        "after these runs' results had been read (the same three in every learning-run "
        "report: the rule, best-of-N, and the untimed control, or the warm start where a run "
        "has no control), so it is declared, not pre-registered before the runs. Every "
        "other difference in this report is a description: no verdict rests on it."
    )


def family_results(comps: list[dict[str, Any]]) -> str:
    """Each comparison of the family with both tests and its verdict, as one sentence."""
    parts = []
    for n, c in enumerate(comps, 1):
        verdict = (
            f"holds after Holm ({'positive' if c['mean'] > 0 else 'negative'})"
            if c["holds"]
            else "does not hold after Holm"
        )
        t_holds = c["holm_p_t"] <= stats.ALPHA
        t_word = "rejects" if t_holds else "does not reject"
        parts.append(
            f"F{n} ({c['label']}) {_signed(c)}, above on {c['above']} and below on "
            f"{c['below']} of {c['k']} templates, sign-flip p = {_flip_p(c)}, Holm p = "
            f"{c['holm_p']:.4f}: {verdict}; the t-test beside it {t_word} (p = "
            f"{_t_p(c['p_t'])}, Holm p = {c['holm_p_t']:.4f})"
            + (
                ": the direction is the same on the templates, its size too uneven across "
                "them for the t-interval to exclude 0"
                if c["holds"] and not t_holds
                else ""
            )
        )
    held = sum(c["holds"] for c in comps)
    verb = "holds" if held == 1 else "hold"
    return "; ".join(parts) + f". {held} of the {len(comps)} comparisons {verb}."


def arm_interval(rows: dict[str, list[dict[str, Any]]], keys: list[str]) -> str:
    """An arm's seed-averaged mean speedup with its t-interval over templates."""
    s = stats.t_summary(list(arm_values(rows, keys).values()))
    return _interval({"mean_speedup": s["mean"], "low": s["low"], "high": s["high"]})


def per_kernel_table(rows: dict[str, list[dict[str, Any]]], order: list[str]) -> list[str]:
    keys = [k for k in order if k in rows]
    lines = ["| kernel | " + " | ".join(keys) + " |", "|" + "---|" * (1 + len(keys))]
    for kernel in sorted({a["kernel"] for a in rows["sft"]}):
        cells = []
        for key in keys:
            sub = [a for a in rows[key] if a["kernel"] == kernel]
            cells.append(f"{summarize(sub)['mean_speedup']:.2f}" if sub else "-")
        lines.append(f"| {kernel} | " + " | ".join(cells) + " |")
    return lines


def raw_metrics(raw: Path, name: str) -> list[dict[str, Any]]:
    """A run's metrics lines as committed beside the report (`<name>_metrics.jsonl`)."""
    path = raw / f"{name}_metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def step_table(
    raw: Path,
    runs: list[tuple[str, int]],
    metric: str = "reward/mean",
    missing: float | None = None,
    digits: int = 3,
) -> list[str]:
    """One metric per PPO step (training programs' rollouts) for every run; `missing` is
    its value at a step that logged no such line (an outcome share that did not occur)."""
    curves = {
        run: {
            r["step"]: r
            for r in raw_metrics(raw, f"ppo-{run[0]}-s{run[1]}")
            if r["kind"] == "train"
        }
        for run in runs
    }
    lines = ["| step | " + " | ".join(f"{a} s{s}" for a, s in runs) + " |"]
    lines.append("|" + "---|" * (len(runs) + 1))
    for step in sorted({k for c in curves.values() for k in c}):
        cells = [
            fmt(curves[run][step].get(metric, missing), digits) if step in curves[run] else "-"
            for run in runs
        ]
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    return lines


def curves_tables(raw: Path, runs: list[tuple[str, int]]) -> list[str]:
    """Reward mean per PPO step and the last validation line of every run."""
    lines = [*step_table(raw, runs), "", "| run | answers | reward mean | pass rate |"]
    lines.append("|---|---|---|---|")
    for a, s in runs:
        vals = [r for r in raw_metrics(raw, f"ppo-{a}-s{s}") if r["kind"] == "val"]
        if vals:
            v = vals[-1]
            lines.append(
                f"| {a} s{s} | {v.get('rows')} | {fmt(v.get('reward/mean'))} | "
                f"{fmt(v.get('pass_rate'))} |"
            )
    return lines


def provenance_lines(raw: Path) -> list[str]:
    """Which commit and command produced each model: from each run's own `_meta.json`
    (written when it starts training), else from `provenance.json` (what the history of the
    committed report shows for runs that predate the meta files)."""
    lines = []
    for path in sorted(raw.glob("*_meta.json")):
        meta = json.loads(path.read_text(encoding="utf-8"))
        lines.append(
            f"- {path.name.removesuffix('_meta.json')}: commit {meta['commit']}, command "
            f"`{meta['command']}`, started {meta['started']}"
        )
    known = raw / "provenance.json"
    if known.is_file():
        for entry in json.loads(known.read_text(encoding="utf-8")):
            lines.append(
                f"- {', '.join(entry['models'])}: training commit {entry['training_commit']}; "
                f"command `{entry['command']}`; {entry['note']}"
            )
    return lines or ["- commit and command of the models: not recorded"]


def model_keys(rows: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The sampled models' rows (not the rule's, not best-of-N's picks)."""
    return [k for k in rows if k == "sft" or k.startswith(("timed-s", "control-s"))]


def outside_fast_and_faster(rows: dict[str, list[dict[str, Any]]], keys: list[str]) -> int:
    """Answers of `keys` that pass, are significantly faster on the scored measurement and
    are not the fast edit (full or at some call sites): a discovered speedup would be one."""
    return sum(
        a["verdict"] == "pass" and (a["low"] or 0) > 1.0 and a["edit"] not in ("fast", "partial")
        for k in keys
        for a in rows[k]
    )


def baseline_sentences(
    rows: dict[str, list[dict[str, Any]]],
    comps: list[dict[str, Any]],
    seeds: list[int],
    control_seeds: list[int],
    rule_words: str,
) -> str:
    """The headline's opening, shared by both families: every arm's seed-averaged mean
    with its t-interval over templates (each seed's in parentheses), then the family's
    comparisons with both tests and their verdicts."""
    timed = timed_keys(rows, seeds)
    control = control_keys(rows, control_seeds)
    sft = summarize(rows["sft"])

    def seeds_of(keys: list[str]) -> str:
        return ", ".join(f"{summarize(rows[k])['mean_speedup']:.3f}" for k in keys)

    untimed = (
        f"; untimed PPO {arm_interval(rows, control)} ({seeds_of(control)})" if control else ""
    )
    return (
        f"**Headline.** On the {sft['programs']} held-out programs ({sft['templates']} "
        f"kernel templates), {rule_words} scores {_interval(summarize(rows['rule']))}; PPO "
        f"on the timed reward, {len(timed)} seeds averaged, {arm_interval(rows, timed)} "
        f"(seeds {seeds_of(timed)}){untimed}; the warm start {_interval(sft)}; its "
        f"best-of-{samples_per_program(rows)} picked by measured speed "
        f"{_interval(summarize(rows[BEST_OF]))}. {family_results(comps)} "
    )


def headline(
    rows: dict[str, list[dict[str, Any]]],
    comps: list[dict[str, Any]],
    seeds: list[int],
    control_seeds: list[int],
) -> str:
    """The report's first paragraph, every clause read off a row of the tables."""
    new = outside_fast_and_faster(rows, timed_keys(rows, seeds))
    return baseline_sentences(rows, comps, seeds, control_seeds, "the one-line rule") + (
        "No passing, significantly faster answer of a timed PPO model is anything but the "
        "fast edit (at all or some call sites), which a third of the warm-start examples "
        "contain: what PPO did here is select an edit its warm start already wrote, not "
        "discover one."
        if new == 0
        else f"{new} passing, significantly faster answers of the timed PPO models are "
        "edits other than the fast edit (see the reading and the raw rows)."
    )


# The per-seed groups the reading describes: (words, which row, which row it is minus).
PER_SEED_GROUPS: tuple[tuple[str, str, str], ...] = (
    ("timed PPO minus the rule", "timed-s", "rule"),
    ("timed PPO minus the warm start's best-of-4", "timed-s", BEST_OF),
    ("timed PPO minus its warm start", "timed-s", "sft"),
    ("timed minus untimed PPO of the same seed number", "timed-s", "control-s"),
    ("untimed PPO minus the rule", "control-s", "rule"),
)


def per_seed_reading(per: list[dict[str, Any]]) -> list[str]:
    """One line per group of per-seed differences: each seed's mean difference, the
    template cells above, below and equal summed over seeds, and in how many seeds the
    uncorrected sign-flip p is at most 0.05 (a description: these are outside the family
    and no verdict rests on them)."""
    lines = []
    for words, row, minus in PER_SEED_GROUPS:
        group = [
            c
            for c in per
            if c["row"].startswith(row)
            and (c["minus"] == minus or (minus == "control-s" and c["minus"].startswith(minus)))
        ]
        if not group:
            continue
        cells = sum(c["k"] for c in group)
        low_p = sum(c["p"] <= stats.ALPHA for c in group)
        lines.append(
            f"- Per seed, {words} (outside the family, uncorrected): "
            + ", ".join(
                f"seed {c['row'].rsplit('-s', 1)[1]} {c['mean']:+.3f} (p {c['p']:.4f})"
                for c in group
            )
            + f"; over the {cells} seed x template cells, above on "
            f"{sum(c['above'] for c in group)}, below on {sum(c['below'] for c in group)}, "
            f"equal on {sum(c['equal'] for c in group)}; sign-flip p <= 0.05 before any "
            f"correction in {low_p} of {len(group)} seeds."
        )
    return lines


def first_step_rewards(raw: Path, seeds: list[int]) -> str:
    """The timed reward of each timed seed's first step: rollouts of the warm start itself,
    sampled before any PPO update."""
    cells = []
    for s in seeds:
        first = [r for r in raw_metrics(raw, f"ppo-timed-s{s}") if r["kind"] == "train"][:1]
        cells.append(fmt(first[0].get("reward/mean")) if first else "-")
    return ", ".join(cells)


def alignment_timing(rows: dict[str, list[dict[str, Any]]], keys: list[str]) -> str:
    """How each measurement rates the passing alignment-edit answers (all models)."""
    align = [a for k in keys for a in rows[k] if a["edit"] == "align" and a["verdict"] == "pass"]

    def rated(measured: list[dict[str, Any]]) -> str:
        faster = sum((m["low"] or 0) > 1.0 for m in measured)
        slower = sum((m["high"] or 2) < 1.0 for m in measured)
        return f"{faster} significantly faster and {slower} significantly slower"

    first = [a["committed"] for a in align if a.get("committed", {}).get("verdict") == "pass"]
    return (
        f"of the {len(align)} passing alignment answers, the scored measurement finds "
        f"{rated(align)}; the first measurement found {rated(first)} (of {len(first)})"
    )


def remeasurement_drift(
    rows: dict[str, list[dict[str, Any]]],
    keys: list[str],
    keep: Callable[[dict[str, Any]], bool] = lambda a: a["edit"] == "fast",
    what: str = "passing fast-edit answers",
) -> str:
    """Ratio of the scored to the first measurement's speedup for the same passing answers
    that `keep` selects (`what` names them): how far one scoring's speedups move against
    another's."""
    ratios = [
        a["speedup"] / a["committed"]["speedup"]
        for k in keys
        for a in rows[k]
        if keep(a)
        and a["verdict"] == "pass"
        and a.get("committed", {}).get("speedup")
        and a["speedup"]
    ]
    if not ratios:
        return "no answer has both measurements"
    return (
        f"over {len(ratios)} {what} the scored measurement's speedup is "
        f"{sum(ratios) / len(ratios):.2f} times the first measurement's on average "
        f"(range {min(ratios):.2f}-{max(ratios):.2f})"
    )


def call_sites(rule: list[dict[str, Any]]) -> dict[str, int]:
    """`__popcountdi2` call sites per test program, read off the rule's answers: the rule
    writes one `popcntq` line for each `call __popcountdi2@PLT` line and nothing else."""
    fast = "+" + FAST_LINE
    return {a["program"]: a["answer"].splitlines().count(fast) for a in rule}


def unapplied_breakdown(rows: dict[str, list[dict[str, Any]]], keys: list[str]) -> str:
    """What the answers whose diff did not apply tried to do, and how many of the popcount
    attempts write more hunks than the program has call sites (an alignment answer has one
    hunk per `.p2align` group, so its hunk count says nothing about call sites)."""
    sites = call_sites(rows["rule"])
    kinds = {"alignment": 0, "popcnt": 0, "other": 0}
    over = 0
    failed = [a for k in keys for a in rows[k] if a["edit"] == "none"]
    for a in failed:
        body = a["answer"].splitlines()
        changed = [line for line in body if line[:1] in "+-" and line[:3] not in ("+++", "---")]
        if "popcnt" in a["answer"]:
            kind = "popcnt"
            over += sum(line.startswith("@@") for line in body) > sites[a["program"]]
        elif changed and all(".p2align" in line for line in changed):
            kind = "alignment"
        else:
            kind = "other"
        kinds[kind] += 1
    total = sum(len(rows[k]) for k in keys)
    return (
        f"{len(failed)} of {total} sampled answers (all models) did not apply: "
        f"{kinds['alignment']} alignment-edit attempts, {kinds['popcnt']} popcnt attempts "
        f"({over} of which write more hunks than the program has `__popcountdi2` call sites), "
        f"{kinds['other']} other"
    )


def reading(rows: dict[str, list[dict[str, Any]]], raw: Path, seeds: list[int]) -> list[str]:
    """The reading's computed lines."""
    keys = model_keys(rows)
    sft = summarize(rows["sft"])["edits"]
    timed = [summarize(rows[k])["fast_share"] for k in keys if k.startswith("timed-s")]
    control = [summarize(rows[k])["fast_share"] for k in keys if k.startswith("control-s")]

    def span(xs: list[float]) -> str:
        return f"{min(xs):.0%}-{max(xs):.0%}" if xs else "-"

    return [
        "- Selection, not discovery. A third of the warm start's training examples are the "
        "fast edit (each training program appears once with each of the three edits). "
        f"Before any PPO update (step 1's rollouts are the warm start's) the timed reward on "
        f"training programs is already {first_step_rewards(raw, seeds)} (seeds {seeds}). On "
        f"the held-out programs the warm start writes the fast edit in {sft.get('fast', 0):.0%} "
        f"of answers, the alignment edit in {sft.get('align', 0):.0%}, the wrong edit in "
        f"{sft.get('wrong', 0):.0%}, and {sft.get('none', 0):.0%} do not apply; PPO on the "
        f"timed reward raises the fast share (full or partial) to {span(timed)}, the untimed "
        f"control to {span(control)}. Passing, significantly faster answers other than the "
        f"fast edit: {outside_fast_and_faster(rows, [k for k in keys if k != 'sft'])} over "
        "all PPO models.",
        "- What separates the edits: the untimed reward pays a passing answer 0 whatever its "
        "speed, so it cannot prefer the fast edit to the alignment edit; the timed reward "
        "pays log speedup when the interval excludes 1. The alignment edit is not always "
        f"indistinguishable from the baseline on time: {alignment_timing(rows, keys)}, so the "
        "timed reward too pays some alignment answers and docks others, by amounts that "
        "differ between sessions. Both rewards punish the wrong edit.",
        "- Between sessions: "
        f"{remeasurement_drift(rows, keys)}. The size of a speedup on this shared 2-core "
        "machine moves between sessions by more than one session's intervals say; every "
        "comparison here is therefore made within the scored measurement, where all rows "
        "were measured in one session and identical answers share one measurement.",
        f"- Unapplied answers: {unapplied_breakdown(rows, keys)}.",
        f"- Best-of-4: {picks_differ(rows)}. In this family the rule's answer is the "
        "fastest correct answer known (the fast edit at every call site), so a policy can at "
        "best tie the rule; a family with more than one idea is needed for a policy to beat "
        "it.",
    ]


def picks_differ(rows: dict[str, list[dict[str, Any]]]) -> str:
    """On how many programs the best-of-N pick on the separate scoring is another answer
    than the oracle pick."""
    if BEST_OF not in rows or BEST_OF_ORACLE not in rows:
        return "not computed"
    pairs = zip(rows[BEST_OF], rows[BEST_OF_ORACLE], strict=True)
    differ = sum(a["answer"] != b["answer"] for a, b in pairs)
    return (
        f"the pick on the separate scoring and the oracle pick are different answers on "
        f"{differ} of {len(rows[BEST_OF])} programs"
    )


def header_lines(raw: Path, argv: list[str], load: tuple[float, ...]) -> list[str]:
    """When, at which commit and by which command the report was rendered, and which
    commit and command trained each model."""
    import torch

    from asmopt.provenance import git_commit

    return [
        f"- Report rendered {time.strftime('%Y-%m-%d %H:%M')} at commit {git_commit()} by "
        f"`{' '.join(['.venv/bin/python bench/speed_learning_run.py', *argv])}`; torch "
        f"{torch.__version__}, {platform.machine()}, {os.cpu_count()} logical CPUs; load "
        f"average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}.",
        "- Models (commit and command that trained each):",
        *[f"  {line}" for line in provenance_lines(raw)],
    ]


def interval_words(rows: dict[str, list[dict[str, Any]]]) -> str:
    """How a row's interval is made, for the held-out table's paragraph."""
    s = summarize(rows["sft"])
    per = s["programs"] // max(1, s["templates"])
    return (
        f"Interval: 95% t-interval over the {s['templates']} kernel templates (a template's "
        f"value is the mean of its {per} test programs; {s['templates'] - 1} degrees of "
        "freedom). "
    )


def comparisons_section(
    rows: dict[str, list[dict[str, Any]]], comps: list[dict[str, Any]], per: list[dict[str, Any]]
) -> list[str]:
    """The family's table, then every per-seed difference as a description."""
    k = summarize(rows["sft"])["templates"]
    return [
        "## Comparisons",
        "",
        "The family named above the headline, then every per-seed difference. A row's value "
        "for a template is the mean of its test programs' mean speedups; a comparison is the "
        "per-template difference, each PPO arm's seeds averaged per template first. Mean "
        f"difference over the {k} templates with its 95% t-interval ({k - 1} degrees of "
        f"freedom). Sign-flip p: the share of the {2**k} sign patterns of the {k} differences "
        "whose |mean| is at least the observed one (exact, two-sided). t-test p: the paired "
        f"t-test over templates. Holm: over the {len(comps)} comparisons of the family. The "
        "verdict is the sign-flip test's; where the t-test differs, both are stated.",
        "",
        *family_table(comps),
        "",
        "Per seed (outside the family: uncorrected, a description; no verdict rests on it):",
        "",
        *per_seed_table(per),
    ]


def ppo_settings() -> Any:
    """`ppo.yaml` as every PPO run of these reports used it."""
    from asmopt.train.config import PPOConfig, load_config

    return load_config(PPOConfig, CONFIG_DIR / "ppo.yaml")


def policy_tables(raw: Path, runs: list[tuple[str, int]]) -> list[str]:
    """Per-step approximate KL, policy entropy and the share of rollouts that are no
    applicable diff, for every run: a collapse shows here step by step."""
    cfg = ppo_settings()
    return [
        f"Approximate KL per step (the update against the policy that sampled; `target_kl` "
        f"{cfg.target_kl} ends an update's epochs early, `kl_coef` {cfg.kl_coef}: no KL "
        "penalty in the reward):",
        "",
        *step_table(raw, runs, "policy/approx_kl", digits=4),
        "",
        "Policy entropy per step (as logged, mean per token):",
        "",
        *step_table(raw, runs, "policy/entropy"),
        "",
        "Share of rollouts that are no applicable diff, per step:",
        "",
        *step_table(raw, runs, "outcome/extraction_error", missing=0.0),
    ]


def policy_spikes(raw: Path, runs: list[tuple[str, int]]) -> str:
    """Each run's largest approximate KL and entropy (with their steps), and the steps
    whose KL passed `target_kl`: one line the per-step tables back."""
    target = ppo_settings().target_kl
    cells, over = [], []
    for a, s in runs:
        train = [r for r in raw_metrics(raw, f"ppo-{a}-s{s}") if r["kind"] == "train"]
        if not train:
            continue
        kl = max(train, key=lambda r: r.get("policy/approx_kl") or 0.0)
        ent = max(train, key=lambda r: r.get("policy/entropy") or 0.0)
        cells.append(
            f"{a} s{s} KL {fmt(kl.get('policy/approx_kl'), 4)} (step {kl['step']}), entropy "
            f"{fmt(ent.get('policy/entropy'))} (step {ent['step']})"
        )
        steps = [r["step"] for r in train if (r.get("policy/approx_kl") or 0.0) > target]
        if steps:
            over.append(f"{a} s{s} at steps {', '.join(map(str, steps))}")
    return (
        "- Largest approximate KL and policy entropy of any PPO step, per run: "
        + "; ".join(cells)
        + f". KL above `target_kl` ({target}): {'; '.join(over) or 'in no run'}."
    )


def collapse_lines(raw: Path, runs: list[tuple[str, int]]) -> list[str]:
    """For each run whose last step's rollouts are mostly (half or more) no applicable
    diff: what came with its collapse (`collapse_line`)."""
    lines = []
    for a, s in runs:
        train = [r for r in raw_metrics(raw, f"ppo-{a}-s{s}") if r["kind"] == "train"]
        if train and (train[-1].get("outcome/extraction_error") or 0.0) >= 0.5:
            lines.append(collapse_line(f"{a} s{s}", train))
    return lines


def collapse_line(run: str, train: list[dict[str, Any]]) -> str:
    """From the first step where a quarter of the rollouts were no applicable diff, that
    share, the approximate KL and the entropy step by step, against their largest values
    before it: what came with the collapse, not its cause."""
    share = "outcome/extraction_error"
    start = next(i for i, r in enumerate(train) if (r.get(share) or 0.0) >= 0.25)
    before, after = train[:start], train[start:]
    if not before:
        return f"- {run}: its rollouts are no applicable diff from its first step."

    def seq(key: str, digits: int = 3) -> str:
        return ", ".join(fmt(r.get(key) or 0.0, digits) for r in after)

    def top(key: str) -> str:
        return fmt(max(r.get(key) or 0.0 for r in before), 4)

    return (
        f"- {run} collapses: at steps {after[0]['step']}-{after[-1]['step']} its share of "
        f"rollouts that are no applicable diff is {seq(share, 2)}, its approximate KL "
        f"{seq('policy/approx_kl', 4)} and its policy entropy {seq('policy/entropy')}, against "
        f"at most {top('policy/approx_kl')} and {top('policy/entropy')} at steps "
        f"{before[0]['step']}-{before[-1]['step']}. KL and entropy rise with the collapse; "
        "these data do not show which came first within a step, nor what drove it."
    )


def report(
    raw: Path,
    argv: list[str],
    seeds: list[int],
    control_seeds: list[int],
    rows: dict[str, list[dict[str, Any]]],
    load: tuple[float, ...],
    variant: str = "main",
) -> str:
    """The popcount family's report (Markdown), rendered from the raw data in `raw`: the
    sections top to bottom, in the order a reader meets them."""
    order = row_order(seeds, control_seeds)
    comps = comparisons(rows, comparison_plan(rows, seeds, control_seeds))
    per = per_seed(rows, per_seed_plan(rows, seeds, control_seeds))
    runs = [(a, s) for a, ss in (("timed", seeds), ("control", control_seeds)) for s in ss]
    discovery = variant == "discovery"
    lines = [
        "# Discovery run: PPO on the timed reward from a warm start never shown the fast edit"
        if discovery
        else "# Speed-learning run: PPO on the timed reward against a rule and best-of-N, "
        "popcount task family",
        "",
        family_statement(comps, summarize(rows["sft"])["templates"]),
        "",
        discovery_headline(rows, comps, raw, seeds)
        if discovery
        else headline(rows, comps, seeds, control_seeds),
        "",
        *header_lines(raw, argv, load),
        "- Task: `bench/speed_learning/family.py` (8 kernel templates x 7 programs; "
        "train/validation/test 32/8/16, the test split 2 programs of each template); configs "
        "`bench/speed_learning/sft.yaml`, `ppo.yaml`; policy: a fresh PLT (R = 2) model, d = "
        "128, 2 shared layers, BPE vocabulary 2,048 learnt on the training split.",
        "",
        "## Held-out answers: every row on the same programs and the same measurement",
        "",
        popcount_table_words(rows, raw),
        "",
        *held_out_table(with_pooled(rows, seeds, control_seeds), order),
        "",
        *comparisons_section(rows, comps, per),
        "",
        "## Reading",
        "",
        *(discovery_reading(rows, raw, seeds) if discovery else reading(rows, raw, seeds)),
        *per_seed_reading(per),
        policy_spikes(raw, runs),
        *collapse_lines(raw, runs),
        *evaluation_history(raw),
        f"- Raw data in `{raw.name}/`: `test_answers.jsonl` (the sampled answers "
        "with their first scoring), `held_out_rows.jsonl` (every row of the tables: answer, "
        "edit class, `select` and `score` measurements, first scoring), `select.jsonl` and "
        "`score.jsonl` (the measurement logs), each run's metrics.",
        "",
        *curves_section(raw, runs),
        "",
        "## Per kernel template (test split, scored measurement)",
        "",
        *per_kernel_table(with_pooled(rows, seeds, control_seeds), order),
    ]
    return "\n".join(lines) + "\n"


def popcount_table_words(rows: dict[str, list[dict[str, Any]]], raw: Path) -> str:
    """The held-out table's paragraph in the popcount family's reports: how each row was
    sampled, picked and scored, and what its columns mean."""
    samples = samples_per_program(rows)
    return (
        f"Models' answers: {samples} per test program, sampled at the rollout temperature "
        f"({rollout_temperature(raw)}, seeded), as committed in `{raw.name}/test_answers.jsonl`. "
        "The rule: one answer per program, its diff produced by `baselines.popcnt_rule`: the "
        "family's own fast edit written as a substitution from the family's description, "
        "with nothing tuned on any split (its value on this test split had been reported "
        "before it was added here, from the first measurement). "
        f"Best-of-{samples}: of the warm start's {samples} answers for a program, "
        "the one ranked first by the training reward (robust: log speedup when its interval "
        "excludes 1, 0 when indistinguishable, negative for a failure; ties by the raw "
        "speedup estimate) on a `select` scoring: the reward's own check and timing of the "
        "answer on the program's tests and freshly drawn inputs, a measurement separate from "
        "the `score` one that every row is scored on. The oracle row picks on the `score` "
        "measurement itself (optimistic: its pick and its score share their noise). Every "
        "answer of every row was scored twice afresh in one session (`select`, `score`: "
        "reward service, robust reward, CPU time interleaved with the -O3 baseline to +-2% "
        "or 10 s per test, fresh inputs); identical applied answers of a program share one "
        "measurement per scoring. A failing answer counts 1.0. "
        + interval_words(rows)
        + "Seeds pooled: every seed's answers together, whose program means are the seed "
        "average. First measurement: the row's mean on the scoring committed with the answers "
        "(the first evaluation). fast share: answers that put `popcnt` at one or more call "
        "sites and change nothing else."
    )


def curves_section(raw: Path, runs: list[tuple[str, int]]) -> list[str]:
    """Reward per step and at validation, then the per-step policy statistics."""
    return [
        "## PPO training curves and validation (training and validation programs)",
        "",
        "Reward mean per step (robust reward; timed arm: log speedup when significant); then "
        "the validation split at the end of PPO; then the reward max per step (a rollout paid "
        "above 0 was significantly faster); then the per-step policy statistics.",
        "",
        *curves_tables(raw, runs),
        "",
        "Reward max per step:",
        "",
        *step_table(raw, runs, "reward/max"),
        "",
        *policy_tables(raw, runs),
    ]


def evaluation_history(raw: Path) -> list[str]:
    """When the test split was evaluated, as the provenance records it."""
    known = raw / "provenance.json"
    if not known.is_file():
        return []
    entries = json.loads(known.read_text(encoding="utf-8"))
    return [f"- Test-split history: {' '.join(e['test_split'] for e in entries)}"]


# --------------------------------------------------------------------------- discovery
def rollout_temperature(raw: Path) -> str:
    """The temperature the models' answers were sampled at: the discovery run's choice
    when it made one, else `ppo.yaml`'s."""
    choice = raw / exploration.CHOICE_FILE
    if choice.is_file():
        return f"{json.loads(choice.read_text(encoding='utf-8'))['chosen']}, chosen on validation"
    from asmopt.train.config import PPOConfig, load_config

    return str(load_config(PPOConfig, CONFIG_DIR / "ppo.yaml").temperature)


def warm_start_data(root: Path) -> dict[str, Any]:
    """What the warm start was shown, per split of its rows (it trains on `train`; the
    `validation` rows only measure its loss): their edits, and how many hold `popcntq`."""
    out: dict[str, Any] = {}
    for split in ("train", "validation"):
        path = root / "data" / f"sft_{split}.jsonl"
        if not path.is_file():
            continue
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        edits: dict[str, int] = {}
        for r in rows:
            edits[r["edit"]] = edits.get(r["edit"], 0) + 1
        out[split] = {
            "rows": len(rows),
            "edits": edits,
            "rows_with_popcntq": sum("popcntq" in r["completion"] for r in rows),
        }
    return out


def faster_answers(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A model's passing answers whose scored speedup interval lies above 1."""
    return [a for a in rows if a["verdict"] == "pass" and (a["low"] or 0) > 1.0]


def discovery_headline(
    rows: dict[str, list[dict[str, Any]]], comps: list[dict[str, Any]], raw: Path, seeds: list[int]
) -> str:
    """The discovery report's first paragraph, read off its tables and raw data."""
    timed = timed_keys(rows, seeds)
    data = json.loads((raw / "warm_start_data.json").read_text(encoding="utf-8"))["train"]
    found = {t: faster_answers(rows[t]) for t in timed}
    new = {t: [a for a in f if a["edit"] not in ("align", "wrong")] for t, f in found.items()}
    verdict = "yes" if any(new.values()) else "no"
    return (
        f"**Headline: did PPO find a faster correct edit its warm start was never shown? "
        f"{verdict}.** The warm start was trained on {data['rows']} examples "
        f"({', '.join(f'{k} {v}' for k, v in sorted(data['edits'].items()))}), "
        f"{data['rows_with_popcntq']} of them with `popcntq`. On the "
        f"{summarize(rows['sft'])['programs']} held-out programs, answers that pass and are "
        "significantly faster, and are not an edit the warm start was shown: "
        + "; ".join(
            f"seed {t.removeprefix('timed-s')} {len(new[t])} of {len(rows[t])}" for t in timed
        )
        + f" (warm start: {len(faster_answers(rows['sft']))} significantly faster of "
        f"{len(rows['sft'])}). Mean held-out speedup: the rule "
        f"{_interval(summarize(rows['rule']))}, the warm start "
        f"{_interval(summarize(rows['sft']))}, PPO ({len(timed)} seeds averaged) "
        f"{arm_interval(rows, timed)} (seeds "
        + ", ".join(f"{summarize(rows[t])['mean_speedup']:.3f}" for t in timed)
        + f"). {family_results(comps)}"
    )


def training_signal(raw: Path, seeds: list[int]) -> str:
    """The highest reward any training rollout of each seed earned: above 0 only for an
    answer significantly faster than the baseline."""
    best = []
    for s in seeds:
        train = [r for r in raw_metrics(raw, f"ppo-timed-s{s}") if r["kind"] == "train"]
        best.append(fmt(max((r.get("reward/max") for r in train), default=None)))
    return (
        "- During training, the highest reward of any rollout on the training programs, "
        f"over all steps: {', '.join(best)} (seeds {seeds}); the timed reward pays above 0 "
        "only a significantly faster answer, so no rollout the PPO update saw was one."
    )


def edit_shift(rows: dict[str, list[dict[str, Any]]], keys: list[str]) -> str:
    """Held-out edit shares of the warm start and of each PPO seed: what PPO moved."""

    def shares(key: str) -> str:
        edits = summarize(rows[key])["edits"]
        return ", ".join(f"{e} {edits.get(e, 0):.0%}" for e in ("align", "wrong", "none", "other"))

    return (
        "- Held-out edit shares (align, wrong, unapplied, other): "
        + "; ".join(f"{k} {shares(k)}" for k in keys)
        + (
            ". PPO moved answers away from the wrong edit (the timed reward's -0.25) toward the "
            "alignment edit and toward diffs that do not apply, not toward a new edit."
        )
    )


def other_answers(rows: dict[str, list[dict[str, Any]]], keys: list[str]) -> list[str]:
    """Examples of the PPO answers that are none of the known edits, with their verdicts:
    what exploration produced."""
    others = {a["answer"]: a for k in keys if k != "sft" for a in rows[k] if a["edit"] == "other"}
    verdicts: dict[str, int] = {}
    for a in others.values():
        verdicts[a["verdict"]] = verdicts.get(a["verdict"], 0) + 1
    lines = [
        f"- Distinct PPO answers that apply but are none of the known edits: {len(others)} "
        f"({', '.join(f'{v} {n}' for v, n in sorted(verdicts.items()))}); two of them:"
    ]
    for a in list(others.values())[:2]:
        lines += ["", "    " + a["answer"].replace("\n", "\n    "), ""]
    return lines


def training_power(raw: Path, seeds: list[int]) -> str:
    """How many rollouts each seed's PPO sampled and how concentrated its policy was: what
    a run that finds nothing new could have found."""
    cfg = ppo_settings()
    per_step = cfg.prompts_per_step * cfg.samples_per_prompt
    counts, entropies = [], []
    for s in seeds:
        train = [r for r in raw_metrics(raw, f"ppo-timed-s{s}") if r["kind"] == "train"]
        counts.append(str(len(train) * per_step))
        entropies += [r["policy/entropy"] for r in train if r.get("policy/entropy") is not None]
    top = f"{max(entropies):.3f}" if entropies else "not logged"
    return (
        f"- Power: each seed's PPO sampled {per_step} training rollouts per step "
        f"({', '.join(counts)} in all, seeds {seeds}), and its policy entropy (as logged, "
        f"mean per token) was at most {top} at any step: few samples from a concentrated "
        "policy, so this run had little chance to sample an edit its warm start never wrote, "
        "and its null result says little about what more exploration would find."
    )


def heldout_reward(rows: dict[str, list[dict[str, Any]]]) -> str:
    """The training reward (robust, timed) of each model's held-out answers on the scored
    measurement: whether PPO raised, on the test split, the quantity it maximised."""

    def mean(key: str) -> float:
        values = [a["reward"] for a in rows[key] if a.get("reward") is not None]
        return sum(values) / len(values)

    timed = [k for k in model_keys(rows) if k.startswith("timed-s")]
    lower = sum(mean(k) < mean("sft") for k in timed)
    return (
        "- The training reward itself on the held-out answers (robust, timed; scored "
        f"measurement, mean per answer): warm start {mean('sft'):.3f}; PPO "
        + ", ".join(f"seed {k.removeprefix('timed-s')} {mean(k):.3f}" for k in timed)
        + f": below the warm start in {lower} of {len(timed)} seeds (a description, not a "
        "test)."
    )


def discovery_reading(
    rows: dict[str, list[dict[str, Any]]], raw: Path, seeds: list[int]
) -> list[str]:
    """The discovery report's reading: the exploration choice, what the answers tried,
    and every distinct passing, significantly faster answer PPO wrote."""
    choice = json.loads((raw / exploration.CHOICE_FILE).read_text(encoding="utf-8"))
    trials = "; ".join(
        f"{t['temperature']}: {t['applied_share']:.0%} of {t['answers']} apply, "
        f"{t['popcntq_answers']} write `popcntq`"
        for t in choice["trials"]
    )
    keys = model_keys(rows)
    lines = [
        f"- Exploration setting (the only one chosen): rollout temperature {choice['chosen']}, "
        f"by the rule fixed before the run ({choice['rule']}), on the warm start's answers for "
        f"the validation programs: {trials}. No other setting differs from the main run "
        "(`sft.yaml`, `ppo.yaml`); the test split was sampled once, after all training.",
        "- Held-out answers writing `popcntq` at all: "
        + ", ".join(f"{k} {sum('popcntq' in a['answer'] for a in rows[k])}" for k in keys)
        + "; writing any `popcnt`: "
        + ", ".join(f"{k} {sum('popcnt' in a['answer'] for a in rows[k])}" for k in keys)
        + ".",
    ]
    lines += [training_signal(raw, seeds), training_power(raw, seeds), heldout_reward(rows)]
    lines += [edit_shift(rows, keys), *other_answers(rows, keys)]
    distinct = {a["answer"]: a for k in keys if k != "sft" for a in faster_answers(rows[k])}
    lines.append(
        f"- Distinct passing, significantly faster PPO answers on the test split: {len(distinct)}"
        + ("" if distinct else ".")
    )
    for a in list(distinct.values())[:4]:
        lines += [
            f"  - {a['program']} ({a['edit']}, speedup {a['speedup']:.3f} "
            f"[{a['low']:.3f}, {a['high']:.3f}]):",
            "",
            "    " + a["answer"].replace("\n", "\n    "),
            "",
        ]
    return lines


# --------------------------------------------------------------------------- richer family
def composed(label: str) -> bool:
    """A correct answer that makes two or more of the family's edits at once."""
    parts = label.split("+")
    return len(parts) > 1 and not any(p.startswith("wrong-") for p in parts)


def label_counts(rows: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]) -> str:
    counts: dict[str, int] = {}
    for a in rows:
        if keep(a):
            counts[a["edit"]] = counts.get(a["edit"], 0) + 1
    return ", ".join(f"{e} {n}" for e, n in sorted(counts.items(), key=lambda x: -x[1])) or "none"


def rich_headline(
    rows: dict[str, list[dict[str, Any]]],
    comps: list[dict[str, Any]],
    raw: Path,
    seeds: list[int],
    control_seeds: list[int],
) -> str:
    """The richer-family report's first paragraph, every clause read off the tables."""
    timed = timed_keys(rows, seeds)
    shown = warm_start_compositions(raw)

    def passing_composed(key: str) -> int:
        return sum(composed(a["edit"]) and a["verdict"] == "pass" for a in rows[key])

    share = {k: summarize(rows[k], RICH.share_labels)["fast_share"] for k in ["sft", *timed]}
    return (
        baseline_sentences(rows, comps, seeds, control_seeds, "the substitution rule")
        + "Answers holding an edit no substitution rule writes (`reuse` or `inline`, no "
        f"trap): warm start {share['sft']:.0%}, PPO "
        + ", ".join(f"{share[t]:.0%}" for t in timed)
        + ". Passing answers that compose two or more edits (the fastest known answer where "
        "a kernel has two): "
        + ", ".join(
            f"seed {t.removeprefix('timed-s')} {passing_composed(t)} of {len(rows[t])}"
            for t in timed
        )
        + f" (warm start {passing_composed('sft')} of {len(rows['sft'])}); the warm start "
        f"was shown compositions in {sum(shown.values())} of its {warm_start_rows(raw)} "
        "training examples, so a seed that writes one more often selected it, and no "
        "comparison tests it."
    )


def warm_start_train(raw: Path) -> dict[str, Any]:
    """What the warm start was trained on, as committed in `warm_start_data.json`."""
    data: dict[str, Any] = json.loads((raw / "warm_start_data.json").read_text(encoding="utf-8"))
    return data["train"]


def warm_start_rows(raw: Path) -> int:
    """How many training examples the warm start was shown."""
    return int(warm_start_train(raw)["rows"])


def warm_start_compositions(raw: Path) -> dict[str, int]:
    """The compositions (correct, two or more edits) among the warm start's training
    examples, with their counts."""
    return {e: n for e, n in sorted(warm_start_train(raw)["edits"].items()) if composed(e)}


def composition_selection(rows: dict[str, list[dict[str, Any]]], raw: Path) -> str:
    """Which compositions the held-out answers write against which the warm start was
    shown: a composition shown in training and written more often after PPO is selected,
    one never shown would be found."""
    shown = warm_start_compositions(raw)
    keys = model_keys(rows)
    written = sorted({a["edit"] for k in keys for a in rows[k] if composed(a["edit"])})
    unseen = sum(composed(a["edit"]) and a["edit"] not in shown for k in keys for a in rows[k])
    return (
        "- Compositions: the warm start's training examples hold "
        + ", ".join(f"{e} {n}" for e, n in shown.items())
        + f" (of {warm_start_rows(raw)}); held-out share per row: "
        + "; ".join(
            f"{k} " + ", ".join(f"{e} {sum(a['edit'] == e for a in rows[k]) / len(rows[k]):.0%}"
                                for e in written)
            for k in keys
        )
        + f". Held-out composed answers whose composition the warm start was never shown: "
        f"{unseen}."
    )


def shown_count(raw: Path, edit: str) -> int:
    """How many of the warm start's training examples hold `edit`, alone or composed."""
    return sum(n for e, n in warm_start_train(raw)["edits"].items() if edit in e.split("+"))


def edit_written(rows: dict[str, list[dict[str, Any]]], edit: str) -> str:
    """How many held-out answers of all models hold `edit`, alone or in a composition."""
    keys = model_keys(rows)
    total = sum(len(rows[k]) for k in keys)
    hits = sum(edit in a["edit"].split("+") for k in keys for a in rows[k])
    return f"{hits} of the {total} held-out answers of all models"


def faster_twice(answer: dict[str, Any]) -> bool:
    """Significantly faster on the scored measurement, and passing on the first one."""
    return (answer["low"] or 0) > 1.0 and answer.get("committed", {}).get("verdict") == "pass"


def rich_reading(rows: dict[str, list[dict[str, Any]]], raw: Path, seeds: list[int]) -> list[str]:
    """The richer-family report's reading, computed from its rows and raw data."""
    keys = model_keys(rows)
    all_rows = [a for k in keys for a in rows[k]]
    drift = remeasurement_drift(rows, keys, faster_twice, "passing, significantly faster answers")
    data = json.loads((raw / "warm_start_data.json").read_text(encoding="utf-8"))["train"]
    lines = [
        f"- Warm-start data: {data['rows']} examples on the training programs "
        f"({', '.join(f'{k} {v}' for k, v in sorted(data['edits'].items()))}): every edit a "
        "training program's kernel has, each set of its correct edits and each trap alone, in "
        "equal shares per program. Before any PPO update "
        "(step 1's rollouts are the warm start's) the timed reward on training programs is "
        f"{first_step_rewards(raw, seeds)} (seeds {seeds}).",
        "- Composed answers (correct, two or more edits at once), per row: "
        + "; ".join(f"{k}: {label_counts(rows[k], lambda a: composed(a['edit']))}" for k in keys)
        + ".",
        "- Trap answers (`wrong-divq` on the wide-remainder kernel, `wrong-reuse` on the "
        "shifted-argument kernel), per row: "
        + "; ".join(f"{k}: {label_counts(rows[k], lambda a: 'wrong-' in a['edit'])}" for k in keys)
        + "; their verdicts over all models: "
        + label_counts(
            [{**a, "edit": a["verdict"]} for k in keys for a in rows[k] if "wrong-" in a["edit"]],
            lambda a: True,
        )
        + ".",
        "- Passing, significantly faster answers that are none of the known edit sets "
        f"(`other`): {len([a for a in faster_answers(all_rows) if a['edit'] == 'other'])} "
        "over all models.",
        f"- Best-of-4: {picks_differ(rows)}.",
        "- The first measurement (made when the answers were sampled, before the two "
        f"scorings) against the scored one: {drift}.",
        unapplied_rollouts(raw, seeds),
        composition_selection(rows, raw),
        f"- `inline` (alone or composed), which the warm start was shown in "
        f"{shown_count(raw, 'inline')} of its {warm_start_rows(raw)} training examples: "
        f"written in {edit_written(rows, 'inline')}.",
    ]
    return lines


def unapplied_rollouts(raw: Path, seeds: list[int]) -> str:
    """Each timed seed's share of training rollouts that are not an applicable diff, at its
    first and its last step: a policy that collapses into text that is no diff shows here
    before it shows on the test split."""
    cells = []
    for s in seeds:
        train = [r for r in raw_metrics(raw, f"ppo-timed-s{s}") if r["kind"] == "train"]
        if train:
            first, last = (r.get("outcome/extraction_error") or 0.0 for r in (train[0], train[-1]))
            cells.append(f"seed {s} {first:.0%} -> {last:.0%}")
    return (
        "- Training rollouts that are no applicable diff, first -> last PPO step (timed): "
        + ", ".join(cells)
        + "; per step in the curves section."
    )


def rich_report(
    raw: Path,
    argv: list[str],
    seeds: list[int],
    control_seeds: list[int],
    rows: dict[str, list[dict[str, Any]]],
    load: tuple[float, ...],
) -> str:
    """The richer family's report (Markdown): the popcount report's tables, with the
    words and the reading of this family."""
    order = row_order(seeds, control_seeds)
    comps = comparisons(rows, comparison_plan(rows, seeds, control_seeds))
    per = per_seed(rows, per_seed_plan(rows, seeds, control_seeds))
    runs = [(a, s) for a, ss in (("timed", seeds), ("control", control_seeds)) for s in ss]
    lines = [
        "# Richer-family learning run: PPO on the timed reward against a rule and best-of-N, "
        "with composing speedups and traps",
        "",
        family_statement(comps, summarize(rows["sft"])["templates"]),
        "",
        rich_headline(rows, comps, raw, seeds, control_seeds),
        "",
        *header_lines(raw, argv, load),
        f"- Task: {RICH.task_line}; edits `popcnt` (a substitution), `reuse` (delete the "
        "second of two back-to-back calls of a pure helper with the same argument), `inline` "
        "(paste the helper's body at its call sites), `divq` (a substitution, correct on one "
        "kernel); traps: `reuse` where the two calls differ, `divq` where the quotient "
        "overflows. Configs `bench/speed_learning/sft.yaml`, `ppo.yaml` (the popcount run's, "
        "unchanged); policy: a fresh PLT (R = 2) model, d = 128, 2 shared layers, BPE "
        "vocabulary 2,048 learnt on the training split.",
        "- The rule (every `call __popcountdi2@PLT` -> `popcntq %rdi, %rax`, nothing else) was "
        "fixed on the design check's training programs (`rich_family.md`: `popcnt` alone beat "
        "`popcnt + divq`, which crashes on the wide-remainder kernel) before any run; where "
        "it changes nothing the -O3 baseline is kept (1.0, not timed; edit `kept`).",
        "",
        "## Held-out answers: every row on the same programs and the same measurement",
        "",
        rich_table_words(rows, raw),
        "",
        *held_out_table(with_pooled(rows, seeds, control_seeds), order, RICH),
        "",
        *comparisons_section(rows, comps, per),
        "",
        "## Reading",
        "",
        *rich_reading(rows, raw, seeds),
        *per_seed_reading(per),
        policy_spikes(raw, runs),
        *collapse_lines(raw, runs),
        f"- Raw data in `{raw.name}/`: `test_answers.jsonl`, `held_out_rows.jsonl`, "
        "`select.jsonl` and `score.jsonl`, each run's metrics and meta, `warm_start_data.json`.",
        "",
        *curves_section(raw, runs),
        "",
        "## Per kernel template (test split, scored measurement)",
        "",
        *per_kernel_table(with_pooled(rows, seeds, control_seeds), order),
    ]
    return "\n".join(lines) + "\n"


def rich_table_words(rows: dict[str, list[dict[str, Any]]], raw: Path) -> str:
    """The held-out table's paragraph in the richer family's report."""
    samples = samples_per_program(rows)
    return (
        f"Models' answers: {samples} per test program at the rollout temperature "
        f"({rollout_temperature(raw)}, seeded), as committed in `{raw.name}/test_answers.jsonl`. "
        f"Best-of-{samples}: of the warm start's answers for a program, the one ranked first "
        "by the training reward on a separate `select` scoring; the oracle row picks on the "
        "`score` measurement itself. Every answer of every row was scored twice afresh in one "
        "session (`select`, `score`: reward service, robust reward, CPU time interleaved "
        "with the -O3 baseline, 10 s per test, fresh inputs); identical applied answers of a "
        "program share one measurement per scoring. A failing answer counts 1.0. "
        + interval_words(rows)
        + "Seeds pooled: every seed's answers together, whose program means are the seed "
        "average. First measurement: the row's mean on the scoring made when the answers were "
        "sampled. Edit labels: the edit set whose witness the answer is, line for line (`+` "
        "joins a composition, `wrong-` marks a trap, `other` any other text, `none` a diff "
        "that does not apply)."
    )


def save_raw(root: Path, rows: dict[str, list[dict[str, Any]]], dest: Path) -> None:
    """Copy every run's metrics and meta beside the report, and write the table's rows and
    the measurement logs; the sampled answers are written only by a run that sampled them."""
    from asmopt.train.metrics_log import METRICS_FILE

    dest.mkdir(parents=True, exist_ok=True)
    for path in [root / "sft", *sorted(root.glob("ppo-*"))]:
        for name, suffix in ((METRICS_FILE, "metrics.jsonl"), (RUN_META, "meta.json")):
            if (path / name).is_file():
                shutil.copyfile(path / name, dest / f"{path.name}_{suffix}")
    for name in PASSES:
        if (root / "baselines" / f"{name}.jsonl").is_file():
            shutil.copyfile(root / "baselines" / f"{name}.jsonl", dest / f"{name}.jsonl")
    if (root / exploration.CHOICE_FILE).is_file():
        shutil.copyfile(root / exploration.CHOICE_FILE, dest / exploration.CHOICE_FILE)
    if (root / "data").is_dir():
        summary = json.dumps(warm_start_data(root), indent=1) + "\n"
        (dest / "warm_start_data.json").write_text(summary, encoding="utf-8")
    with (dest / "held_out_rows.jsonl").open("w", encoding="utf-8") as fh:
        for model, model_rows in rows.items():
            for row in model_rows:
                fh.write(json.dumps({"row": model, **row}) + "\n")


def write_answers(results: dict[str, list[dict[str, Any]]], dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w", encoding="utf-8") as fh:
        for model, rows in results.items():
            for row in rows:
                fh.write(json.dumps({"model": model, **row}) + "\n")


def train_and_sample(
    root: Path, suite_dir: Path, args: argparse.Namespace
) -> dict[str, list[dict[str, Any]]] | None:
    """Phases 2-6: tokenizer, SFT rows, SFT, (discovery: the exploration temperature, on the
    validation split), PPO per arm and seed, held-out sampling. None when `--stop-after
    sft` ends it after the warm start."""
    family = FAMILIES[args.family]
    edits = family.variants[args.variant]
    tokenizer = build_tokenizer(root / "tokenizer", suite_dir, edits, family)
    sft_rows(suite_dir, "train", root / "data" / "sft_train.jsonl", edits, family)
    sft_rows(suite_dir, "validation", root / "data" / "sft_validation.jsonl", edits, family)
    sft_model = run_sft(root, tokenizer, args.quick)
    if args.stop_after == "sft":
        return None
    temperature = None
    if args.variant == "discovery":
        temperature = exploration.choose_temperature(root, suite_dir, sft_model, args.quick)
    models: dict[str, Path] = {"sft": sft_model}
    for arm, seeds in (("timed", args.seeds), ("control", args.control_seeds)):
        for seed in seeds:
            models[f"{arm}-s{seed}"] = run_ppo(
                root, suite_dir, sft_model, arm, seed, args.quick, temperature
            )
    samples = 1 if args.quick else args.samples
    return {
        key: evaluate(
            model, suite_dir, samples, 1000, root / "eval" / f"{key}.jsonl", temperature, family
        )
        for key, model in models.items()
    }


def load_rows(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The tables' rows by row name from a committed `held_out_rows.jsonl`."""
    out: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.setdefault(row.pop("row"), []).append(row)
    return out


def render(
    raw: Path,
    argv: list[str],
    args: argparse.Namespace,
    rows: dict[str, list[dict[str, Any]]],
    load: tuple[float, ...],
) -> str:
    """The report of the run's family and variant from its rows and the raw data in `raw`."""
    if FAMILIES[args.family] is POPCOUNT:
        return report(raw, argv, args.seeds, args.control_seeds, rows, load, args.variant)
    return rich_report(raw, argv, args.seeds, args.control_seeds, rows, load)


def run_root(args: argparse.Namespace) -> Path:
    """The run's directory under --out-dir: one per family and variant, quick runs apart."""
    name = {"main": "full", "discovery": "discovery"}[args.variant]
    if args.family != "popcount":
        name = args.family if args.variant == "main" else f"{args.family}-{name}"
    return args.out_dir / (
        f"{name}-quick" if args.quick and name != "full" else "quick" if args.quick else name
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out-dir", type=Path, default=Path("runs/speed-learning-run"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--control-seeds",
        type=int,
        nargs="*",
        default=None,
        help="untimed control seeds (default: 0 1 2; none for the discovery variant)",
    )
    parser.add_argument(
        "--family",
        choices=sorted(FAMILIES),
        default="popcount",
        help="popcount: one fast edit (family.py); rich: composing edits and traps "
        "(rich_family.py)",
    )
    parser.add_argument(
        "--variant",
        choices=sorted({v for f in FAMILIES.values() for v in f.variants}),
        default="main",
        help="main: the warm start is shown all three edits; discovery: not the fast one",
    )
    parser.add_argument("--stop-after", choices=["sft"], help="end after the warm start")
    parser.add_argument("--samples", type=int, default=4, help="answers per test program")
    parser.add_argument("--quick", action="store_true", help="a few steps of each phase")
    parser.add_argument(
        "--answers",
        type=Path,
        help="skip training and sampling: the baselines phase and the report on these "
        "sampled answers (a test_answers.jsonl, e.g. the committed one)",
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="redraw the report from its committed raw data (`<report>/held_out_rows.jsonl` "
        "and the files beside it): no training, sampling or measurement",
    )
    parser.add_argument("--report", type=Path, help="default: bench/results/<variant's name>.md")
    args = parser.parse_args(argv)
    family = FAMILIES[args.family]
    if args.variant not in family.variants:
        parser.error(
            f"the {args.family} family has no {args.variant!r} variant "
            f"(it has: {', '.join(sorted(family.variants))})"
        )
    if args.control_seeds is None:
        args.control_seeds = [] if args.variant == "discovery" else [0, 1, 2]
    if args.report is None:
        args.report = HERE / "results" / REPORT_NAMES[(args.family, args.variant)]
    if not args.seeds or args.samples < 1:
        parser.error("--seeds needs at least one seed and --samples must be >= 1")
    raw_argv = sys.argv[1:] if argv is None else argv
    if args.render_only:
        raw = args.report.with_suffix("")
        rows = load_rows(raw / "held_out_rows.jsonl")
        text = render(raw, raw_argv, args, rows, os.getloadavg())
        learning_common.publish(text, args.report, lambda dest: None)
        return 0
    root = run_root(args)
    target = root / "report.md" if args.quick else args.report
    load = os.getloadavg()
    suite_dir = build_suite(root, family)
    if args.answers is not None:
        answers = load_answers(args.answers)
    else:
        sampled = train_and_sample(root, suite_dir, args)
        if sampled is None:
            return 0
        answers = sampled
        write_answers(answers, target.with_suffix("") / "test_answers.jsonl")
    rows = remeasure(root, suite_dir, answers, family)
    raw = target.with_suffix("")
    save_raw(root, rows, raw)
    learning_common.publish(render(raw, raw_argv, args, rows, load), target, lambda dest: None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
