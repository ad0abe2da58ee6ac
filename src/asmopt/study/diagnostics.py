"""Loop-count diagnostics (LoopCoder-v2, section 5): why a loop helps or stops helping.

Notation: h(0) = E(x) and h(r) the raw (pre-norm) output of loop r, `[B, S, d]` each; f = the
shared stack of L layers; N = the final RMSNorm; Head = the LM head.

Pure functions (each checked against a hand-computed example in the tests):

- step size delta(r) = ||h(r) - h(r-1)|| per token: how far loop r moves the state.
- update alignment cos(r) = cosine(h(r) - h(r-1), h(r-1) - h(r-2)): negative means loop r
  undoes part of loop r-1 (oscillation).
- effective rank = exp(entropy of sigma_i / sum sigma), singular values of the S x d matrix of
  RMS-normalised states: how many directions the states use.
- fixed-point gap = ||h(r) - f(n(h(r)))||: how far h(r) is from a fixed point of the stack.
- offset cost Omega(r) = mean_i ||h(r-1)_i - h(r-1)_{i-1}||: the error of handing token i the
  state of token i-1 (PLT's one-token shift).
- attention entropy = -sum_k A_qk log A_qk per head and query: how spread attention is.
- inter-loop KL = KL(A(r) || A(r-1)) per head and query: how much loop r looks elsewhere.
- head similarity = mean pairwise cosine of the heads' maps: 1 = redundant heads.
- mean gate = mean g, the weight on the global branch: how much loops >= 2 use loop 1's
  full-context keys rather than their own local window.
- output shift = KL(p(r) || p(r-1)), p(r) = softmax(Head(N(h(r)))) (logit lens): how much
  loop r changes the prediction.
- true-token rank = 1 + the number of tokens scored above the true next token, per loop.
- peak loop = argmax_r of the output shift, per token: which loop does the most work.

f(n(h)) is the stack applied once, with ordinary causal attention, to the state a loop hands
on (n = the final norm when `plt_normalize_per_loop`, else identity). For the plain looped
model this is exactly h(r + 1); for PLT the next loop also adds E(x) and shifts by one token,
so the gap isolates the stack's own contraction. "Relative" variants divide by the mean
||h(r-1)|| so that models whose states grow differently can be compared.

`run_diagnostics(model, windows)` collects the per-loop states, attention maps and gates from
`PLTForCausalLM(output_loop_states=True, output_attentions=True)` and averages everything
over the tokens of held-out windows.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

EPS = 1e-12

# --------------------------------------------------------------------------- pure functions


def step_size(previous: torch.Tensor, current: torch.Tensor) -> torch.Tensor:
    """||current - previous|| over the last dimension (one value per token)."""
    return (current.float() - previous.float()).norm(dim=-1)


def update_alignment(
    before: torch.Tensor, previous: torch.Tensor, current: torch.Tensor
) -> torch.Tensor:
    """cosine(current - previous, previous - before) per token; 0 where an update is zero."""
    now = current.float() - previous.float()
    then = previous.float() - before.float()
    return F.cosine_similarity(now, then, dim=-1, eps=EPS)


def rms_normalize(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """x / rms(x) per row: removes the scale so that the rank measures directions only."""
    x = x.float()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def effective_rank(matrix: torch.Tensor, normalize: bool = True) -> float:
    """exp(-sum p_i log p_i), p_i = sigma_i / sum sigma, of a `[S, d]` matrix.

    With `normalize` the rows are RMS-normalised first (the diagnostic's definition)."""
    m = rms_normalize(matrix) if normalize else matrix.float()
    sigma = torch.linalg.svdvals(m.double())
    total = sigma.sum()
    if total <= 0:
        return 0.0
    p = sigma / total
    return float(torch.exp(-torch.special.xlogy(p, p).sum()))


def fixed_point_gap(state: torch.Tensor, stacked: torch.Tensor) -> torch.Tensor:
    """||h - f(h)|| per token, `stacked` being f applied to (the carried form of) `state`."""
    return step_size(stacked, state)


def offset_cost(state: torch.Tensor) -> torch.Tensor:
    """||h_i - h_{i-1}|| for i = 1 .. S-1 of a `[..., S, d]` state: `[..., S-1]`."""
    return (state[..., 1:, :].float() - state[..., :-1, :].float()).norm(dim=-1)


def attention_entropy(probs: torch.Tensor) -> torch.Tensor:
    """-sum_k p log p over the last (key) dimension; masked keys (p = 0) add nothing."""
    p = probs.float()
    return -torch.special.xlogy(p, p).sum(-1)


def attention_kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(p || q) over the last dimension; q is floored at 1e-12 where p has mass."""
    p, q = p.float(), q.float()
    return (torch.special.xlogy(p, p) - torch.special.xlogy(p, q.clamp_min(EPS))).sum(-1)


def head_similarity(probs: torch.Tensor) -> torch.Tensor:
    """Mean pairwise cosine between the heads' attention maps, `[B, H, Q, K]` -> `[B]`.

    1 means every head attends the same way; lower means more diverse heads. NaN for H = 1."""
    batch, heads = probs.shape[:2]
    flat = F.normalize(probs.float().reshape(batch, heads, -1), dim=-1, eps=EPS)  # [B, H, QK]
    gram = flat @ flat.transpose(1, 2)  # [B, H, H]
    if heads < 2:
        return torch.full((batch,), float("nan"))
    off = gram.sum((1, 2)) - gram.diagonal(dim1=1, dim2=2).sum(-1)
    return off / (heads * (heads - 1))


def output_kl(logits: torch.Tensor, previous_logits: torch.Tensor) -> torch.Tensor:
    """KL(softmax(logits) || softmax(previous_logits)) per position."""
    logp = F.log_softmax(logits.float(), dim=-1)
    logq = F.log_softmax(previous_logits.float(), dim=-1)
    return (logp.exp() * (logp - logq)).sum(-1)


def true_token_rank(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """1 + the number of tokens scored strictly above the target (1 = top prediction)."""
    target_logit = logits.gather(-1, targets.unsqueeze(-1))
    return (logits > target_logit).sum(-1) + 1


def peak_loop(shifts: torch.Tensor, first_loop: int = 2) -> torch.Tensor:
    """Loop number with the largest output shift per token; `shifts` is `[loops, ...]`.

    The first row is loop `first_loop` (shifts start at loop 2: loop 1 has no predecessor)."""
    return shifts.argmax(0) + first_loop


# --------------------------------------------------------------------------- runner


@dataclass
class LoopDiagnostics:
    """Per-loop averages over held-out tokens of one model.

    `per_loop[name][r - 1]` is the value at loop r (None where undefined, e.g. cos at r = 1).
    """

    loops: int
    per_loop: dict[str, list[float | None]]
    embedding_erank: float
    peak_share: list[float]  # share of tokens whose output shift peaks at loop 2 .. R
    head_entropy: list[list[list[float]]]  # [loop][layer][head], nats
    windows: int
    tokens: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "loops": self.loops,
            "per_loop": self.per_loop,
            "embedding_erank": self.embedding_erank,
            "peak_share": self.peak_share,
            "head_entropy": self.head_entropy,
            "windows": self.windows,
            "tokens": self.tokens,
            "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoopDiagnostics:
        return cls(**data)


# Quantities the runner reports, in table order. Keys of `LoopDiagnostics.per_loop`.
METRICS: dict[str, str] = {
    "state_norm": "mean ||h(r)||",
    "step_size": "step size ||h(r) - h(r-1)||",
    "step_size_rel": "step size / ||h(r-1)||",
    "update_cos": "update alignment cos",
    "erank": "effective rank of h(r)",
    "fixed_point_gap": "fixed-point gap ||h(r) - f(h(r))||",
    "fixed_point_gap_rel": "fixed-point gap / ||h(r)||",
    "offset_cost": "offset cost Omega(r)",
    "offset_cost_rel": "offset cost / ||h(r-1)||",
    "attn_entropy": "attention entropy (nats)",
    "attn_kl": "attention KL(A(r) || A(r-1))",
    "head_similarity": "head similarity (mean pairwise cos)",
    "gate": "mean gate (global weight)",
    "output_kl": "output shift KL(p(r) || p(r-1))",
    "lens_loss": "logit-lens loss",
    "lens_accuracy": "logit-lens top-1 accuracy",
    "true_rank": "mean true-token rank",
    "median_rank": "median true-token rank",
}


class _Mean:
    """Running sums per (metric, loop) so that batches of any size average by token."""

    def __init__(self) -> None:
        self.sum: dict[tuple[str, int], float] = defaultdict(float)
        self.count: dict[tuple[str, int], int] = defaultdict(int)

    def add(self, name: str, loop: int, values: torch.Tensor) -> None:
        values = values.float()
        values = values[torch.isfinite(values)]
        self.sum[(name, loop)] += float(values.sum())
        self.count[(name, loop)] += values.numel()

    def get(self, name: str, loop: int) -> float | None:
        n = self.count.get((name, loop), 0)
        return self.sum[(name, loop)] / n if n else None


def single_pass_model(model: Any) -> Any:
    """The decoder stack of `model` run once (R = 1), sharing its weights: f in the table.

    A shallow copy of the inner model with its own config copy, so nothing of `model`
    changes; the copy shares every parameter."""
    inner = copy.copy(model.model)
    config = copy.deepcopy(model.config)
    config.plt_num_loops = 1
    inner.config = config
    return inner


def carried(model: Any, state: torch.Tensor) -> torch.Tensor:
    """n(h): the form in which a loop hands its state on."""
    return model.model.norm(state) if model.config.plt_normalize_per_loop else state


class _Collector:
    """Running totals of every diagnostic of one model, batch after batch of windows.

    Each quantity is summed per loop in `mean` (so batches of any size average by token);
    effective ranks are kept per window, true-token ranks per token (for the median), and
    per-head entropies and the loop at which each token's output shift peaks are counted."""

    def __init__(self, model: Any, loops: int) -> None:
        self.model = model
        self.loops = loops
        self.stack = single_pass_model(model)
        self.mean = _Mean()
        self.eranks: dict[int, list[float]] = defaultdict(list)
        self.peaks = torch.zeros(max(loops - 1, 0))
        self.head_sum = torch.zeros(0)
        self.head_count = torch.zeros(0)
        self.ranks_by_loop: dict[int, list[torch.Tensor]] = defaultdict(list)
        self.tokens = 0

    def add_batch(self, inputs: torch.Tensor, targets: torch.Tensor) -> None:
        """One forward pass over `inputs` `[B, S]`, scored against `targets` `[B, S]`."""
        model = self.model
        out = model(
            input_ids=inputs, use_cache=False, output_loop_states=True, output_attentions=True
        )
        states = out.loop_hidden_states  # R + 1 of [B, S, d]
        self.tokens += targets.numel()
        for b in range(inputs.shape[0]):
            self.eranks[0].append(effective_rank(states[0][b]))
        lens_logits = [model.lm_head(model.model.norm(h)).float() for h in states[1:]]
        shifts = []
        for r in range(1, self.loops + 1):
            self._add_states(r, states)
            self._add_attention(r, out.loop_attentions)
            gates = out.loop_gates[r - 1] if out.loop_gates is not None else None
            for g in gates or ():
                self.mean.add("gate", r, g)
            shift = self._add_lens(r, lens_logits, targets)
            if shift is not None:
                shifts.append(shift)
        if shifts:
            self._count_peaks(torch.stack(shifts))

    def _count_peaks(self, shifts: torch.Tensor) -> None:
        """Count, per loop 2 .. R, the tokens whose output shift `[R - 1, B, S]` peaks there."""
        n = self.loops - 1
        peak = peak_loop(shifts)
        self.peaks += torch.bincount((peak - 2).flatten().cpu(), minlength=n)[:n]

    def _add_states(self, r: int, states: Sequence[torch.Tensor]) -> None:
        """Step size, alignment, offset cost, effective rank and fixed-point gap of loop r."""
        mean = self.mean
        h_prev, h = states[r - 1], states[r]
        prev_norm = h_prev.float().norm(dim=-1)
        mean.add("state_norm", r, h.float().norm(dim=-1))
        delta = step_size(h_prev, h)
        mean.add("step_size", r, delta)
        mean.add("step_size_rel", r, delta / prev_norm.clamp_min(EPS))
        if r >= 2:
            mean.add("update_cos", r, update_alignment(states[r - 2], h_prev, h))
            omega = offset_cost(h_prev)
            mean.add("offset_cost", r, omega)
            mean.add("offset_cost_rel", r, omega / prev_norm[:, 1:].clamp_min(EPS))
        for b in range(h.shape[0]):
            self.eranks[r].append(effective_rank(h[b]))
        f_h = self.stack(
            inputs_embeds=carried(self.model, h), use_cache=False, output_loop_states=True
        )
        gap = fixed_point_gap(h, f_h.loop_hidden_states[1])
        mean.add("fixed_point_gap", r, gap)
        mean.add("fixed_point_gap_rel", r, gap / h.float().norm(dim=-1).clamp_min(EPS))

    def _add_attention(self, r: int, attentions: Sequence[Sequence[torch.Tensor]]) -> None:
        """Entropy, head similarity and change from the previous loop of loop r's maps."""
        maps = attentions[r - 1]  # L of [B, H, Q, K]
        if self.head_sum.numel() == 0:
            self.head_sum = torch.zeros(self.loops, len(maps), maps[0].shape[1])
            self.head_count = torch.zeros(self.loops)
        self.head_count[r - 1] += maps[0].shape[0] * maps[0].shape[2]
        for layer, probs in enumerate(maps):
            entropy = attention_entropy(probs)  # [B, H, Q]
            self.mean.add("attn_entropy", r, entropy)
            self.head_sum[r - 1, layer] += entropy.sum((0, 2)).cpu()
            self.mean.add("head_similarity", r, head_similarity(probs))
            if r >= 2:
                self.mean.add("attn_kl", r, attention_kl(probs, attentions[r - 2][layer]))

    def _add_lens(
        self, r: int, lens_logits: list[torch.Tensor], targets: torch.Tensor
    ) -> torch.Tensor | None:
        """Logit-lens loss, accuracy and true-token rank of loop r; returns its output shift
        from loop r - 1 (None at loop 1)."""
        mean = self.mean
        logits = lens_logits[r - 1]
        nll = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
        mean.add("lens_loss", r, nll)
        mean.add("lens_accuracy", r, (logits.argmax(-1) == targets).float())
        ranks = true_token_rank(logits, targets)
        mean.add("true_rank", r, ranks.float())
        self.ranks_by_loop[r].append(ranks.flatten().cpu())
        if r < 2:
            return None
        shift = output_kl(logits, lens_logits[r - 2])
        mean.add("output_kl", r, shift)
        return shift

    def per_loop(self) -> dict[str, list[float | None]]:
        """Every metric of `METRICS`, one value per loop."""
        loops = range(1, self.loops + 1)
        per_loop: dict[str, list[float | None]] = {}
        for name in METRICS:
            if name == "erank":
                per_loop[name] = [_avg(self.eranks[r]) for r in loops]
            elif name == "median_rank":
                per_loop[name] = [
                    float(torch.cat(self.ranks_by_loop[r]).float().median()) for r in loops
                ]
            else:
                per_loop[name] = [self.mean.get(name, r) for r in loops]
        return per_loop

    def head_entropy(self) -> list[list[list[float]]]:
        """Mean attention entropy per [loop][layer][head]."""
        if not self.head_count.numel():
            return []
        return (self.head_sum / self.head_count.clamp_min(1)[:, None, None]).tolist()

    def peak_share(self) -> list[float]:
        """Share of tokens whose output shift peaks at loop 2 .. R."""
        peaks = self.peaks
        return (peaks / peaks.sum()).tolist() if peaks.numel() and peaks.sum() > 0 else []


def _notes(model: Any, loops: int) -> list[str]:
    """What is undefined for this model, said once rather than shown as empty columns."""
    notes = []
    if loops == 1:
        notes.append("R = 1: no loop-to-loop quantities (cos, offset cost, KL, gate, shift)")
    if model.config.plt_loop_mode != "plt" or loops == 1:
        notes.append("no gated attention in this model: mean gate undefined")
    return notes


@torch.no_grad()
def run_diagnostics(
    model: Any, windows: torch.Tensor, *, batch: int = 2, device: Any = None
) -> LoopDiagnostics:
    """Every diagnostic of `model` (a `PLTForCausalLM`) averaged over `windows` `[N, S + 1]`.

    Inputs are `windows[:, :-1]`, targets `windows[:, 1:]` (for ranks and the lens loss)."""
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    loops = int(model.config.plt_num_loops)
    collector = _Collector(model, loops)
    for i in range(0, windows.shape[0], batch):
        chunk = windows[i : i + batch].to(device)
        collector.add_batch(chunk[:, :-1], chunk[:, 1:])
    model.train(was_training)
    return LoopDiagnostics(
        loops=loops,
        per_loop=collector.per_loop(),
        embedding_erank=_avg(collector.eranks[0]) or 0.0,
        peak_share=collector.peak_share(),
        head_entropy=collector.head_entropy(),
        windows=int(windows.shape[0]),
        tokens=collector.tokens,
        notes=_notes(model, loops),
    )


def _avg(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
