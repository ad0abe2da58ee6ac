"""The PPO arithmetic against hand computations: GAE, clipping, entropy, KL, whitening."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest
from conftest import lazy

if TYPE_CHECKING:
    import torch

    from asmopt.train import ppo_core as core
else:
    torch = lazy("torch")
    core = lazy("asmopt.train.ppo_core")

pytestmark = [pytest.mark.ml, pytest.mark.usefixtures("one_thread")]


def t(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


# --------------------------------------------------------------------------- GAE


def test_gae_matches_a_hand_computed_example() -> None:
    # Row 0: three valid tokens, reward 1 at the end. Row 1: two valid tokens, the third is
    # padding whose value (9.0) must not leak into the advantages.
    gamma, lam = 0.9, 0.8
    rewards = t([[0.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    values = t([[0.5, 0.4, 0.6], [1.0, 0.5, 9.0]])
    mask = t([[1, 1, 1], [1, 1, 0]])
    adv, ret = core.compute_gae(rewards, values, mask, gamma, lam)
    # Row 0, by hand (gamma * lam = 0.72):
    #   t=2: delta = 1 - 0.6 = 0.4;               A = 0.4
    #   t=1: delta = 0.9 * 0.6 - 0.4 = 0.14;      A = 0.14 + 0.72 * 0.4   = 0.428
    #   t=0: delta = 0.9 * 0.4 - 0.5 = -0.14;     A = -0.14 + 0.72 * 0.428 = 0.16816
    # Row 1: t=1 is the last token: delta = 2 - 0.5 = 1.5; t=0: -0.55 + 0.72 * 1.5 = 0.53.
    expected_adv = t([[0.16816, 0.428, 0.4], [0.53, 1.5, 0.0]])
    expected_ret = t([[0.66816, 0.828, 1.0], [1.53, 2.0, 0.0]])
    torch.testing.assert_close(adv, expected_adv, atol=1e-12, rtol=0)
    torch.testing.assert_close(ret, expected_ret, atol=1e-12, rtol=0)


def test_gae_with_gamma_and_lambda_one_is_return_minus_value() -> None:
    rewards = t([[0.0, 0.0, 0.0, 3.0]])
    values = t([[1.0, 2.0, 0.5, -1.0]])
    mask = torch.ones_like(rewards)
    adv, ret = core.compute_gae(rewards, values, mask, 1.0, 1.0)
    torch.testing.assert_close(adv, 3.0 - values)
    torch.testing.assert_close(ret, torch.full_like(ret, 3.0))


def test_gae_lambda_zero_is_one_step_td() -> None:
    rewards = t([[0.5, 0.0, 1.0]])
    values = t([[0.2, 0.3, 0.4]])
    mask = torch.ones_like(rewards)
    adv, _ = core.compute_gae(rewards, values, mask, 0.9, 0.0)
    expected = t([[0.5 + 0.9 * 0.3 - 0.2, 0.9 * 0.4 - 0.3, 1.0 - 0.4]])
    torch.testing.assert_close(adv, expected)


def test_token_rewards_score_on_last_token_minus_kl() -> None:
    mask = t([[1, 1, 1], [1, 0, 0], [0, 0, 0]])  # the third sample was excluded
    scores = torch.tensor([2.0, -1.0, 5.0])
    kl = t([[0.1, 0.2, 0.3], [0.4, 9.0, 9.0], [9.0, 9.0, 9.0]])
    r = core.token_rewards(scores, mask, kl, kl_coef=0.5)
    expected = t([[-0.05, -0.1, 2.0 - 0.15], [-1.0 - 0.2, 0.0, 0.0], [0.0, 0.0, 0.0]])
    torch.testing.assert_close(r.double(), expected, atol=1e-6, rtol=0)


# --------------------------------------------------------------------------- statistics


def test_masked_whiten_ignores_padding() -> None:
    x = t([[1.0, 2.0, 100.0], [3.0, 4.0, -100.0]])
    mask = t([[1, 1, 0], [1, 1, 0]])
    w = core.masked_whiten(x, mask)
    valid = w[mask.bool()]
    assert abs(valid.mean().item()) < 1e-9
    assert abs(valid.std(unbiased=True).item() - 1.0) < 1e-6
    assert w[:, 2].abs().max().item() == 0.0


def test_masked_mean_of_nothing_is_zero_not_nan() -> None:
    assert core.masked_mean(t([[1.0, 2.0]]), t([[0, 0]])).item() == 0.0


def test_explained_variance() -> None:
    returns = t([[1.0, 2.0, 3.0, 4.0]])
    mask = torch.ones_like(returns)
    assert core.explained_variance(returns, returns, mask) == pytest.approx(1.0)
    assert core.explained_variance(torch.zeros_like(returns) + 2.5, returns, mask) == (
        pytest.approx(0.0)
    )


def test_token_mean_with_accumulation_equals_whole_batch() -> None:
    torch.manual_seed(0)
    loss = torch.randn(4, 5, dtype=torch.float64)
    mask = t([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]])
    for mode in ("token-mean", "seq-mean-token-mean"):
        whole = core.aggregate(loss, mask, mode)
        n_tok, n_seq = mask.sum().item(), 4.0
        parts = sum(
            core.aggregate(
                loss[i : i + 2], mask[i : i + 2], mode, total_tokens=n_tok, total_seqs=n_seq
            )
            for i in (0, 2)
        )
        torch.testing.assert_close(parts, whole)


# --------------------------------------------------------------------------- policy loss


def _pg_grad(ratio: float, advantage: float, clip: float = 0.2) -> tuple[float, dict]:
    old = torch.zeros(1, 1, dtype=torch.float64)
    new = torch.full((1, 1), math.log(ratio), dtype=torch.float64, requires_grad=True)
    adv = torch.full((1, 1), advantage, dtype=torch.float64)
    loss, stats = core.policy_loss(new, old, adv, torch.ones(1, 1, dtype=torch.float64), clip)
    loss.backward()
    assert new.grad is not None
    return new.grad.item(), stats


@pytest.mark.parametrize(
    ("ratio", "advantage"),
    [(1.5, 1.0), (1.21, 2.0), (0.5, -1.0), (0.79, -3.0)],
)
def test_zero_policy_gradient_outside_the_clip_range(ratio: float, advantage: float) -> None:
    grad, stats = _pg_grad(ratio, advantage)
    assert grad == 0.0
    assert stats["clipfrac"].item() == 1.0


@pytest.mark.parametrize(
    ("ratio", "advantage"),
    [(1.0, 1.0), (1.1, -1.0), (0.9, 1.0), (1.5, -1.0), (0.5, 1.0)],
)
def test_policy_gradient_inside_the_range_or_on_the_pessimistic_side(
    ratio: float, advantage: float
) -> None:
    # loss = -A * r = -A * exp(logp - old): d loss / d logp = -A * r.
    grad, _ = _pg_grad(ratio, advantage)
    assert grad == pytest.approx(-advantage * ratio)


def test_policy_loss_value_and_approx_kl() -> None:
    new = t([[math.log(1.1), math.log(0.7)]])
    old = torch.zeros_like(new)
    adv = t([[1.0, 1.0]])
    loss, stats = core.policy_loss(new, old, adv, torch.ones_like(new), 0.2)
    # token 1: max(-1.1, -1.1) = -1.1; token 2: max(-0.7, -0.8) = -0.7
    assert loss.item() == pytest.approx((-1.1 - 0.7) / 2)
    k3 = [(1.1 - 1) - math.log(1.1), (0.7 - 1) - math.log(0.7)]
    assert stats["approx_kl"].item() == pytest.approx(sum(k3) / 2)
    assert stats["clipfrac"].item() == pytest.approx(0.5)


def test_value_loss_clipping() -> None:
    old = t([[0.0, 0.0]])
    ret = t([[2.0, 0.1]])
    new = torch.tensor([[1.0, 0.2]], dtype=torch.float64, requires_grad=True)
    loss, stats = core.value_loss(new, old, ret, torch.ones_like(old), clip_range=0.5)
    # token 1: clipped V = 0.5, (0.5 - 2)^2 = 2.25 > (1 - 2)^2 = 1 -> clipped, no gradient
    # token 2: inside the range: (0.2 - 0.1)^2 = 0.01
    assert loss.item() == pytest.approx(0.5 * (2.25 + 0.01) / 2)
    assert stats["clipfrac"].item() == pytest.approx(0.5)
    loss.backward()
    assert new.grad is not None
    assert new.grad[0, 0].item() == 0.0
    assert new.grad[0, 1].item() == pytest.approx(0.5 * 2 * 0.1 / 2)
    unclipped, _ = core.value_loss(new, old, ret, torch.ones_like(old), 0.5, clip=False)
    assert unclipped.item() == pytest.approx(0.5 * (1.0 + 0.01) / 2)


# --------------------------------------------------------------------------- entropy, KL


def test_entropy_of_uniform_logits_is_log_v() -> None:
    logits = torch.zeros(2, 3, 50)
    torch.testing.assert_close(core.entropy_from_logits(logits), torch.full((2, 3), math.log(50)))


def test_entropy_matches_the_categorical_distribution() -> None:
    torch.manual_seed(1)
    logits = torch.randn(3, 4, 17) * 3
    expected = torch.distributions.Categorical(logits=logits).entropy()
    torch.testing.assert_close(core.entropy_from_logits(logits), expected)


def test_logprobs_from_logits() -> None:
    torch.manual_seed(2)
    logits = torch.randn(2, 3, 11)
    tokens = torch.randint(0, 11, (2, 3))
    expected = torch.log_softmax(logits, -1).gather(-1, tokens[..., None])[..., 0]
    torch.testing.assert_close(core.logprobs_from_logits(logits, tokens), expected)


def test_kl_estimators_pointwise() -> None:
    logp = t([[math.log(0.5)]])
    ref = t([[math.log(0.25)]])
    lr = math.log(2.0)
    assert core.kl_estimate(logp, ref, "k1").item() == pytest.approx(lr)
    assert core.kl_estimate(logp, ref, "k2").item() == pytest.approx(0.5 * lr**2)
    assert core.kl_estimate(logp, ref, "k3").item() == pytest.approx(0.5 - 1 + lr)
    assert core.kl_estimate(ref, logp, "abs").item() == pytest.approx(lr)
    with pytest.raises(ValueError, match="unknown KL estimator"):
        core.kl_estimate(logp, ref, "k9")  # type: ignore[arg-type]


def test_k1_and_k3_estimate_the_true_kl() -> None:
    # Tokens sampled from p: the sample means of k1 and k3 converge to KL(p || q).
    gen = torch.Generator().manual_seed(3)
    p_logits = torch.tensor([2.0, 0.5, -1.0, 0.0, 1.0], dtype=torch.float64)
    q_logits = torch.tensor([0.0, 1.0, 0.5, -0.5, 1.5], dtype=torch.float64)
    logp_all = torch.log_softmax(p_logits, -1)
    logq_all = torch.log_softmax(q_logits, -1)
    true_kl = (logp_all.exp() * (logp_all - logq_all)).sum().item()
    tokens = torch.multinomial(logp_all.exp(), 200_000, replacement=True, generator=gen)
    logp, logq = logp_all[tokens], logq_all[tokens]
    for kind in ("k1", "k3"):
        estimate = core.kl_estimate(logp, logq, kind).mean().item()
        assert estimate == pytest.approx(true_kl, rel=0.03), kind
    assert (core.kl_estimate(logp, logq, "k3") >= 0).all()
