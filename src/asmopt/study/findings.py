"""What a study's numbers allow it to say: the computed statements behind its report.

Everything here reads a `study.json`-shaped dict (asmopt.study.loops writes it; the report,
asmopt.study.report, draws it), so the statements can be recomputed from a committed file
without retraining. A ranking of R rests on the seed-level test only, corrected for the
number of pairs compared (Holm; see `findings`); whether loss moves monotonically with R is
one more question, asked once of all seeds by Page's L trend test (`trend_over_r`); a
per-loop trend inside one model is named by the signs of its steps.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from asmopt.study.intervals import holm, normal_p, page_l, t_interval, t_test_p

# The size class of a per-loop change of a positive quantity: "shrinking" or "growing" when
# its last value differs from its first by more than this factor, "flat" otherwise. The
# report's words are the direction (`DIRECTIONS`), taken from the sign of every step; the
# size class is kept beside it, never in its place.
TREND_FACTOR = 1.25
# The direction of a per-loop sequence, from the signs of its loop-to-loop steps.
DIRECTIONS = ("rising", "falling", "mixed")
# Family-wise error rate of each family of pairwise tests (all pairs of R across seeds; the
# consecutive steps over windows), held by Holm's step-down correction.
FAMILY_ALPHA = 0.05
CORRECTION = "Holm"
# Rankings of R across models are stated only from this many independent training runs per R;
# with fewer, seed-to-seed variation (unmeasured) can be as large as the differences.
MIN_SEEDS_FOR_RANKING = 3


def _fmt(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def erank_rule(eranks: list[float | None]) -> int:
    """The rule of thumb: add a loop only while effective rank still rises.

    Given erank(h(r)) for r = 1..R of one model, the last r reached by a run of rises."""
    best = 1
    for r in range(1, len(eranks)):
        prev, cur = eranks[r - 1], eranks[r]
        if prev is None or cur is None or cur <= prev:
            break
        best = r + 1
    return best


def direction(values: list[float]) -> str:
    """ "rising" when every step from one loop to the next goes up, "falling" when every
    step goes down, "mixed" otherwise (a step of exactly 0 included): the word is the sign
    of the data, whatever the size of the change."""
    steps = [b - a for a, b in itertools.pairwise(values)]
    if steps and all(d > 0 for d in steps):
        return "rising"
    if steps and all(d < 0 for d in steps):
        return "falling"
    return "mixed"


def trend(values: list[float | None]) -> dict[str, Any] | None:
    """Change of a per-loop sequence from its first to its last value: its `direction`
    (the signs of its steps: the only word the report uses), and for positive values the
    ratio last / first (`change`) with its size class (`label`, by `TREND_FACTOR`; None
    where a value is not positive, since a ratio of such values has no direction)."""
    known = [v for v in values if v is not None]
    if len(known) < 2:
        return None
    change = known[-1] / known[0] if all(v > 0 for v in known) else None
    label = None
    if change is not None:
        label = "flat"
        if change < 1 / TREND_FACTOR:
            label = "shrinking"
        elif change > TREND_FACTOR:
            label = "growing"
    return {"values": known, "change": change, "label": label, "direction": direction(known)}


def first_seed(result: dict[str, Any]) -> int:
    """The seed of the models under `models` of a study.json (diagnostics, plots and the
    window-level tests show them). Files written before seeds were recorded hold one run,
    of the config's seed."""
    listed = result.get("seed_list")
    if listed:
        return int(listed[0])
    return init_seed_of(result.get("config", {}).get("train", {}))


def init_seed_of(train: dict[str, Any]) -> int:
    """The initial weights' seed of a study.json's `train` section (`init_seed`, or `seed`
    in files written before it was renamed)."""
    return int(train.get("init_seed", train.get("seed", 0)))


def seed_runs(result: dict[str, Any]) -> dict[int, dict[int, dict[str, Any]]]:
    """R -> seed -> model of a study.json, the first seed from `models`, the others from
    `other_seeds`."""
    first = first_seed(result)
    others = result.get("other_seeds", {})
    runs: dict[int, dict[int, dict[str, Any]]] = {}
    for r in result["loops"]:
        runs[r] = {first: result["models"][str(r)]}
        for seed, model in others.get(str(r), {}).items():
            runs[r][int(seed)] = model
    return runs


def across_seeds(result: dict[str, Any]) -> dict[str, Any]:
    """Held-out losses over the seeds every R was trained with: per R the mean, min / max
    and t-interval; per pair of R the seed-by-seed differences (later minus earlier R, same
    seed, so the same initial weights and token order) with their mean and t-interval."""
    runs = seed_runs(result)
    loops = result["loops"]
    common = sorted(set.intersection(*(set(runs[r]) for r in loops)))

    def heldout(r: int, seed: int, key: str) -> float:
        return float(runs[r][seed]["summary"]["heldout"][key])

    keys = ("loss", "asm_loss")
    per_r = {
        str(r): {k: t_interval([heldout(r, s, k) for s in common]) for k in keys} for r in loops
    }
    pairs = [
        {
            "from": a,
            "to": b,
            **{k: t_interval([heldout(b, s, k) - heldout(a, s, k) for s in common]) for k in keys},
        }
        for a, b in itertools.combinations(loops, 2)
    ]
    return {"seeds": common, "per_r": per_r, "pairs": pairs}


def _verdict(d: dict[str, Any], neutral: str, significant: bool | None = None) -> str:
    """ "better" / "worse" for the later R when the test rejects a zero difference, else
    `neutral`; `significant` is the corrected decision, by default the interval's own."""
    if d["mean"] is None:
        return "unknown"
    if d["significant"] if significant is None else significant:
        return "better" if d["mean"] < 0 else "worse"
    return neutral


def _shape(verdicts: list[str]) -> str:
    """The curve of loss over R from the verdicts of consecutive steps (neutral: neither
    "better" nor "worse" nor "unknown")."""
    neutral = [v not in ("better", "worse", "unknown") for v in verdicts]
    if verdicts and all(neutral):
        return "inconclusive: no step from one R to the next is distinguishable"
    if verdicts and all(v == "better" for v in verdicts):
        return "monotone: every added loop lowered held-out assembly loss"
    if verdicts and all(v == "better" or n for v, n in zip(verdicts, neutral, strict=True)):
        return "saturating: added loops helped or made no clear difference, none hurt"
    if "worse" in verdicts and "better" in verdicts[: verdicts.index("worse")]:
        return "non-monotonic: loss fell, then rose again with more loops"
    if "worse" in verdicts:
        return "loops hurt: loss rose without an earlier significant fall"
    return "inconclusive"


def trend_over_r(agg: dict[str, Any], loops: list[int]) -> dict[str, Any] | None:
    """Page's L test over the seeds of held-out assembly loss ordered by R (exact): one
    test of "loss moves monotonically with R", beside the pairwise family and not part of
    it. Pairwise tests over three seeds, corrected over six pairs, can miss an order that
    every seed shows; this asks that order once. Two-sided: the direction was not fixed
    before the data were seen. None with fewer than two R or two seeds."""
    seeds = agg["seeds"]
    if len(loops) < 2 or len(seeds) < 2:
        return None
    per_r = [agg["per_r"][str(r)]["asm_loss"]["values"] for r in loops]
    test = page_l([[values[i] for values in per_r] for i in range(len(seeds))])
    test["direction"] = "rises" if test["p"] <= test["p_lower"] else "falls"
    test["significant"] = test["p_two"] <= FAMILY_ALPHA
    return test


def trend_text(trend: dict[str, Any]) -> str:
    """The trend test as one clause of the summary line."""
    return (
        f"trend over R (Page's L test over the {trend['n']} seeds, one test beside the "
        f"pairwise family; {trend['method']}, two-sided): L = {trend['L']:g}, p = "
        f"{trend['p_two']:.1e} (one-sided for loss rising with R: {trend['p']:.1e}), "
        + (
            f"held-out assembly loss {trend['direction']} with R"
            if trend["significant"]
            else "no monotone trend shown"
        )
    )


def _shape_with_trend(step_shape: str, trend: dict[str, Any] | None) -> str:
    """The shape from the steps, unless no step is distinguishable while the trend test
    finds a monotone trend: then the trend, with the steps' verdict beside it."""
    if trend is None or not trend["significant"] or not step_shape.startswith("inconclusive"):
        return step_shape
    word = "rising" if trend["direction"] == "rises" else "falling"
    return (
        f"{word} with R by the trend test over seeds, though no single step from one R to "
        f"the next is distinguishable after {CORRECTION}"
    )


def undecided_text(seeds: int) -> str:
    """The verdict of a pair the seed-level test cannot order."""
    return f"not distinguishable with {seeds} seeds"


def window_steps(comparisons: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The window-level verdict of each step from R to the next (first seed's weights),
    with Holm's correction over the steps (normal p-values from the intervals)."""
    tests = holm([normal_p(c["asm_loss"]) for c in comparisons], FAMILY_ALPHA)
    return [
        {
            "from": c["from"],
            "to": c["to"],
            "asm_loss": c["asm_loss"],
            **test,
            "verdict": _verdict(c["asm_loss"], "no clear difference", test["reject"]),
        }
        for c, test in zip(comparisons, tests, strict=True)
    ]


def seed_pairs(agg: dict[str, Any], can_rank: bool) -> list[dict[str, Any]]:
    """The seed-level verdict of every pair of R ("no ranking" with too few seeds).

    Each pair's paired t-test over seeds is corrected by Holm over all pairs: `p` is the
    uncorrected p-value (below 0.05 exactly when the pair's 95% interval excludes 0),
    `p_holm` the adjusted one, `uncorrected` the verdict the interval alone would give;
    `verdict` is the corrected one, the only one an order rests on."""
    undecided = undecided_text(len(agg["seeds"]))
    tests = holm([t_test_p(p["asm_loss"]["values"]) for p in agg["pairs"]], FAMILY_ALPHA)
    return [
        {
            "from": p["from"],
            "to": p["to"],
            "asm_loss": p["asm_loss"],
            **test,
            "uncorrected": _verdict(p["asm_loss"], undecided),
            "verdict": _verdict(p["asm_loss"], undecided, test["reject"])
            if can_rank
            else "no ranking",
        }
        for p, test in zip(agg["pairs"], tests, strict=True)
    ]


def uncorrected_only(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pairs whose 95% interval excludes 0 but which do not survive the correction: named
    in the report so that an interval read alone is not taken for an order."""
    return [
        p
        for p in pairs
        if p["uncorrected"] in ("better", "worse") and p["verdict"] not in ("better", "worse")
    ]


def significant_orders(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Significant pairs as (lower loss, higher loss); "better" means the later R is lower."""
    return [
        {
            "lower": p["to"] if p["verdict"] == "better" else p["from"],
            "higher": p["from"] if p["verdict"] == "better" else p["to"],
            "asm_loss": p["asm_loss"],
        }
        for p in pairs
        if p["verdict"] in ("better", "worse")
    ]


def paper_pattern(
    asm: dict[int, float], best_asm: int, best_clear: bool, steps: list[dict[str, Any]]
) -> bool:
    """LoopCoder-v2's pattern: with R = 1..4 trained, R = 2 lowest and a later step worse.

    `steps` are the seed-level steps when the study may rank, else the window-level ones;
    `best_clear` says whether the lowest R counts as lowest: when the study may rank, only
    if it beats every other R by the seed-level test."""
    later_worse = any(s["verdict"] == "worse" for s in steps if s["from"] >= 2)
    return all(r in asm for r in (1, 2, 3, 4)) and best_clear and best_asm == 2 and later_worse


def tradeoff(diag: dict[str, Any], model: int) -> dict[str, Any] | None:
    """Gain (relative step size) against cost (relative offset cost) over loops 2.. of one
    model: each with its direction (the sign of every step) and its size class by the one
    factor rule; None when either sequence has fewer than two values."""
    gains = trend(diag["step_size_rel"][1:])
    costs = trend(diag["offset_cost_rel"][1:])
    if gains is None or costs is None:
        return None
    return {
        "model": model,
        "gains": gains["values"],
        "costs": costs["values"],
        "gains_change": gains["change"],
        "costs_change": costs["change"],
        "gains_direction": gains["direction"],
        "costs_direction": costs["direction"],
        "gains_trend": gains["label"],
        "costs_trend": costs["label"],
        "rule": f"last / first below 1/{TREND_FACTOR} shrinking, above {TREND_FACTOR} "
        "growing, else flat",
    }


# The per-loop quantities whose trend inside the largest model the report describes, with
# the first loop each is read from: loop 1's step is taken from the embedding and is not a
# loop-to-loop step, and the offset cost starts at loop 2. The raw and the relative offset
# cost are both shown: the relative one can fall while the raw one rises, because the state
# norm it is divided by grows.
TREND_QUANTITIES: tuple[tuple[str, str, int], ...] = (
    ("step_size", "step size δ", 2),
    ("step_size_rel", "relative step size δ/‖h‖", 2),
    ("offset_cost", "offset cost Ω", 2),
    ("offset_cost_rel", "relative offset cost Ω/‖h‖", 2),
    ("state_norm", "state norm ‖h‖", 1),
    ("erank", "effective rank", 1),
)


def direction_count(trends: list[dict[str, Any] | None]) -> str:
    """How many seeds' sequences rise, fall or neither, as one phrase ("rising in 3 of 3
    seeds"; "rising in 2, mixed in 1 of 3 seeds"): a count of signs, not a test."""
    counts = Counter(t["direction"] if t else "undefined" for t in trends)
    words = [f"{d} in {counts[d]}" for d in (*DIRECTIONS, "undefined") if counts[d]]
    noun = "seed" if len(trends) == 1 else "seeds"
    return f"{', '.join(words)} of {len(trends)} {noun}"


def loop_trends(runs: dict[int, dict[int, dict[str, Any]]], seeds: list[int]) -> dict[str, Any]:
    """The direction of each `TREND_QUANTITIES` sequence inside the largest model, seed by
    seed, and the count over seeds: what the report may say of a per-loop trend (a
    description of these models, not a test). Quantities a file does not hold are left out."""
    largest = max(runs)
    seeds = [s for s in seeds if s in runs[largest]] or sorted(runs[largest])
    per_loop = {s: runs[largest][s]["diagnostics"]["per_loop"] for s in seeds}
    rows = []
    for key, name, first_loop in TREND_QUANTITIES:
        if not all(key in per_loop[s] for s in seeds):
            continue
        trends = {str(s): trend(per_loop[s][key][first_loop - 1 :]) for s in seeds}
        rows.append(
            {
                "key": key,
                "name": name,
                "first_loop": first_loop,
                "per_seed": trends,
                "count": direction_count(list(trends.values())),
            }
        )
    rule = {str(s): erank_rule(per_loop[s]["erank"]) for s in seeds if "erank" in per_loop[s]}
    return {"model": largest, "seeds": seeds, "rows": rows, "erank_rule": rule}


def ranked_summary(
    agg: dict[str, Any],
    loops: list[int],
    pairs: list[dict[str, Any]],
    ranking: list[dict[str, Any]],
    best: tuple[int, bool],
    shape: str,
    trend: dict[str, Any] | None = None,
) -> str:
    """The summary line of a study that may rank R (`best`: the R of lowest mean assembly
    loss, and whether it beats every other R after the correction; `trend`: Page's test)."""
    seeds = len(agg["seeds"])
    undecided = undecided_text(seeds)
    asm_text = ", ".join(
        f"R={r}: {_mean_interval(agg['per_r'][str(r)]['asm_loss'])}" for r in loops
    )
    orders = ", ".join(f"R={x['lower']} < R={x['higher']}" for x in ranking) or "none"
    ties = ", ".join(f"R={p['from']} vs R={p['to']}" for p in pairs if p["verdict"] == undecided)
    loose = ", ".join(f"R={p['from']} vs R={p['to']}" for p in uncorrected_only(pairs))
    head = (
        f"best R by held-out assembly loss: {best[0]}, lower than every other R"
        if best[1]
        else "no single best R"
    )
    return (
        f"{head} ({seeds} seeds per R; mean [95% t-interval over seeds] {asm_text}); "
        f"significantly lower ({CORRECTION} over the {len(pairs)} pairs, family-wise "
        f"{FAMILY_ALPHA:.0%}): {orders}"
        + (f"; {undecided}: {ties}" if ties else "")
        + (f" ({loose}: interval excludes 0 only without the correction)" if loose else "")
        + f"; shape: {shape}"
        + (f"; {trend_text(trend)}" if trend is not None else "")
    )


def unranked_summary(
    agg: dict[str, Any], loops: list[int], asm: dict[int, float], best_asm: int, shape: str
) -> str:
    """The summary line of a study with too few seeds to rank R: the losses as measured."""
    seeds = len(agg["seeds"])
    runs_text = "one training run" if seeds == 1 else f"{seeds} training runs"
    asm_text = ", ".join(f"R={r}: {_fmt(asm[r])}" for r in loops)
    mean = "mean " if seeds > 1 else ""
    return (
        f"{runs_text} per R, so no ranking of R is claimed; {mean}held-out assembly loss "
        f"{asm_text} (lowest: R={best_asm}); paired test on the weights of seed "
        f"{agg['seeds'][0] if agg['seeds'] else '?'} ({CORRECTION} over the steps): {shape}"
    )


def findings(result: dict[str, Any]) -> dict[str, Any]:
    """Computed statements for the report, limited to what the data can carry.

    A ranking of R rests on the seed-level test only: from `MIN_SEEDS_FOR_RANKING` seeds
    per R, an order between two R is stated when the paired t-test over seeds of their
    difference rejects 0 after Holm's correction over all pairs (family-wise 5%), and a
    best R only when it beats every other R that way; other pairs are "not
    distinguishable with N seeds". With fewer seeds no ranking is stated: the losses are
    reported as measured and the window-level verdicts (Holm over the steps) say "for these
    weights". `seeds` counts the runs the file holds for every R, not what it claims.
    """
    loops = result["loops"]
    agg = across_seeds(result)
    can_rank = len(agg["seeds"]) >= MIN_SEEDS_FOR_RANKING
    asm = {r: agg["per_r"][str(r)]["asm_loss"]["mean"] for r in loops}
    best_asm = min(loops, key=lambda r: asm[r])
    steps = window_steps(result["comparisons"])
    pairs = seed_pairs(agg, can_rank)
    consecutive = set(itertools.pairwise(loops))
    seed_steps = [p for p in pairs if (p["from"], p["to"]) in consecutive]
    # The shape and the paper's pattern come from the seed-level test when it may rank,
    # else from the window-level test of the first seed's weights.
    trend = trend_over_r(agg, loops) if can_rank else None
    shape = _shape_with_trend(
        _shape([s["verdict"] for s in (seed_steps if can_rank else steps)]), trend
    )
    ranking = significant_orders(pairs)
    beaten = {x["higher"] for x in ranking if x["lower"] == best_asm}
    best_significant = can_rank and beaten == set(loops) - {best_asm}
    if can_rank:
        best = (best_asm, best_significant)
        summary = ranked_summary(agg, loops, pairs, ranking, best, shape, trend)
    else:
        summary = unranked_summary(agg, loops, asm, best_asm, shape)
    return {
        "seeds": len(agg["seeds"]),
        "seed_list": agg["seeds"],
        "can_rank": can_rank,
        "correction": {"method": CORRECTION, "family_alpha": FAMILY_ALPHA},
        **_loss_and_rank_orders(result, agg, can_rank),
        "best_asm_loss": best_asm,
        "best_asm_significant": best_significant,
        "across_seeds": agg,
        "steps": steps,
        "seed_steps": seed_steps,
        "seed_pairs": pairs,
        "ranking": ranking if can_rank else [],
        "uncorrected_only": uncorrected_only(pairs) if can_rank else [],
        "shape": shape,
        "trend": trend,
        "paper_pattern": paper_pattern(
            asm, best_asm, best_significant if can_rank else True, seed_steps if can_rank else steps
        ),
        **_largest_model_readings(result, agg["seeds"]),
        "summary_line": summary,
    }


def _loss_and_rank_orders(
    result: dict[str, Any], agg: dict[str, Any], can_rank: bool
) -> dict[str, Any]:
    """The R of lowest mean loss, the last loop's effective rank per R (mean and per seed),
    and whether the two order R alike (an order of means, stated only when R may be
    ranked, and never as a test)."""
    loops = result["loops"]
    runs = seed_runs(result)
    loss = {r: agg["per_r"][str(r)]["loss"]["mean"] for r in loops}
    asm = {r: agg["per_r"][str(r)]["asm_loss"]["mean"] for r in loops}
    final_erank = {r: _mean_last_erank(runs[r], agg["seeds"]) for r in loops}
    by_loss = sorted(loops, key=lambda r: asm[r])
    by_erank = sorted(loops, key=lambda r: -(final_erank[r] or 0.0))
    return {
        "best_loss": min(loops, key=lambda r: loss[r]),
        "final_erank": {str(r): v for r, v in final_erank.items()},
        "final_erank_per_seed": {
            str(r): [runs[r][s]["diagnostics"]["per_loop"]["erank"][-1] for s in agg["seeds"]]
            for r in loops
        },
        "erank_orders_like_loss": (by_loss == by_erank) if can_rank else None,
    }


def _largest_model_readings(result: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    """What the report reads inside the largest model: the erank rule (first seed), the
    gain-vs-cost pair (first seed) and every per-loop trend over all seeds."""
    largest = max(result["loops"])
    diag = result["models"][str(largest)]["diagnostics"]["per_loop"]
    runs = seed_runs(result)
    return {
        "erank_rule": {"model": largest, "recommended_loops": erank_rule(diag["erank"])},
        "tradeoff": tradeoff(diag, largest),
        "loop_trends": loop_trends({largest: runs[largest]}, seeds),
    }


def _mean_interval(d: dict[str, Any]) -> str:
    if d["low"] is None:
        return _fmt(d["mean"])
    return f"{_fmt(d['mean'])} [{_fmt(d['low'])}, {_fmt(d['high'])}]"


def _mean_last_erank(per_seed: dict[int, dict[str, Any]], seeds: list[int]) -> float | None:
    """Mean over seeds of the effective rank of a model's last loop (None if undefined)."""
    values = [per_seed[s]["diagnostics"]["per_loop"]["erank"][-1] for s in seeds]
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known and len(known) == len(values) else None
