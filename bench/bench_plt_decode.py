"""Per-token decode latency and KV-cache bytes: PLT vs a plain decoder (R = 1) vs plain looping.

    .venv/bin/python bench/bench_plt_decode.py            # full table: bf16 + fp32, batch 1 + 8
    .venv/bin/python bench/bench_plt_decode.py --quick    # a smaller, faster run
    .venv/bin/python bench/bench_plt_decode.py --profile  # where the time of one step goes
    .venv/bin/python bench/bench_plt_decode.py --ablate   # what PLT-2's extra parts cost
    .venv/bin/python bench/bench_plt_decode.py --shape 7b-layers  # the published 7B's widths

Shapes (`--shape`): `100m` (default), ~100M parameters at GPT-2-small widths, where a CPU
decode step is dominated by per-operator and per-row costs; `7b-layers`, 4 layers (`--layers`)
at the published 7B's widths, where a step streams the weights: the regime in which
LoopCoder claims that R loops cost about one pass. PLT's extra work (a second row through
every product, a window attention call, a gate) is small next to streaming the weights and
large next to a small model's per-operator costs, so the two shapes bracket what a user sees.

Procedure (all modes share one set of weights, on CPU):
1. For every (dtype, batch): build every mode, prefill the same random prompt (longer than the
   PLT window, so ring buffers are full) and take `--warmup` untimed decode steps per mode,
   then more untimed steps while `PLTLinear` is still timing kernels for a shape (see
   `asmopt.models.plt.kernels`; only until every shape has its choice).
2. `--rounds` rounds; in each round every mode decodes ONE token (one timed forward + greedy
   choice), in an order that rotates every round. Interleaving step by step gives every mode
   the same exposure to other jobs on the machine, so they cannot bias one mode.
3. Per mode: the 10th percentile and the median per-token wall time, the median CPU time of
   the process per token, ratios to R = 1 of the same run, the spread (IQR / median) and the
   share of outliers (modified z-score > 3.5). The table uses one statistic (`--stat`, default
   the wall-time 10th percentile, which tracks the cost of the step itself on a shared machine
   where other jobs stall threads); the details list all of them. With `--threads 1` the CPU
   time excludes the time other jobs held the core, so `--stat cpu` is the steadiest choice on
   a busy machine. KV bytes are what each cache holds after the run (all hold the same tokens).

4. `--repeats` times over (fresh models and caches each time), so that the table can show the
   spread of each ratio across runs beside its median.

`--ablate` answers where PLT-2's extra time goes without the profiler's per-operator overhead:
the same interleaved timing for R = 1, PLT-2, PLT-2 with its window attention call skipped,
with its gate replaced by a constant, with both, and R = 1 at twice the batch (the same number
of rows through every product as PLT-2, with neither window nor gate). The skipped variants
compute wrong tokens; they exist only to be timed.

Every latency table ends with a goal check (`--goal`, default 1.15x of R = 1 per PLT mode with
one-pass decode) that says whether the median run and every run meet it, and warns when the
runs disagree by more than `--max-run-range`: then the machine's noise is as large as the
margin and one run decides nothing.

Dtypes: `bf16` and `fp32` use the few-row product kernel that `PLTLinear` measures fastest on
this machine (see `asmopt.models.plt.kernels`; the report lists every choice with every
candidate's timing). `-linear` / `-few-row` / `-mv` / `-rows` suffixes (`fp32-linear`,
`bf16-few-row`, ...) force one kernel for comparison (`mv` applies to one-row products only,
`rows`, the multi-row kernel of `asmopt.models.plt.native`, to float32 only; other products
then use `F.linear`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from asmopt.models.plt import (
    PLTCache,
    PLTConfig,
    PLTForCausalLM,
    kernel_report,
    modeling_plt,
    native,
    set_linear_kernel,
)
from asmopt.models.plt.kernels import KernelMode, cache_path, calibrating, machine_key

# ~100M parameters, GPT-2-small-like widths with Llama parts and grouped-query attention.
BENCH_SHAPE: dict[str, object] = {
    "vocab_size": 32000,
    "hidden_size": 768,
    "intermediate_size": 2048,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_key_value_heads": 4,
    "head_dim": 64,
    "tie_word_embeddings": True,
    "max_position_embeddings": 8192,
    "plt_window_size": [64, 0],  # the published window: the token itself plus 64 previous
}

# The published 7B's widths (docs/plt.md: d 5120, FFN 27648, 40 query / 8 key-value heads of
# 128, vocab 76,800, window 64) with 4 of its 14 layers, so that two dtypes fit in memory.
# The output head is tied to the embedding to save memory; it costs the same per step as an
# untied one, but it weighs more against 4 layers than against 14 (see `Shape.about`).
PUBLISHED_7B_LAYERS: dict[str, object] = {
    "vocab_size": 76800,
    "hidden_size": 5120,
    "intermediate_size": 27648,
    "num_hidden_layers": 4,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "tie_word_embeddings": True,
    "max_position_embeddings": 8192,
    "plt_window_size": [64, 0],
}


@dataclass(frozen=True)
class Shape:
    """A model shape to benchmark (random weights).

    share_weights: every mode (and every repeated run) reads one set of weight tensors. For
    shapes whose weights are many times the last-level cache this changes no timing, and it
    is what lets a few published layers fit in memory and build once instead of per run.
    """

    config: dict[str, object]
    share_weights: bool
    about: str


SHAPES: dict[str, Shape] = {
    "100m": Shape(
        BENCH_SHAPE,
        share_weights=False,
        about="small widths: a CPU decode step is far from streaming-bound, so per-operator "
        "and per-row costs (which PLT's extra rows and calls add to) weigh heavily",
    ),
    "7b-layers": Shape(
        PUBLISHED_7B_LAYERS,
        share_weights=True,
        about="the published 7B's layer widths: a decode step streams the weights, the regime "
        "of LoopCoder's latency claim; the tied output head is a larger share of the step "
        "with 4 layers than with the real 14, which moves every ratio towards 1",
    ),
}
# name -> (torch dtype, few-row product kernel: measured choice or forced)
DTYPES: dict[str, tuple[torch.dtype, KernelMode]] = {
    f"{name}{suffix}": (dtype, kernel)
    for name, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32))
    for suffix, kernel in (
        ("", "auto"),
        ("-linear", "linear"),
        ("-few-row", "few_row"),
        ("-mv", "mv"),
        ("-rows", "rows"),
    )
}
MAX_CALIBRATION_STEPS = 200  # untimed decode steps at most while kernels are being chosen
LONG_CONTEXT = 4096  # KV ratios are also extrapolated to this context length


@dataclass(frozen=True)
class Mode:
    """One benchmarked model variant."""

    name: str
    loops: int
    loop_mode: str = "plt"
    parallel_decode: bool = True


ALL_MODES: tuple[Mode, ...] = (
    Mode("R=1", 1),
    Mode("PLT-2", 2),
    Mode("PLT-3", 3),
    Mode("PLT-4", 4),
    Mode("plain-2", 2, "plain"),
    Mode("plain-3", 3, "plain"),
    Mode("plain-4", 4, "plain"),
    # The public serving fork's schedule: PLT loops one after another inside each step.
    Mode("PLT-2 loop-by-loop", 2, "plt", parallel_decode=False),
)
QUICK_MODES = ("R=1", "PLT-2", "PLT-4", "plain-2", "plain-4")


@dataclass
class Result:
    """Samples and memory of one (mode, dtype, batch)."""

    samples_s: list[float] = field(default_factory=list)  # wall time per token
    cpu_s: list[float] = field(default_factory=list)  # CPU time of this process per token
    kv_bytes: dict[str, int] = field(default_factory=dict)
    tokens: int = 0

    def stat(self, name: str) -> float:
        """p10 / median / min of wall time, or `cpu`: the median process CPU time."""
        if name == "median":
            return statistics.median(self.samples_s)
        if name == "min":
            return min(self.samples_s)
        if name == "cpu":
            return statistics.median(self.cpu_s)
        ordered = sorted(self.samples_s)
        return ordered[len(ordered) // 10]  # p10

    @property
    def spread(self) -> float:
        """Inter-quartile range over the median; nan ('none') with fewer than 4 samples."""
        if len(self.samples_s) < 4:
            return float("nan")
        q1, _, q3 = statistics.quantiles(self.samples_s, n=4)
        return (q3 - q1) / self.stat("median")

    @property
    def outlier_share(self) -> float:
        """Share of samples with modified z-score > 3.5 (median and MAD, Iglewicz-Hoaglin)."""
        median = self.stat("median")
        mad = statistics.median(abs(s - median) for s in self.samples_s)
        if mad == 0:
            return 0.0
        flagged = sum(0.6745 * abs(s - median) / mad > 3.5 for s in self.samples_s)
        return flagged / len(self.samples_s)

    def kv_at(self, context: int) -> float:
        """KV bytes extrapolated to `context` tokens: full caches scale, windows do not."""
        per_token = (self.kv_bytes["loop1_kv"] + self.kv_bytes["other_full_kv"]) / self.tokens
        fixed = self.kv_bytes["window_kv"] + self.kv_bytes["loop_states"]
        return per_token * context + fixed


def model_config(args: argparse.Namespace) -> dict[str, object]:
    """The benchmarked shape's config, with `--layers` applied."""
    config = dict(SHAPES[args.shape].config)
    if args.layers is not None:
        config["num_hidden_layers"] = args.layers
    return config


# One set of weights per (shape config, dtype, seed) for shapes that share weights.
_SHARED_STATES: dict[tuple[str, torch.dtype, int], dict[str, torch.Tensor]] = {}


def build_models(
    modes: list[Mode], dtype: torch.dtype, args: argparse.Namespace
) -> dict[str, PLTForCausalLM]:
    """All modes with the same shared-stack weights (the gates keep their zero init)."""
    config_fields = model_config(args)
    if SHAPES[args.shape].share_weights:
        return _models_on_shared_weights(modes, dtype, config_fields, args.seed)
    models: dict[str, PLTForCausalLM] = {}
    base_state: dict[str, torch.Tensor] | None = None
    for mode in modes:
        torch.manual_seed(args.seed)
        config = PLTConfig(**config_fields, plt_num_loops=mode.loops, plt_loop_mode=mode.loop_mode)
        model = PLTForCausalLM(config).to(dtype).eval()
        if base_state is None:
            base_state = model.state_dict()
        else:
            missing, unexpected = model.load_state_dict(base_state, strict=False)
            assert not unexpected and all("plt_gate" in key for key in missing)
        model.model.parallel_decode = mode.parallel_decode
        models[mode.name] = model
    return models


def _models_on_shared_weights(
    modes: list[Mode], dtype: torch.dtype, config_fields: dict[str, object], seed: int
) -> dict[str, PLTForCausalLM]:
    """Every mode as a module tree over one set of tensors: built once (from a PLT model, so
    the gates exist), then each mode is built on the meta device and takes those tensors."""
    key = (json.dumps(config_fields, sort_keys=True), dtype, seed)
    if key not in _SHARED_STATES:
        torch.manual_seed(seed)
        base = PLTForCausalLM(PLTConfig(**config_fields, plt_num_loops=2)).to(dtype)
        _SHARED_STATES[key] = base.state_dict()
    state = _SHARED_STATES[key]
    models: dict[str, PLTForCausalLM] = {}
    for mode in modes:
        config = PLTConfig(**config_fields, plt_num_loops=mode.loops, plt_loop_mode=mode.loop_mode)
        with torch.device("meta"):
            model = PLTForCausalLM(config)
        missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
        assert not missing and all("plt_gate" in name for name in unexpected)
        # Non-persistent buffers (the rotary frequencies) are not in a state dict.
        model.model.rotary_emb = modeling_plt.PLTRotaryEmbedding(config)
        leftover = [
            name for name, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta
        ]
        assert not leftover, f"tensors left on the meta device: {leftover}"
        model = model.to(dtype).eval()
        model.model.parallel_decode = mode.parallel_decode
        models[mode.name] = model
    return models


def decode_step(model: PLTForCausalLM, cache: PLTCache, token: torch.Tensor) -> torch.Tensor:
    """One generated token: forward through the cache, then the greedy choice."""
    logits = model(token, past_key_values=cache, use_cache=True).logits
    return logits[:, -1].argmax(-1, keepdim=True)


def prefill(
    models: dict[str, PLTForCausalLM], batch: int, args: argparse.Namespace
) -> tuple[dict[str, PLTCache], dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(args.seed)
    vocab = next(iter(models.values())).config.vocab_size
    prompt = torch.randint(2, vocab, (batch, args.prompt), generator=generator)
    caches: dict[str, PLTCache] = {}
    tokens: dict[str, torch.Tensor] = {}
    steps: dict[str, int] = {}
    for name, model in models.items():
        caches[name] = PLTCache(model.config)
        logits = model(prompt, past_key_values=caches[name], logits_to_keep=1).logits
        tokens[name] = logits[:, -1].argmax(-1, keepdim=True)
        steps[name] = 0
        # Shapes whose kernel is still being chosen alternate kernels call by call: keep
        # decoding untimed until every shape this model uses is decided.
        while steps[name] < args.warmup + MAX_CALIBRATION_STEPS and (
            steps[name] < args.warmup or calibrating()
        ):
            tokens[name] = decode_step(model, caches[name], tokens[name])
            steps[name] += 1
    # Every mode starts timing at the same context length.
    for name, model in models.items():
        for _ in range(max(steps.values()) - steps[name]):
            tokens[name] = decode_step(model, caches[name], tokens[name])
    return caches, tokens


def measure(
    modes: list[Mode], dtype_name: str, batch: int, args: argparse.Namespace
) -> dict[str, Result]:
    dtype, kernel = DTYPES[dtype_name]
    set_linear_kernel(kernel)
    try:
        models = build_models(modes, dtype, args)
        results = {mode.name: Result() for mode in modes}
        with torch.inference_mode():
            caches, tokens = prefill(models, batch, args)
            for round_idx in range(args.rounds):
                start = round_idx % len(modes)
                for mode in modes[start:] + modes[:start]:
                    begin, begin_cpu = time.perf_counter(), time.process_time()
                    tokens[mode.name] = decode_step(
                        models[mode.name], caches[mode.name], tokens[mode.name]
                    )
                    results[mode.name].samples_s.append(time.perf_counter() - begin)
                    results[mode.name].cpu_s.append(time.process_time() - begin_cpu)
        for mode in modes:
            results[mode.name].kv_bytes = caches[mode.name].nbytes()
            results[mode.name].tokens = caches[mode.name].get_seq_length()
    finally:
        set_linear_kernel(None)
    return results


def profile_step(modes: list[Mode], dtype_name: str, batch: int, args: argparse.Namespace) -> str:
    """Where the time of a decode step goes: operator totals per mode from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    dtype, kernel = DTYPES[dtype_name]
    set_linear_kernel(kernel)
    groups: dict[str, Callable[[str], bool]] = {
        "matmul": lambda n: n in {"aten::mm", "aten::addmm", "aten::bmm"},
        "attention": lambda n: "scaled_dot_product" in n or n == "aten::_softmax",
        "cache + concat copies": lambda n: (
            n in {"aten::cat", "aten::index_copy_", "aten::copy_", "aten::stack"}
        ),
    }
    steps = args.profile_steps
    lines = [
        f"### {dtype_name}, batch {batch}: self CPU time per decode step ({steps} steps)",
        "",
        "| mode | total ms | " + " | ".join(f"{g} ms" for g in groups) + " | other ms | ops |",
        "|---" * (len(groups) + 4) + "|",
    ]
    top_lines: list[str] = []
    try:
        models = build_models(modes, dtype, args)
        # Steps alternate between modes (one profiled token each) so that interference from
        # other jobs is spread evenly, as in `measure`; operator totals are summed per mode.
        totals: dict[str, dict[str, list[float]]] = {mode.name: {} for mode in modes}
        with torch.inference_mode():
            caches, tokens = prefill(models, batch, args)
            for step in range(steps):
                order = modes[step % len(modes) :] + modes[: step % len(modes)]
                for mode in order:
                    model, cache = models[mode.name], caches[mode.name]
                    with profile(activities=[ProfilerActivity.CPU]) as prof:
                        tokens[mode.name] = decode_step(model, cache, tokens[mode.name])
                    for event in prof.key_averages():
                        entry = totals[mode.name].setdefault(event.key, [0.0, 0])
                        entry[0] += event.self_cpu_time_total
                        entry[1] += event.count
        for mode in modes:
            events = totals[mode.name]
            total = sum(us for us, _ in events.values()) / 1e3 / steps
            calls = sum(count for _, count in events.values()) / steps
            cells, grouped = [], 0.0
            for match in groups.values():
                value = sum(us for key, (us, _) in events.items() if match(key)) / 1e3 / steps
                grouped += value
                cells.append(f"{value:.2f}")
            lines.append(
                f"| {mode.name} | {total:.2f} | "
                + " | ".join(cells)
                + f" | {total - grouped:.2f} | {calls:.0f} |"
            )
            top = sorted(events.items(), key=lambda item: item[1][0], reverse=True)[:8]
            top_lines.append(
                f"- {mode.name}: "
                + ", ".join(
                    f"{key} {us / 1e3 / steps:.2f} ms ({count // steps}x)"
                    for key, (us, count) in top
                )
            )
    finally:
        set_linear_kernel(None)
    return "\n".join([*lines, "", "Top operators per step:", *top_lines, ""])


def goal_check(
    results: dict[tuple[str, int], Runs], modes: list[Mode], args: argparse.Namespace
) -> list[str]:
    """Per PLT mode with one-pass decode and (dtype, batch): does the median run meet the
    goal, do all runs, and do the runs agree closely enough for either answer to mean much."""
    lines = [f"Goal check: {args.stat} latency at most {args.goal:.2f}x of R = 1:", ""]
    for mode in modes:
        if mode.loops == 1 or mode.loop_mode != "plt" or not mode.parallel_decode:
            continue
        for (dtype, batch), runs in results.items():
            ratios = run_ratios(runs, mode.name, args.stat)
            median = statistics.median(ratios)
            verdict = "meets" if median <= args.goal else "misses"
            above = sum(r > args.goal for r in ratios)
            line = (
                f"- {mode.name} {dtype} b{batch}: median run {median:.3f}x, {verdict} the goal "
                f"({above} of {len(ratios)} runs above it)"
            )
            spread = max(ratios) - min(ratios)
            if len(ratios) > 1 and spread > args.max_run_range:
                line += (
                    f"; WARNING: runs range {min(ratios):.2f}-{max(ratios):.2f}, wider than "
                    f"{args.max_run_range:.2f}: the machine's noise is as large as the margin"
                )
            lines.append(line)
    return [*lines, ""]


@dataclass(frozen=True)
class Ablation:
    """One timed variant: a model, a batch multiplier and which PLT parts are skipped."""

    name: str
    model: str
    batch_factor: int = 1
    skip_window: bool = False
    skip_gate: bool = False


ABLATIONS: tuple[Ablation, ...] = (
    Ablation("R=1", "R=1"),
    Ablation("PLT-2", "PLT-2"),
    Ablation("PLT-2, window call skipped", "PLT-2", skip_window=True),
    Ablation("PLT-2, gate constant", "PLT-2", skip_gate=True),
    Ablation("PLT-2, both", "PLT-2", skip_window=True, skip_gate=True),
    Ablation("R=1 at 2x batch", "R=1", batch_factor=2),
)


class _Skipper:
    """Patches `attention_forward` and `PLTGate.forward` of the model module for the duration
    of an ablation; `current` says what the next decode step skips. In PLT-2's one-pass step
    the window call is the only attention call with one query row per head (the global call
    has R rows), so that is how it is recognised."""

    def __init__(self) -> None:
        self.current: Ablation = ABLATIONS[0]
        self._attention = modeling_plt.attention_forward
        self._gate = modeling_plt.PLTGate.forward

    def __enter__(self) -> _Skipper:
        attention, gate = self._attention, self._gate

        def attention_forward(module, query, key, value, mask, need_probs):  # type: ignore[no-untyped-def]
            if self.current.skip_window and query.shape[2] == 1:
                return query.transpose(1, 2), None  # right shape, wrong values
            return attention(module, query, key, value, mask, need_probs)

        def gate_forward(module, unit_hidden, query):  # type: ignore[no-untyped-def]
            if self.current.skip_gate:
                heads = module.weight.shape[0]
                return unit_hidden.new_full((*unit_hidden.shape[:-1], heads), 0.5)
            return gate(module, unit_hidden, query)

        modeling_plt.attention_forward = attention_forward
        modeling_plt.PLTGate.forward = gate_forward  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        modeling_plt.attention_forward = self._attention
        modeling_plt.PLTGate.forward = self._gate  # type: ignore[method-assign]


def ablate(dtype_name: str, batch: int, args: argparse.Namespace) -> dict[str, Result]:
    """Interleaved per-token timing of every `ABLATIONS` variant (fresh caches each call)."""
    dtype, kernel = DTYPES[dtype_name]
    set_linear_kernel(kernel)
    try:
        models = build_models([m for m in ALL_MODES if m.name in ("R=1", "PLT-2")], dtype, args)
        results = {a.name: Result() for a in ABLATIONS}
        with torch.inference_mode(), _Skipper() as skipper:
            state: dict[str, tuple[PLTCache, torch.Tensor]] = {}
            for a in ABLATIONS:
                skipper.current = a
                caches, tokens = prefill({a.model: models[a.model]}, batch * a.batch_factor, args)
                state[a.name] = (caches[a.model], tokens[a.model])
            for round_idx in range(args.rounds):
                start = round_idx % len(ABLATIONS)
                for a in ABLATIONS[start:] + ABLATIONS[:start]:
                    skipper.current = a
                    cache, token = state[a.name]
                    begin, begin_cpu = time.perf_counter(), time.process_time()
                    token = decode_step(models[a.model], cache, token)
                    results[a.name].samples_s.append(time.perf_counter() - begin)
                    results[a.name].cpu_s.append(time.process_time() - begin_cpu)
                    state[a.name] = (cache, token)
    finally:
        set_linear_kernel(None)
    return results


def ablation_table(results: dict[tuple[str, int], Runs], stat: str) -> list[str]:
    keys = list(results)
    lines = [
        "| variant | " + " | ".join(f"{d} b{b}" for d, b in keys) + " |",
        "|---" * (1 + len(keys)) + "|",
    ]
    for a in ABLATIONS:
        cells = [ratio_cell(results[key], a.name, stat) for key in keys]
        lines.append(f"| {a.name} | " + " | ".join(cells) + " |")
    return lines


def environment(args: argparse.Namespace, load_before: tuple[float, ...]) -> list[str]:
    from asmopt.provenance import cpu_model, git_commit

    commit, cpu = git_commit(), cpu_model()
    config = model_config(args)
    with torch.device("meta"):  # counted without allocating
        params = sum(
            p.numel() for p in PLTForCausalLM(PLTConfig(**config, plt_num_loops=1)).parameters()
        )
    load_after = os.getloadavg()
    shape = ", ".join(f"{k}={v}" for k, v in config.items() if k != "max_position_embeddings")
    return [
        f"- {time.strftime('%Y-%m-%d %H:%M')}, commit {commit}; command: "
        f"`bench/bench_plt_decode.py {' '.join(args.argv)}`".rstrip(),
        f"- torch {torch.__version__}, {torch.get_num_threads()} threads, CPU: {cpu} "
        f"({os.cpu_count()} logical CPUs)",
        f"- model `{args.shape}`: {params / 1e6:.1f}M parameters (tied embeddings); {shape}",
        f"- shape: {SHAPES[args.shape].about}"
        + ("; weights shared by all modes" if SHAPES[args.shape].share_weights else ""),
        f"- prompt {args.prompt} tokens, {args.warmup} warm-up steps per mode, then "
        + (
            f"{args.profile_steps} profiled decode steps per mode (modes alternate step by step)"
            if args.profile
            else f"{args.rounds} rounds of one timed token per mode (order rotated per round); "
            f"{args.repeats} independent runs"
        ),
        f"- load average (1/5/15 min) before {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}",
    ]


Runs = list[dict[str, Result]]  # one dict (mode -> result) per repeat


def run_ratios(runs: Runs, mode: str, stat: str) -> list[float]:
    """The mode's latency over R = 1's, one value per repeated run."""
    return [run[mode].stat(stat) / run["R=1"].stat(stat) for run in runs]


def pooled(runs: Runs) -> dict[str, Result]:
    """All repeats' samples in one result per mode (KV bytes are the same in every run)."""
    out: dict[str, Result] = {}
    for name in runs[0]:
        res = Result(kv_bytes=runs[0][name].kv_bytes, tokens=runs[0][name].tokens)
        for run in runs:
            res.samples_s += run[name].samples_s
            res.cpu_s += run[name].cpu_s
        out[name] = res
    return out


def ratio_cell(runs: Runs, name: str, stat: str) -> str:
    """`median ratio x [lowest-highest run] (median run's ms)` of one mode or variant."""
    ratios = run_ratios(runs, name, stat)
    ms = statistics.median(run[name].stat(stat) for run in runs) * 1e3
    spread = f" [{min(ratios):.2f}-{max(ratios):.2f}]" if len(ratios) > 1 else ""
    return f"{statistics.median(ratios):.2f}x{spread} ({ms:.1f})"


def ratio_table(results: dict[tuple[str, int], Runs], modes: list[Mode], stat: str) -> list[str]:
    keys = list(results)
    header = "| mode | " + " | ".join(f"{d} b{b} latency" for d, b in keys)
    header += " | " + " | ".join(f"b{b} KV" for d, b in keys if d == keys[0][0])
    header += f" | b{keys[0][1]} KV at {LONG_CONTEXT} |"
    kv_keys = [k for k in keys if k[0] == keys[0][0]]
    lines = [header, "|---" * (2 + len(keys) + len(kv_keys)) + "|"]
    for mode in modes:
        cells = [ratio_cell(results[key], mode.name, stat) for key in keys]
        for key in kv_keys:
            base, res = results[key][0]["R=1"], results[key][0][mode.name]
            cells.append(f"{res.kv_bytes['total'] / base.kv_bytes['total']:.3f}x")
        first = results[kv_keys[0]][0]
        cells.append(
            f"{first[mode.name].kv_at(LONG_CONTEXT) / first['R=1'].kv_at(LONG_CONTEXT):.3f}x"
        )
        lines.append(f"| {mode.name} | " + " | ".join(cells) + " |")
    return lines


def kernel_table() -> list[str]:
    """Every few-row product kernel choice used in this run, with every candidate's timing."""
    choices = kernel_report()
    if not choices:
        return ["No few-row product was measured (kernels forced, or no CPU products).", ""]
    lines = [
        f"Few-row product kernels chosen on this machine (`{machine_key()}`; cached in "
        f"`{cache_path().name}`; source: measured in this run or read from that cache). Median "
        "us of one call of each candidate, timed in use; `mv` is a candidate for one row only, "
        f"the multi-row kernel `rows` for float32 only (here: {native.status()}):",
        "",
        "| dtype | rows | weight in x out | F.linear us | few-row us | mv us | rows us | "
        "best other / F.linear | chosen | source |",
        "|---" * 10 + "|",
    ]
    for c in choices:
        t = c.timings_us
        cells = [f"{t[k]:.1f}" if k in t else "-" for k in ("linear", "few_row", "mv", "rows")]
        best = c.best_alternative
        versus = f"{t[best] / t['linear']:.2f} ({best})" if best else "-"
        lines.append(
            f"| {c.dtype} | {c.rows} | {c.in_features} x {c.out_features} | "
            + " | ".join(cells)
            + f" | {versus} | {c.kernel} | {c.source} |"
        )
    return [*lines, ""]


def details(results: dict[tuple[str, int], Runs], modes: list[Mode]) -> list[str]:
    lines = [
        "| dtype | batch | mode | p10 ms | median ms | median ratio | CPU ms | CPU ratio | "
        "IQR/median | outliers | KV bytes | loop-1 KV | window KV | loop states | other full KV |",
        "|---" * 15 + "|",
    ]
    for (dtype, batch), runs in results.items():
        per_mode = pooled(runs)
        base, base_cpu = per_mode["R=1"].stat("median"), per_mode["R=1"].stat("cpu")
        for mode in modes:
            res = per_mode[mode.name]
            kv = res.kv_bytes
            lines.append(
                f"| {dtype} | {batch} | {mode.name} | {res.stat('p10') * 1e3:.1f} | "
                f"{res.stat('median') * 1e3:.1f} | {res.stat('median') / base:.2f}x | "
                f"{res.stat('cpu') * 1e3:.1f} | {res.stat('cpu') / base_cpu:.2f}x | "
                f"{res.spread:.2f} | {res.outlier_share:.0%} | {kv['total']:,} | "
                f"{kv['loop1_kv']:,} | {kv['window_kv']:,} | {kv['loop_states']:,} | "
                f"{kv['other_full_kv']:,} |"
            )
    return lines


def run_grid(
    dtypes: list[str],
    batches: list[int],
    args: argparse.Namespace,
    what: str,
    one_run: Callable[[str, int], dict[str, Result]],
) -> dict[tuple[str, int], Runs]:
    """`--repeats` runs of every (dtype, batch), repeats outermost (a slow drift of the
    machine then touches every configuration alike)."""
    grid: dict[tuple[str, int], Runs] = {(d, b): [] for d in dtypes for b in batches}
    for repeat in range(args.repeats):
        for dtype in dtypes:
            for batch in batches:
                print(
                    f"{what} {repeat + 1}/{args.repeats}: {dtype} batch {batch} ...",
                    file=sys.stderr,
                    flush=True,
                )
                grid[(dtype, batch)].append(one_run(dtype, batch))
    return grid


def write_raw(path: Path | None, grid: dict[tuple[str, int], Runs]) -> None:
    """Every sample (seconds per token, wall and process CPU), keyed dtype/batch/run/mode."""
    if path is None:
        return
    raw = {
        f"{d}/b{b}/run{i}/{name}": {"wall_s": res.samples_s, "cpu_s": res.cpu_s}
        for (d, b), runs in grid.items()
        for i, per_mode in enumerate(runs)
        for name, res in per_mode.items()
    }
    path.write_text(json.dumps(raw))


def _parser() -> argparse.ArgumentParser:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    parser.add_argument(
        "--shape",
        choices=sorted(SHAPES),
        default="100m",
        help="model widths: 100m (small) or 7b-layers (the published 7B's layers)",
    )
    parser.add_argument(
        "--layers", type=int, default=None, help="decoder layers (default: the shape's own)"
    )
    parser.add_argument("--dtypes", default="bf16,fp32", help=f"comma list of {list(DTYPES)}")
    parser.add_argument("--batches", default="1,8", help="comma list of batch sizes")
    parser.add_argument("--modes", default=None, help="comma list of mode names (default: all)")
    parser.add_argument("--prompt", type=int, default=128, help="prefill length (> window 64)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed decode steps per mode")
    parser.add_argument("--rounds", type=int, default=40, help="timed tokens per mode and run")
    parser.add_argument(
        "--repeats", type=int, default=3, help="independent runs; ratios show their spread"
    )
    parser.add_argument(
        "--stat",
        choices=("p10", "median", "min", "cpu"),
        default="p10",
        help="latency statistic of the table: wall-time p10/median/min, or median process CPU "
        "time (with --threads 1 it is the wall time minus the time other jobs held the core)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help=f"modes {QUICK_MODES}, 12 rounds")
    parser.add_argument("--profile", action="store_true", help="profile R=1 and PLT-2 instead")
    parser.add_argument("--profile-steps", type=int, default=10)
    parser.add_argument(
        "--ablate", action="store_true", help="time PLT-2 with its window call / gate skipped"
    )
    parser.add_argument("--goal", type=float, default=1.15, help="latency goal vs R = 1")
    parser.add_argument(
        "--max-run-range",
        type=float,
        default=0.05,
        help="warn when a ratio's lowest and highest run differ by more than this",
    )
    parser.add_argument(
        "--recalibrate",
        action="store_true",
        help="forget this machine's cached kernel choices and measure them again",
    )
    parser.add_argument("--raw", type=Path, default=None, help="write raw samples (JSON) here")
    parser.add_argument("--out", type=Path, default=None, help="also write the Markdown here")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv

    torch.set_num_threads(args.threads)
    names = [m.name for m in ALL_MODES]
    wanted = args.modes.split(",") if args.modes else (QUICK_MODES if args.quick else names)
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        parser.error(f"unknown modes {unknown}; available: {names}")
    modes = [m for m in ALL_MODES if m.name in wanted or m.name == "R=1"]  # R=1: the baseline
    if args.quick:
        args.rounds = 12
    dtypes = args.dtypes.split(",")
    bad = sorted(set(dtypes) - set(DTYPES))
    if bad:
        parser.error(f"unknown dtypes {bad}; available: {list(DTYPES)}")
    batches = [int(b) for b in args.batches.split(",")]
    if args.layers is not None and args.layers < 1:
        parser.error(f"--layers must be at least 1, got {args.layers}")
    if args.recalibrate:
        cache_path().unlink(missing_ok=True)
    load_before = os.getloadavg()

    if args.profile:
        profiled = [m for m in modes if m.name in ("R=1", "PLT-2")]
        report = [profile_step(profiled, d, b, args) for d in dtypes for b in batches]
        text = "\n".join(["# PLT decode profile", *environment(args, load_before), "", *report])
    elif args.ablate:
        ablations = run_grid(dtypes, batches, args, "ablation", lambda d, b: ablate(d, b, args))
        text = "\n".join(
            [
                "# PLT decode ablation",
                *environment(args, load_before),
                "",
                f"Per-token latency ({args.stat}) as a ratio to R = 1 of the same run: the "
                f"median over {args.repeats} runs, [lowest-highest run], (the median run's "
                "ms). Skipped parts give wrong tokens; only their time means anything.",
                "",
                *ablation_table(ablations, args.stat),
                "",
            ]
        )
        write_raw(args.raw, ablations)
    else:
        results = run_grid(dtypes, batches, args, "run", lambda d, b: measure(modes, d, b, args))
        text = "\n".join(
            [
                "# PLT decode benchmark",
                *environment(args, load_before),
                "",
                f"Per-token decode latency as a ratio to R = 1 of the same dtype, batch and run "
                f"({args.stat}): the median over {args.repeats} runs, [lowest-highest run], "
                f"and the median run's {args.stat} ms; KV-cache bytes as a ratio to R = 1 after "
                f"the run and extrapolated to {LONG_CONTEXT} tokens of context:",
                "",
                *ratio_table(results, modes, args.stat),
                "",
                *goal_check(results, modes, args),
                *kernel_table(),
                "Details, all runs' samples pooled (spread = IQR / median; outliers = modified "
                "z-score > 3.5):",
                "",
                *details(results, modes),
                "",
            ]
        )
        write_raw(args.raw, results)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
