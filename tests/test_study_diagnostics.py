"""Loop diagnostics against hand-computed examples, and the runner on tiny PLT models."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest
from conftest import lazy

if TYPE_CHECKING:
    import torch

    from asmopt.study import diagnostics as D
    from asmopt.study import loops
else:
    torch = lazy("torch")
    D = lazy("asmopt.study.diagnostics")
    loops = lazy("asmopt.study.loops")

pytestmark = pytest.mark.ml


def t(values: list) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


# --------------------------------------------------------------------------- pure functions


def test_effective_rank_of_known_matrices() -> None:
    # sigma = (3, 1): p = (3/4, 1/4), erank = exp(-(3/4 ln 3/4 + 1/4 ln 1/4)) = 1.7548
    expected = math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    assert D.effective_rank(t([[3.0, 0.0], [0.0, 1.0]]), normalize=False) == pytest.approx(expected)
    assert expected == pytest.approx(1.7548, abs=1e-4)
    # Four orthogonal directions of equal length: rank 4, with or without normalisation.
    assert D.effective_rank(torch.eye(4)) == pytest.approx(4.0)
    assert D.effective_rank(5 * torch.eye(4), normalize=False) == pytest.approx(4.0)
    # One direction, any scale per row: rank 1.
    assert D.effective_rank(t([[1.0, 2.0], [2.0, 4.0], [-3.0, -6.0]])) == pytest.approx(1.0)


def test_effective_rank_normalises_row_scale() -> None:
    # Rows e1 and 100 * e2: raw sigma (100, 1) gives a rank near 1; after RMS normalisation
    # both rows have the same length and the rank is 2.
    m = t([[1.0, 0.0], [0.0, 100.0]])
    assert D.effective_rank(m, normalize=False) < 1.1
    assert D.effective_rank(m) == pytest.approx(2.0)


def test_offset_cost_of_a_known_sequence() -> None:
    # 1-D states 0, 1, 3: neighbour distances 1 and 2, mean 1.5.
    costs = D.offset_cost(t([[0.0], [1.0], [3.0]]))
    assert costs.tolist() == pytest.approx([1.0, 2.0])
    assert float(costs.mean()) == pytest.approx(1.5)
    # 2-D: (0, 0) -> (3, 4) is 5 apart; batched input keeps the batch axis.
    assert D.offset_cost(t([[[0.0, 0.0], [3.0, 4.0]]])).tolist() == [[5.0]]


def test_step_size_and_fixed_point_gap() -> None:
    assert D.step_size(t([[0.0, 0.0]]), t([[3.0, 4.0]])).tolist() == [5.0]
    assert D.fixed_point_gap(t([[1.0, 1.0]]), t([[1.0, 1.0]])).tolist() == [0.0]
    assert D.fixed_point_gap(t([[1.0, 2.0]]), t([[1.0, 0.0]])).tolist() == [2.0]


def test_update_alignment_sign() -> None:
    zero, one, two = t([[0.0]]), t([[1.0]]), t([[2.0]])
    # Oscillation 0 -> 1 -> 0: the second update undoes the first, cos = -1.
    assert D.update_alignment(zero, one, zero).tolist() == [pytest.approx(-1.0)]
    # Steady progress 0 -> 1 -> 2: cos = +1.
    assert D.update_alignment(zero, one, two).tolist() == [pytest.approx(1.0)]
    # Orthogonal updates: (0,0) -> (1,0) -> (1,1): cos = 0.
    a, b, c = t([[0.0, 0.0]]), t([[1.0, 0.0]]), t([[1.0, 1.0]])
    assert D.update_alignment(a, b, c).tolist() == [pytest.approx(0.0)]
    # A damped oscillation 0 -> 1 -> 0.5 -> 0.75 alternates in sign at every loop.
    states = [t([[v]]) for v in (0.0, 1.0, 0.5, 0.75)]
    signs = [float(D.update_alignment(states[r - 2], states[r - 1], states[r])[0]) for r in (2, 3)]
    assert signs == [pytest.approx(-1.0), pytest.approx(-1.0)]


def test_attention_entropy_of_known_distributions() -> None:
    assert D.attention_entropy(t([0.25] * 4)).item() == pytest.approx(math.log(4))
    assert D.attention_entropy(t([1.0, 0.0, 0.0])).item() == pytest.approx(0.0)
    # Masked keys (probability exactly 0) add nothing.
    assert D.attention_entropy(t([0.5, 0.5, 0.0])).item() == pytest.approx(math.log(2))


def test_attention_kl_of_known_distributions() -> None:
    # KL((1/2, 1/2) || (1/4, 3/4)) = 1/2 ln 2 + 1/2 ln(2/3) = 0.143841
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert D.attention_kl(t([0.5, 0.5]), t([0.25, 0.75])).item() == pytest.approx(expected)
    assert expected == pytest.approx(0.143841, abs=1e-6)
    assert D.attention_kl(t([0.2, 0.8]), t([0.2, 0.8])).item() == pytest.approx(0.0)
    # A key p does not use contributes nothing, whatever q puts there.
    assert D.attention_kl(t([1.0, 0.0]), t([0.5, 0.5])).item() == pytest.approx(math.log(2))


def test_head_similarity() -> None:
    same = t([[[[1.0, 0.0], [0.5, 0.5]], [[1.0, 0.0], [0.5, 0.5]]]])  # [B=1, H=2, Q=2, K=2]
    assert D.head_similarity(same).tolist() == [pytest.approx(1.0)]
    disjoint = t([[[[1.0, 0.0]], [[0.0, 1.0]]]])
    assert D.head_similarity(disjoint).tolist() == [pytest.approx(0.0)]
    # Heads A, A, B with A orthogonal to B: pair cosines 1, 0, 0 -> mean 1/3.
    three = t([[[[1.0, 0.0]], [[1.0, 0.0]], [[0.0, 1.0]]]])
    assert D.head_similarity(three).tolist() == [pytest.approx(1 / 3)]


def test_output_kl_rank_and_peak() -> None:
    p, q = t([[0.5, 0.5]]).log(), t([[0.25, 0.75]]).log()
    assert D.output_kl(p, q).tolist() == [pytest.approx(0.143841, abs=1e-6)]
    assert D.output_kl(p, p + 3.0).tolist() == [pytest.approx(0.0)]  # softmax ignores shifts
    logits = t([[3.0, 1.0, 2.0]])
    assert D.true_token_rank(logits, torch.tensor([0])).tolist() == [1]
    assert D.true_token_rank(logits, torch.tensor([2])).tolist() == [2]
    assert D.true_token_rank(logits, torch.tensor([1])).tolist() == [3]
    # Two tokens; shifts of loops 2 and 3: token 0 peaks at loop 3, token 1 at loop 2.
    shifts = t([[0.1, 0.5], [0.3, 0.2]])
    assert D.peak_loop(shifts).tolist() == [3, 2]


def test_paired_difference_and_rule_of_thumb() -> None:
    d = loops.paired_difference([1.0, 2.0, 3.0, None], [0.0, 1.0, 2.0, 5.0])
    assert d["mean"] == pytest.approx(-1.0) and d["n"] == 3
    assert d["low"] == pytest.approx(-1.0) and d["significant"]
    d = loops.paired_difference([1.0, 2.0], [2.0, 1.0])
    assert d["mean"] == pytest.approx(0.0) and not d["significant"]
    assert loops.paired_difference([None], [1.0])["mean"] is None
    assert loops.erank_rule([10.0, 12.0, 11.0, 13.0]) == 2
    assert loops.erank_rule([10.0, 9.0]) == 1
    assert loops.erank_rule([1.0, 2.0, 3.0, 4.0]) == 4


ASM = {1: 1.17, 2: 1.60, 3: 1.51, 4: 2.09}


def study_result(
    seeds: int | None, noise: dict[tuple[int, int], float] | None = None, claimed: int | None = None
) -> dict:
    """A study.json-shaped result for `findings`: four models per seed, the R = 4
    diagnostics given. Seed k's assembly loss of R is ASM[R] + noise[(R, k)]; `seeds=None`
    writes the older one-run file without `seed_list`; `claimed` overrides `seeds` in the
    file (a file claiming more runs than it holds)."""
    eranks = {1: [64.2], 2: [43.7, 47.6], 3: [39.0, 46.7, 48.2], 4: [25.9, 28.6, 30.2, 30.6]}
    noise = noise or {}

    def model(r: int, seed: int) -> dict:
        per_loop = {
            "erank": eranks[r],
            "step_size_rel": [46.0, 1.165, 0.846, 0.742][:r],
            "offset_cost_rel": [None, 0.930, 0.873, 0.816][:r],
        }
        asm = ASM[r] + noise.get((r, seed), 0.0)
        return {
            "summary": {"heldout": {"loss": asm + 0.5, "asm_loss": asm}},
            "diagnostics": {"per_loop": per_loop},
        }

    listed = list(range(seeds or 1))
    comparisons = [
        {"from": a, "to": a + 1, "asm_loss": {"mean": ASM[a + 1] - ASM[a], "significant": True}}
        for a in (1, 2, 3)
    ]
    result = {
        "loops": [1, 2, 3, 4],
        "models": {str(r): model(r, 0) for r in (1, 2, 3, 4)},
        "other_seeds": {str(r): {str(k): model(r, k) for k in listed[1:]} for r in (1, 2, 3, 4)},
        "comparisons": comparisons,
    }
    if seeds is not None:
        result["seeds"] = seeds
        result["seed_list"] = listed
    if claimed is not None:
        result["seeds"] = claimed
    return result


# Seed-to-seed noise that keeps every pair apart except R = 2 vs R = 3 (0.09 apart, but
# seed 1 reverses them).
NOISE = {(1, 1): 0.01, (1, 2): -0.01, (2, 1): -0.12, (2, 2): 0.02, (3, 1): 0.05, (4, 2): 0.02}


def test_t_interval_uses_students_t() -> None:
    d = loops.t_interval([1.0, 2.0, 3.0])
    half = 4.302653 / 3**0.5  # sd 1, 2 degrees of freedom
    assert d["mean"] == pytest.approx(2.0) and d["min"] == 1.0 and d["max"] == 3.0
    assert d["low"] == pytest.approx(2.0 - half) and d["high"] == pytest.approx(2.0 + half)
    assert not d["significant"]  # [-0.48, 4.48] holds 0
    assert loops.t_interval([1.0, 1.1, 1.2])["significant"]
    assert loops.t_interval([-1.0, -1.1, -1.2])["significant"]
    one = loops.t_interval([0.3])
    assert one["mean"] == 0.3 and one["low"] is None and not one["significant"]
    assert loops.t_interval([])["mean"] is None
    assert loops.t_quantile(1) == pytest.approx(12.706205)
    assert loops.t_quantile(30) == pytest.approx(2.042272)
    # Exact for any degrees of freedom: still wider than the normal quantile at 100.
    assert loops.t_quantile(100) == pytest.approx(1.983972) and loops.t_quantile(100) > loops.Z95
    with pytest.raises(ValueError, match="degrees of freedom"):
        loops.t_quantile(0)


def test_findings_rank_only_from_three_seeds_and_judge_trends_by_one_rule() -> None:
    one = loops.findings(study_result(None))  # older files: one run per R
    assert one["seeds"] == 1 and not one["can_rank"]
    assert one["erank_orders_like_loss"] is None and one["ranking"] == []
    assert "no ranking of R is claimed" in one["summary_line"]
    assert "best R" not in one["summary_line"]
    trade = one["tradeoff"]
    # Gains 1.165 -> 0.742 (x0.64) shrink; costs 0.930 -> 0.816 (x0.88) are flat: same rule.
    assert trade["gains_trend"] == "shrinking" and trade["costs_trend"] == "flat"
    assert trade["gains_change"] == pytest.approx(0.742 / 1.165)
    assert loops.trend([1.0, 1.3])["label"] == "growing"
    assert loops.trend([1.0, 0.9, 1.1])["label"] == "flat"
    assert loops.trend([None, 2.0]) is None

    # A file that claims three runs but holds one is read as one run.
    assert not loops.findings(study_result(None, claimed=3))["can_rank"]

    # Two seeds, however clear the differences: no ranking.
    two = loops.findings(study_result(2, NOISE))
    assert two["seeds"] == 2 and not two["can_rank"] and two["ranking"] == []
    assert "2 training runs per R, so no ranking of R is claimed" in two["summary_line"]
    assert {p["verdict"] for p in two["seed_pairs"]} == {"no ranking"}


def test_findings_rank_pairs_whose_seed_interval_excludes_zero() -> None:
    three = loops.findings(study_result(3, NOISE))
    assert three["can_rank"] and three["seed_list"] == [0, 1, 2]
    assert three["summary_line"].startswith("best R by held-out assembly loss: 1")
    verdicts = {(p["from"], p["to"]): p["verdict"] for p in three["seed_pairs"]}
    assert verdicts[(2, 3)] == "not distinguishable with 3 seeds"
    assert verdicts[(1, 2)] == "worse" and verdicts[(3, 4)] == "worse"
    assert "not distinguishable with 3 seeds: R=2 vs R=3" in three["summary_line"]
    pairs = {(x["lower"], x["higher"]) for x in three["ranking"]}
    assert pairs == {(1, 2), (1, 3), (1, 4), (2, 4), (3, 4)}
    # Per-seed differences are paired: R = 2 minus R = 1, seed by seed.
    d12 = next(p for p in three["seed_pairs"] if (p["from"], p["to"]) == (1, 2))["asm_loss"]
    assert d12["values"] == pytest.approx([0.43, 0.43 - 0.13, 0.43 + 0.03])
    per_r = three["across_seeds"]["per_r"]["2"]["asm_loss"]
    assert per_r["mean"] == pytest.approx(1.60 + (-0.12 + 0.02) / 3)
    assert per_r["min"] == pytest.approx(1.48) and per_r["max"] == pytest.approx(1.62)
    # Shape from the seed-level steps: worse, undecided, worse.
    assert three["shape"].startswith("loops hurt")
    # By mean loss 1, 3, 2, 4 (R = 2 and 3 are tied by the test, not by the means); by
    # last-loop erank 64.2, 48.2, 47.6, 30.6: the same order of means.
    assert three["erank_orders_like_loss"] is True

    # No R beats every other one: no best R, the pairs that are apart still ordered.
    close = {**NOISE, (1, 1): 0.50, (1, 2): -0.45}  # R = 1 swings across R = 2 and 3
    tied = loops.findings(study_result(3, close))
    assert tied["summary_line"].startswith("no single best R") and not tied["best_asm_significant"]
    assert "R=3 < R=4" in tied["summary_line"]


# --------------------------------------------------------------------------- runner


def tiny_plt(loops: int, mode: str = "plt") -> torch.nn.Module:
    from asmopt.models.plt import PLTConfig, PLTForCausalLM

    config = PLTConfig(
        vocab_size=50,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        plt_num_loops=loops,
        plt_window_size=[4, 0],
        plt_loop_mode=mode,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    torch.manual_seed(0)
    return PLTForCausalLM(config).eval()


def windows(n: int = 3, length: int = 17) -> torch.Tensor:
    return torch.randint(0, 50, (n, length), generator=torch.Generator().manual_seed(1))


def test_runner_on_a_three_loop_plt_model() -> None:
    model = tiny_plt(3)
    w = windows()
    diag = D.run_diagnostics(model, w, batch=2)
    per = diag.per_loop
    assert diag.loops == 3 and diag.tokens == 3 * 16 and diag.windows == 3
    assert set(per) == set(D.METRICS)
    assert all(len(v) == 3 for v in per.values())
    for key in ("update_cos", "offset_cost", "attn_kl", "gate", "output_kl"):
        assert per[key][0] is None and per[key][1] is not None and per[key][2] is not None
    # Zero-initialised gates: an even blend at the start of training.
    assert per["gate"][1] == pytest.approx(0.5) and per["gate"][2] == pytest.approx(0.5)
    assert -1.0 <= per["update_cos"][1] <= 1.0
    assert 1.0 <= per["erank"][0] <= 16.0
    assert len(diag.peak_share) == 2 and sum(diag.peak_share) == pytest.approx(1.0)
    assert torch.tensor(diag.head_entropy).shape == (3, 2, 4)
    # The last loop's logit lens is the model's own prediction: same loss.
    inputs, targets = w[:, :-1], w[:, 1:]
    with torch.no_grad():
        logits = model(input_ids=inputs, use_cache=False).logits
    loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets)
    assert per["lens_loss"][2] == pytest.approx(float(loss), rel=1e-4)
    # The study's model was not changed by the single-pass copy used for f.
    assert model.config.plt_num_loops == 3


def test_fixed_point_gap_is_the_next_step_for_a_plain_looped_model() -> None:
    # Plain looped: h(r + 1) = f(h(r)), so ||h(r) - f(h(r))|| = ||h(r + 1) - h(r)||.
    model = tiny_plt(3, mode="plain")
    diag = D.run_diagnostics(model, windows(), batch=3)
    gap, step = diag.per_loop["fixed_point_gap"], diag.per_loop["step_size"]
    assert gap[0] == pytest.approx(step[1], rel=1e-5)
    assert gap[1] == pytest.approx(step[2], rel=1e-5)
    assert diag.per_loop["gate"] == [None, None, None]


def test_runner_on_a_single_loop_model() -> None:
    diag = D.run_diagnostics(tiny_plt(1), windows(2), batch=2)
    assert diag.per_loop["update_cos"] == [None]
    assert diag.per_loop["step_size"][0] is not None
    assert diag.peak_share == []
    assert any("R = 1" in note for note in diag.notes)
    assert D.LoopDiagnostics.from_dict(diag.to_dict()) == diag
