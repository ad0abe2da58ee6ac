"""Discovery by amplification, first step: the warm start's base rate of the fast edit.

The discovery warm start (`speed_learning_run.py --variant discovery`) is never shown the
fast edit (`popcntq %rdi, %rax` at every `__popcountdi2` call site). Before any PPO arm, the
pre-registration (docs/training.md, "Pre-registered: discovery by amplification") measures
p0, the share of its answers for the training programs that hold the fast edit, by text
with the family's own classifier, and, while p0 is 0, changes the warm start up a ladder
fixed in advance: SFT rows of near misses, 64-bit `popcntq` edits one register operand
away from the fast line (the source is not %rdi or the destination is not %rax, never
both right), each checked to fail the program's tests, so the warm start is still never
shown a correct fast answer. A rung adds a prefix of one seeded list of such rows.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from speed_learning.family import FAST_LINE, POPCOUNT_CALL

# The ladder: near-miss rows added to the discovery warm start's 64 training rows, in the
# order they are tried; the first rung whose p0 lands in range ends it.
LADDER = (0, 8, 16, 32, 64)
P0_RANGE = (0.005, 0.02)
TEMPERATURES = (0.6, 0.8, 1.0)
SAMPLES_PER_PROGRAM = 63  # x 32 training programs = 2,016 answers per temperature
FAST_ROLLOUTS = 20  # fast-edit rollouts each PPO seed should expect
ROLLOUTS_PER_STEP = 16  # ppo.yaml: prompts_per_step x samples_per_prompt
# Registers a near miss may name instead of the right one: caller-saved ones (the call
# clobbered them, so writing one breaks nothing but the result), %rax as a wrong source.
WRONG_SOURCES = ("rax", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11")
WRONG_DESTS = ("rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11")
MAX_DRAWS = 20  # redraws of a row whose near miss happens to pass the tests


def sample_seed(temperature: float) -> int:
    """The sampling seed of one temperature (fixed in the pre-registration)."""
    return 5000 + round(100 * temperature)


def near_line(rng: random.Random) -> str:
    """One call site's near miss: a coin picks the wrong operand, then a register for it."""
    if rng.random() < 0.5:
        return f"\tpopcntq\t%{rng.choice(WRONG_SOURCES)}, %rax"
    return f"\tpopcntq\t%rdi, %{rng.choice(WRONG_DESTS)}"


def near_rewrite(baseline: str, rng: random.Random) -> str:
    """The baseline with every call site replaced by its own independently drawn near miss."""
    lines = [
        near_line(rng) if line.rstrip() == POPCOUNT_CALL else line
        for line in baseline.splitlines()
    ]
    if FAST_LINE in lines:
        raise AssertionError("a near miss wrote the fast line")
    return "\n".join(lines) + "\n"


def ladder_order(programs: list[tuple[str, str]], rounds: int) -> list[tuple[int, str]]:
    """(round, program id) in the order near rows are taken: within a round the first
    program of every template (templates sorted), then the second, ...; so a prefix of 8
    holds one row per template, of 16 two, of 32 every training program once."""
    by_kernel: dict[str, list[str]] = {}
    for pid, kernel in sorted(programs, key=lambda p: (p[1], p[0])):
        by_kernel.setdefault(kernel, []).append(pid)
    width = max(len(v) for v in by_kernel.values())
    one = [ids[i] for i in range(width) for _, ids in sorted(by_kernel.items()) if i < len(ids)]
    return [(r, pid) for r in range(rounds) for pid in one]


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided 1 - alpha interval of a binomial share k / n."""
    if n <= 0:
        raise ValueError("no trials")

    def tail_ge(p: float) -> float:  # P(X >= k)
        return 1.0 - _cdf(k - 1, n, p)

    def tail_le(p: float) -> float:  # P(X <= k)
        return _cdf(k, n, p)

    low = 0.0 if k == 0 else _solve(lambda p: tail_ge(p) - alpha / 2, increasing=True)
    high = 1.0 if k == n else _solve(lambda p: tail_le(p) - alpha / 2, increasing=False)
    return low, high


def _cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in log space."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq
        for i in range(k + 1)
    ]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def _solve(f: Any, increasing: bool) -> float:
    """The root in (0, 1) of a monotone `f`, by bisection."""
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if (f(mid) < 0) == increasing:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def rollouts_needed(p0: float) -> int | None:
    """Training rollouts per PPO seed for FAST_ROLLOUTS expected fast-edit rollouts."""
    return None if p0 <= 0 else math.ceil(FAST_ROLLOUTS / p0)


def steps_needed(p0: float) -> int | None:
    """PPO steps per seed at ROLLOUTS_PER_STEP rollouts a step (None when p0 is 0)."""
    need = rollouts_needed(p0)
    return None if need is None else math.ceil(need / ROLLOUTS_PER_STEP)


def holds_fast(label: str) -> bool:
    """An answer that holds the fast edit: the family's `fast` or `partial` class (the
    popcount family's own share labels: `popcntq %rdi, %rax` at one or more call sites,
    nothing else changed)."""
    return label in ("fast", "partial")


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One temperature's classified rows: p0 with its exact 95% interval, the class counts,
    and the descriptive text counts."""
    n = len(rows)
    k = sum(holds_fast(r["class"]) for r in rows)
    low, high = clopper_pearson(k, n)
    classes: dict[str, int] = {}
    for r in rows:
        classes[r["class"]] = classes.get(r["class"], 0) + 1
    p0 = k / n
    return {
        "answers": n,
        "fast_edit": k,
        "p0": p0,
        "p0_low": low,
        "p0_high": high,
        "applies": sum(r["applies"] is True for r in rows),
        "cut": sum(r["applies"] is None for r in rows),
        "classes": dict(sorted(classes.items(), key=lambda kv: (-kv[1], kv[0]))),
        "fast_line_text": sum(r["fast_line"] for r in rows),
        "popcntq_text": sum(r["popcntq"] for r in rows),
        "rollouts_needed": rollouts_needed(p0),
        "steps_needed": steps_needed(p0),
        "rollouts_needed_at_high": rollouts_needed(high),
    }


def lands(p0: float) -> bool:
    return P0_RANGE[0] <= p0 <= P0_RANGE[1]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def decision(summary: dict[str, Any]) -> dict[str, Any]:
    """The ladder's rule on one rung's summary: it lands where p0 is in range at a
    temperature whose validation answers apply at least half the time (the exploration
    rule's check), and the PPO arms then take the highest such temperature; otherwise it
    is `below` (go up one rung) or, when p0 passes 2% at a checked temperature, `above`."""
    from speed_learning.exploration import MIN_APPLIED

    trials = summary["exploration"]["trials"]
    applied = {float(t["temperature"]): t["applied_share"] for t in trials}
    checked = {
        float(t): s["p0"]
        for t, s in summary["temperatures"].items()
        if applied.get(float(t), 0.0) >= MIN_APPLIED
    }
    fit = [t for t, p0 in checked.items() if lands(p0)]
    if fit:
        return {"verdict": "lands", "temperature": max(fit)}
    if any(p0 > P0_RANGE[1] for p0 in checked.values()):
        return {"verdict": "above", "temperature": None}
    return {"verdict": "below", "temperature": None}



def cut_line(text: str, baseline_lines: frozenset[str]) -> str | None:
    """Why an answer's text so far can no longer hold the fast edit, or None.

    Read in its first diff block (nothing is cut after its closing fence), inside a hunk: a
    `+` line that is neither the fast line nor a line of the baseline (which could restore
    a deleted line), or a `-` line that is not a call of `__popcountdi2`; the line being
    written is cut as soon as it can no longer become a line that is kept (nor a `--- ` or
    `+++ ` header line, which the diff reader skips). The one answer this counts out that
    the classifier could call fast: one that deletes a line and restores it later, a diff
    that changes nothing there."""
    in_hunk = False
    lines = text.split("\n")
    for n, raw in enumerate(lines):
        line, done = raw.rstrip(), n < len(lines) - 1
        if line.startswith("```"):
            if in_hunk and done:
                return None
            continue
        if not done and ("--- ".startswith(line) or "+++ ".startswith(line)):
            continue
        if line.startswith(("--- ", "+++ ")):
            continue
        if line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line[:1] in "+-" and line:
            reason = _cut(line[0], line[1:], done, baseline_lines)
            if reason is not None:
                return reason
    return None


def _cut(op: str, body: str, done: bool, baseline_lines: frozenset[str]) -> str | None:
    """A `+` or `-` line's cut reason (`done`: the line is complete; else a prefix)."""
    keep = (FAST_LINE, *baseline_lines) if op == "+" else (POPCOUNT_CALL,)
    fits = body in keep if done else any(k.startswith(body) for k in keep)
    if fits:
        return None
    return ("cut_adds_" if op == "+" else "cut_deletes_") + _kind(body)


def _kind(body: str) -> str:
    """A cut line's kind, for the raw rows: the wrong-width edit's line, another `popcntq`
    line, an alignment directive, or anything else."""
    if "popcntl" in body:
        return "popcntl"
    if "popcntq" in body:
        return "popcntq"
    if body.lstrip().startswith(".p2align"):
        return "p2align"
    return "other"


def shared_prefix_answers(
    model_dir: Path,
    ppo_config: Path,
    data: str,
    *,
    suite: str,
    samples: int,
    seed: int,
    temperature: float,
    baselines: dict[str, str],
) -> list[tuple[dict[str, Any], str, int, str | None]]:
    """(row, answer text, answer tokens, cut) for `samples` answers per row of `data`, the
    prompts rendered and filtered as PPO renders them (`learning_common.sample_answers`).

    Sampled as `modeling.generate` samples (softmax of the logits over the temperature, no
    other logits processor, up to the end-of-sequence token or `max_response_len`), at
    lower cost: a row's prompt runs through the model once and its cache is repeated for
    its `samples` answers, which decode together; an answer is cut (its sampling stops) at
    the first line that rules the fast edit out (`cut_line`), and leaves the batch."""
    import torch

    from asmopt.train.config import PPOConfig, load_config
    from asmopt.train.data import load_rows
    from asmopt.train.modeling import load_causal_lm, load_tokenizer, stop_ids
    from asmopt.train.ppo import prepare_rows

    cfg = load_config(PPOConfig, ppo_config)
    torch.manual_seed(seed)
    tokenizer = load_tokenizer(model_dir)
    model = load_causal_lm(model_dir, "float32", torch.device("cpu")).eval()
    rows, texts = prepare_rows(
        load_rows(data, suite=suite, template=cfg.prompt_template), tokenizer, cfg, "data", print
    )
    decoder = Decoder(model, tokenizer, set(stop_ids(model, tokenizer)), temperature)
    out = []
    for row, text in zip(rows, texts, strict=True):
        lines = frozenset(line.rstrip() for line in baselines[row["program_id"]].splitlines())
        for tokens, cut in decoder.sample(text, samples, cfg.max_response_len, lines):
            answer = tokenizer.decode([t for t in tokens if t not in decoder.stops])
            out.append((row, answer, len(tokens), cut))
    return out


class Decoder:
    """Batched sampling of one prompt's answers from one prefill of its cache."""

    def __init__(self, model: Any, tokenizer: Any, stops: set[int], temperature: float) -> None:
        self.model, self.tokenizer, self.stops = model, tokenizer, stops
        self.temperature = temperature

    def sample(
        self, text: str, n: int, max_new: int, baseline_lines: frozenset[str]
    ) -> list[tuple[list[int], str | None]]:
        """n answers: (token ids up to and including the end token, cut reason or None)."""
        import torch

        ids = self.tokenizer([text], return_tensors="pt")["input_ids"]
        tokens: list[list[int]] = [[] for _ in range(n)]
        cuts: list[str | None] = [None] * n
        with torch.no_grad():
            cache = self.model(input_ids=ids[:, :-1], use_cache=True).past_key_values
            cache.batch_repeat_interleave(n)
            alive, cur = list(range(n)), ids[:, -1:].repeat(n, 1)
            for _ in range(max_new):
                logits = self.model(input_ids=cur, past_key_values=cache, use_cache=True).logits
                probs = torch.softmax(logits[:, -1, :].float() / self.temperature, dim=-1)
                nxt = torch.multinomial(probs, 1)
                keep = []
                for j, row in enumerate(alive):
                    token = int(nxt[j])
                    tokens[row].append(token)
                    if token in self.stops:
                        continue
                    cuts[row] = cut_line(self.tokenizer.decode(tokens[row]), baseline_lines)
                    if cuts[row] is None:
                        keep.append(j)
                if not keep:
                    break
                if len(keep) < len(alive):
                    cache.batch_select_indices(torch.tensor(keep))
                    alive = [alive[j] for j in keep]
                cur = nxt[keep]
        return list(zip(tokens, cuts, strict=True))
