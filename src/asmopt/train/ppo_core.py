"""The arithmetic of PPO for language models, as pure functions on tensors.

Shapes: B sequences, T response tokens (right-padded), V vocabulary. A `mask` is 1.0 on the
response tokens that count (the generated tokens up to and including end-of-sequence, of
samples that were not excluded) and 0.0 elsewhere. Every function here is deterministic and
free of model code, so each can be checked against a hand computation.

References for the formulas: Schulman et al. 2016 (GAE), Schulman et al. 2017 (PPO clipped
objective), Schulman 2020 "Approximating KL divergence" (k1, k2, k3 estimators).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F

# --------------------------------------------------------------------------- masked statistics


def masked_sum(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    return (x * mask).sum() if dim is None else (x * mask).sum(dim)


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean over the masked entries; 0 (not NaN) when nothing is masked in."""
    total = mask.sum() if dim is None else mask.sum(dim)
    return masked_sum(x, mask, dim) / total.clamp(min=1.0)


def masked_var(x: torch.Tensor, mask: torch.Tensor, unbiased: bool = True) -> torch.Tensor:
    """Variance over the masked entries (Bessel-corrected when `unbiased`)."""
    n = mask.sum()
    mean = masked_mean(x, mask)
    var = masked_mean((x - mean) ** 2, mask)
    if unbiased and n > 1:
        var = var * n / (n - 1)
    return var


def masked_whiten(
    x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True, eps: float = 1e-8
) -> torch.Tensor:
    """(x - mean) / std over the masked entries; entries outside the mask become 0.

    Why: advantages of very different scales (a reward of 11 for a speed-up vs -1 for a
    build failure) would otherwise make the step size depend on the reward design."""
    mean = masked_mean(x, mask)
    var = masked_var(x, mask)
    out = (x - mean) * torch.rsqrt(var + eps)
    if not shift_mean:
        out = out + mean
    return out * mask


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float:
    """1 - Var[returns - values] / Var[returns]: 1 is a perfect critic, <= 0 a useless one."""
    var_returns = masked_var(returns, mask)
    if var_returns.item() == 0.0:
        return float("nan")
    return float(1.0 - masked_var(returns - values, mask) / var_returns)


# --------------------------------------------------------------------------- per-token rewards


def token_rewards(
    scores: torch.Tensor,
    mask: torch.Tensor,
    kl: torch.Tensor | None = None,
    kl_coef: float = 0.0,
) -> torch.Tensor:
    """The sequence score on the last valid token, minus `kl_coef * kl` on every token.

    scores: [B]; mask: [B, T] (contiguous from t = 0); kl: [B, T] per-token estimate.
    Rows whose mask is all zero (excluded samples) get no reward at all."""
    rewards = torch.zeros_like(mask, dtype=torch.float32)
    if kl is not None and kl_coef:
        rewards = rewards - kl_coef * kl * mask
    lengths = mask.sum(1).long()  # [B]
    rows = torch.nonzero(lengths > 0).squeeze(1)
    rewards[rows, lengths[rows] - 1] += scores[rows].to(rewards.dtype)
    return rewards


# --------------------------------------------------------------------------- GAE


def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over response tokens, one episode per row.

    rewards, values, mask: [B, T]. The episode of a row ends after its last valid token:
    the value after it is 0 (the answer is complete; nothing follows it). Returns
    (advantages, returns), both [B, T] and 0 outside the mask; returns = advantages + values.

        delta_t = r_t + gamma * V_{t+1} * m_{t+1} - V_t
        A_t     = delta_t + gamma * lam * m_{t+1} * A_{t+1}
    """
    B, T = rewards.shape
    advantages = torch.zeros_like(rewards)
    last_gae = torch.zeros(B, dtype=rewards.dtype, device=rewards.device)
    for t in reversed(range(T)):
        if t + 1 < T:
            next_values = values[:, t + 1]
            next_mask = mask[:, t + 1]
        else:
            next_values = torch.zeros_like(last_gae)
            next_mask = torch.zeros_like(last_gae)
        delta = rewards[:, t] + gamma * next_values * next_mask - values[:, t]
        last_gae = delta + gamma * lam * next_mask * last_gae
        advantages[:, t] = last_gae
    advantages = advantages * mask
    returns = (advantages + values) * mask
    return advantages, returns


# --------------------------------------------------------------------------- log-probs, entropy


def logprobs_from_logits(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log p(token) under softmax(logits). logits: [B, T, V]; tokens: [B, T] -> [B, T]."""
    logp = F.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of softmax(logits) per position: logsumexp(z) - sum softmax(z) * z. [B, T]."""
    logits = logits.float()
    probs = F.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - (probs * logits).sum(-1)


# --------------------------------------------------------------------------- KL estimators

KLEstimator = Literal["k1", "k2", "k3", "abs"]


def kl_estimate(logp: torch.Tensor, ref_logp: torch.Tensor, kind: KLEstimator) -> torch.Tensor:
    """Per-token estimate of KL(pi || ref) from tokens sampled from pi.

    k1 = log r (unbiased, high variance, can be negative), k2 = (log r)^2 / 2 (biased, low
    variance), k3 = (1/r - 1) + log r (unbiased, always >= 0), with r = pi / ref; `abs` is
    |log r|."""
    log_ratio = logp - ref_logp
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        return 0.5 * log_ratio**2
    if kind == "k3":
        return torch.expm1(-log_ratio) + log_ratio
    if kind == "abs":
        return log_ratio.abs()
    raise ValueError(f"unknown KL estimator {kind!r}; use k1, k2, k3 or abs")


# --------------------------------------------------------------------------- losses

LossAgg = Literal["token-mean", "seq-mean-token-mean"]


def aggregate(
    loss: torch.Tensor,
    mask: torch.Tensor,
    mode: LossAgg,
    *,
    total_tokens: float | None = None,
    total_seqs: float | None = None,
) -> torch.Tensor:
    """Reduce a [B, T] loss to a scalar.

    With gradient accumulation pass the mini-batch's `total_tokens` / `total_seqs`: the sum
    over micro-batches then equals the loss of the whole mini-batch computed at once, so the
    result does not depend on the micro-batch size."""
    if mode == "token-mean":
        if total_tokens is None:
            return masked_mean(loss, mask)
        return masked_sum(loss, mask) / max(total_tokens, 1.0)
    if mode == "seq-mean-token-mean":
        per_seq = masked_sum(loss, mask, dim=1) / mask.sum(1).clamp(min=1.0)
        valid = (mask.sum(1) > 0).to(per_seq.dtype)
        if total_seqs is None:
            return (per_seq * valid).sum() / valid.sum().clamp(min=1.0)
        return (per_seq * valid).sum() / max(total_seqs, 1.0)
    raise ValueError(f"unknown loss aggregation {mode!r}")


def policy_loss(
    new_logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_coef: float,
    agg: LossAgg = "token-mean",
    *,
    total_tokens: float | None = None,
    total_seqs: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped surrogate: mean of max(-A * r, -A * clip(r, 1 - eps, 1 + eps)).

    Outside the clip range on the side the advantage pushes towards, the clipped term wins
    and its gradient is 0: one batch cannot move the policy far. Returns the loss and
    diagnostics: `clipfrac` (share of tokens clipped) and `approx_kl` (k3 of old vs new)."""
    log_ratio = new_logp - old_logp
    ratio = torch.exp(log_ratio)
    pg_losses = -advantages * ratio
    pg_losses_clipped = -advantages * torch.clamp(ratio, 1.0 - clip_coef, 1.0 + clip_coef)
    loss = aggregate(
        torch.maximum(pg_losses, pg_losses_clipped),
        mask,
        agg,
        total_tokens=total_tokens,
        total_seqs=total_seqs,
    )
    with torch.no_grad():
        stats = {
            "clipfrac": masked_mean(((ratio - 1.0).abs() > clip_coef).float(), mask),
            "approx_kl": masked_mean((ratio - 1.0) - log_ratio, mask),
        }
    return loss, stats


def value_loss(
    new_values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip_range: float,
    clip: bool = True,
    agg: LossAgg = "token-mean",
    *,
    total_tokens: float | None = None,
    total_seqs: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """0.5 * max((V - R)^2, (V_clipped - R)^2), V_clipped = V_old + clip(V - V_old, +-eps).

    Value clipping keeps the critic from chasing one noisy batch of returns. Returns the loss
    and `clipfrac` (share of tokens where the clipped error was the larger).

    Wide because it is a pure tensor function like `policy_loss`: the tensors, the clip settings
    and the gradient-accumulation totals, free of the trainer's config so that it is tested on
    its own."""
    unclipped = (new_values - returns) ** 2
    if clip:
        clipped_values = old_values + torch.clamp(new_values - old_values, -clip_range, clip_range)
        clipped = (clipped_values - returns) ** 2
        losses = torch.maximum(unclipped, clipped)
        with torch.no_grad():
            clipfrac = masked_mean((clipped > unclipped).float(), mask)
    else:
        losses = unclipped
        clipfrac = torch.zeros(())
    loss = 0.5 * aggregate(losses, mask, agg, total_tokens=total_tokens, total_seqs=total_seqs)
    return loss, {"clipfrac": clipfrac}
