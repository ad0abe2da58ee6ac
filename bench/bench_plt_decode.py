"""Per-token decode latency and KV-cache bytes: PLT vs a plain decoder (R = 1) vs plain looping.

    .venv/bin/python bench/bench_plt_decode.py            # full table: bf16 + fp32, batch 1 + 8
    .venv/bin/python bench/bench_plt_decode.py --quick    # a smaller, faster run
    .venv/bin/python bench/bench_plt_decode.py --profile  # where the time of one step goes

Procedure (all modes share one set of weights, ~100M parameters, on CPU):
1. For every (dtype, batch): build every mode, prefill the same random prompt (longer than the
   PLT window, so ring buffers are full), and take `--warmup` untimed decode steps.
2. `--rounds` rounds; in each round every mode decodes `--steps` tokens, one timed forward +
   argmax per token. The mode order rotates between rounds, so slow drift of the machine
   (other jobs, thermal state) spreads over all modes instead of biasing one.
3. Per mode: the median per-token latency over all samples, its ratio to R = 1 from the same
   run, the spread (IQR / median) and the share of outliers (modified z-score > 3.5). KV bytes
   are what the cache holds after the run (all modes hold the same number of tokens).

Raw samples go to `--raw` as JSON when given. The latency of a shared 2-core machine moves
with other jobs; the header records the load average before and after so a reader can judge.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from asmopt.models.plt import PLTCache, PLTConfig, PLTForCausalLM

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

DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp32": torch.float32}


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

    samples_s: list[float] = field(default_factory=list)
    kv_bytes: dict[str, int] = field(default_factory=dict)

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def spread(self) -> float:
        """Inter-quartile range over the median; 'none' (nan) with fewer than 4 samples."""
        if len(self.samples_s) < 4:
            return float("nan")
        q1, _, q3 = statistics.quantiles(self.samples_s, n=4)
        return (q3 - q1) / self.median_s

    @property
    def outlier_share(self) -> float:
        """Share of samples with modified z-score > 3.5 (median and MAD, Iglewicz-Hoaglin)."""
        median = self.median_s
        mad = statistics.median(abs(s - median) for s in self.samples_s)
        if mad == 0:
            return 0.0
        return sum(0.6745 * abs(s - median) / mad > 3.5 for s in self.samples_s) / len(
            self.samples_s
        )


def build_models(modes: list[Mode], dtype: torch.dtype, seed: int) -> dict[str, PLTForCausalLM]:
    """All modes with the same shared-stack weights (the gates start at their zero init)."""
    models: dict[str, PLTForCausalLM] = {}
    base_state: dict[str, torch.Tensor] | None = None
    for mode in modes:
        torch.manual_seed(seed)
        config = PLTConfig(**BENCH_SHAPE, plt_num_loops=mode.loops, plt_loop_mode=mode.loop_mode)
        model = PLTForCausalLM(config).to(dtype).eval()
        if base_state is None:
            base_state = model.state_dict()
        else:
            missing, unexpected = model.load_state_dict(base_state, strict=False)
            assert not unexpected and all("plt_gate" in key for key in missing)
        model.model.parallel_decode = mode.parallel_decode
        models[mode.name] = model
    return models


def decode_step(model: PLTForCausalLM, cache: PLTCache, token: torch.Tensor) -> torch.Tensor:
    """One generated token: forward through the cache, then greedy choice."""
    logits = model(token, past_key_values=cache, use_cache=True).logits
    return logits[:, -1].argmax(-1, keepdim=True)


def measure(
    modes: list[Mode], dtype: torch.dtype, batch: int, args: argparse.Namespace
) -> dict[str, Result]:
    models = build_models(modes, dtype, args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    prompt = torch.randint(
        2, int(BENCH_SHAPE["vocab_size"]), (batch, args.prompt), generator=generator
    )
    caches: dict[str, PLTCache] = {}
    tokens: dict[str, torch.Tensor] = {}
    results = {mode.name: Result() for mode in modes}
    with torch.inference_mode():
        for mode in modes:
            model = models[mode.name]
            caches[mode.name] = PLTCache(model.config)
            logits = model(prompt, past_key_values=caches[mode.name], logits_to_keep=1).logits
            tokens[mode.name] = logits[:, -1].argmax(-1, keepdim=True)
            for _ in range(args.warmup):
                tokens[mode.name] = decode_step(model, caches[mode.name], tokens[mode.name])
        order = list(modes)
        for round_idx in range(args.rounds):
            rotation = round_idx % len(order)
            for mode in order[rotation:] + order[:rotation]:
                model, cache = models[mode.name], caches[mode.name]
                for _ in range(args.steps):
                    start = time.perf_counter()
                    tokens[mode.name] = decode_step(model, cache, tokens[mode.name])
                    results[mode.name].samples_s.append(time.perf_counter() - start)
    for mode in modes:
        results[mode.name].kv_bytes = caches[mode.name].nbytes()
    return results


def profile_step(
    modes: list[Mode], dtype: torch.dtype, batch: int, args: argparse.Namespace
) -> str:
    """Where the time of a decode step goes: operator totals per mode from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    models = build_models(modes, dtype, args.seed)
    prompt = torch.randint(2, int(BENCH_SHAPE["vocab_size"]), (batch, args.prompt))
    groups: dict[str, Callable[[str], bool]] = {
        "matmul (linear layers, lm_head)": lambda n: n in {"aten::mm", "aten::addmm", "aten::bmm"},
        "attention kernels": lambda n: "scaled_dot_product" in n or n == "aten::_softmax",
        "cache copies (cat, index_copy, copy_)": lambda n: (
            n in {"aten::cat", "aten::index_copy_", "aten::copy_", "aten::stack"}
        ),
    }
    lines = [f"### Profile: {args.profile_steps} decode steps, {dtype}, batch {batch}", ""]
    lines.append(
        "| mode | total ms/step | " + " | ".join(groups) + " | other ops | op calls/step |"
    )
    lines.append("|---" * (len(groups) + 4) + "|")
    top_lines: list[str] = []
    with torch.inference_mode():
        for mode in modes:
            model = models[mode.name]
            cache = PLTCache(model.config)
            token = model(prompt, past_key_values=cache, logits_to_keep=1).logits[:, -1:].argmax(-1)
            for _ in range(args.warmup):
                token = decode_step(model, cache, token)
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(args.profile_steps):
                    token = decode_step(model, cache, token)
            events = prof.key_averages()
            total = sum(e.self_cpu_time_total for e in events)
            calls = sum(e.count for e in events)
            shares = []
            grouped = 0.0
            for match in groups.values():
                value = sum(e.self_cpu_time_total for e in events if match(e.key))
                grouped += value
                shares.append(f"{value / 1e3 / args.profile_steps:.2f}")
            other = (total - grouped) / 1e3 / args.profile_steps
            lines.append(
                f"| {mode.name} | {total / 1e3 / args.profile_steps:.2f} | "
                + " | ".join(shares)
                + f" | {other:.2f} | {calls / args.profile_steps:.0f} |"
            )
            top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:8]
            top_lines.append(
                f"- {mode.name}: "
                + ", ".join(
                    f"{e.key} {e.self_cpu_time_total / 1e3 / args.profile_steps:.2f} ms "
                    f"({e.count // args.profile_steps}x)"
                    for e in top
                )
            )
    return "\n".join([*lines, "", "Top operators per step:", *top_lines])


def environment(args: argparse.Namespace, load_before: tuple[float, ...]) -> list[str]:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    params = sum(
        p.numel() for p in PLTForCausalLM(PLTConfig(**BENCH_SHAPE, plt_num_loops=1)).parameters()
    )
    load_after = os.getloadavg()
    return [
        f"- date: {time.strftime('%Y-%m-%d %H:%M:%S')}, commit {commit}",
        f"- torch {torch.__version__}, {torch.get_num_threads()} threads, CPU: {cpu} "
        f"({os.cpu_count()} logical CPUs)",
        f"- model: {params / 1e6:.1f}M parameters (tied embeddings), "
        + ", ".join(f"{k}={v}" for k, v in BENCH_SHAPE.items() if k != "max_position_embeddings"),
        f"- prompt {args.prompt} tokens, {args.warmup} warm-up steps, {args.rounds} rounds x "
        f"{args.steps} timed steps per mode (mode order rotated per round)",
        f"- load average (1, 5, 15 min) before {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}",
    ]


def table(results: dict[tuple[str, int], dict[str, Result]], modes: list[Mode]) -> list[str]:
    keys = sorted(results, key=lambda k: (list(DTYPES).index(k[0]), k[1]))
    header = "| mode | " + " | ".join(f"{d} b{b} latency" for d, b in keys)
    header += " | " + " | ".join(f"{d} b{b} KV" for d, b in keys) + " |"
    lines = [header, "|---" * (1 + 2 * len(keys)) + "|"]
    for mode in modes:
        cells = []
        for key in keys:
            base, res = results[key]["R=1"], results[key][mode.name]
            cells.append(f"{res.median_s / base.median_s:.2f}x ({res.median_s * 1e3:.1f} ms)")
        for key in keys:
            base, res = results[key]["R=1"], results[key][mode.name]
            cells.append(f"{res.kv_bytes['total'] / base.kv_bytes['total']:.3f}x")
        lines.append(f"| {mode.name} | " + " | ".join(cells) + " |")
    return lines


def details(results: dict[tuple[str, int], dict[str, Result]], modes: list[Mode]) -> list[str]:
    lines = [
        "| dtype | batch | mode | median ms | IQR/median | outliers | KV bytes | loop-1 KV | "
        "window KV | loop states | other full KV |",
        "|---" * 11 + "|",
    ]
    for (dtype, batch), per_mode in results.items():
        for mode in modes:
            res = per_mode[mode.name]
            kv = res.kv_bytes
            lines.append(
                f"| {dtype} | {batch} | {mode.name} | {res.median_s * 1e3:.2f} | "
                f"{res.spread:.2f} | {res.outlier_share:.0%} | {kv['total']:,} | "
                f"{kv['loop1_kv']:,} | {kv['window_kv']:,} | {kv['loop_states']:,} | "
                f"{kv['other_full_kv']:,} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    parser.add_argument("--dtypes", default="bf16,fp32", help="comma list of bf16, fp32")
    parser.add_argument("--batches", default="1,8", help="comma list of batch sizes")
    parser.add_argument("--modes", default=None, help="comma list of mode names (default: all)")
    parser.add_argument("--prompt", type=int, default=128, help="prefill length (> window 64)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed decode steps per mode")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds")
    parser.add_argument(
        "--steps", type=int, default=8, help="timed decode steps per mode per round"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help=f"modes {QUICK_MODES}, 3 rounds x 4")
    parser.add_argument("--profile", action="store_true", help="profile R=1 and PLT-2 instead")
    parser.add_argument("--profile-steps", type=int, default=10)
    parser.add_argument("--raw", type=Path, default=None, help="write raw samples (JSON) here")
    parser.add_argument("--out", type=Path, default=None, help="also write the Markdown here")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    names = [m.name for m in ALL_MODES]
    wanted = args.modes.split(",") if args.modes else (QUICK_MODES if args.quick else names)
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        parser.error(f"unknown modes {unknown}; available: {names}")
    if "R=1" not in wanted:
        wanted = ["R=1", *wanted]  # ratios need the baseline
    modes = [m for m in ALL_MODES if m.name in wanted]
    if args.quick:
        args.rounds, args.steps = 3, 4
    dtypes = args.dtypes.split(",")
    batches = [int(b) for b in args.batches.split(",")]
    load_before = os.getloadavg()

    if args.profile:
        profiled = [m for m in modes if m.name in ("R=1", "PLT-2")]
        report = [
            profile_step(profiled, DTYPES[d], b, args) + "\n" for d in dtypes for b in batches
        ]
        text = "\n".join(["# PLT decode profile", *environment(args, load_before), "", *report])
    else:
        results: dict[tuple[str, int], dict[str, Result]] = {}
        for dtype in dtypes:
            for batch in batches:
                print(f"measuring {dtype} batch {batch} ...", file=sys.stderr, flush=True)
                results[(dtype, batch)] = measure(modes, DTYPES[dtype], batch, args)
        text = "\n".join(
            [
                "# PLT decode benchmark",
                *environment(args, load_before),
                "",
                "Per-token decode latency as a ratio to R = 1 of the same dtype and batch "
                "(median ms in brackets), and KV-cache bytes as a ratio to R = 1:",
                "",
                *table(results, modes),
                "",
                "Details (spread = IQR / median; outliers = modified z-score > 3.5):",
                "",
                *details(results, modes),
                "",
            ]
        )
        if args.raw is not None:
            raw = {
                f"{d}/b{b}/{name}": res.samples_s
                for (d, b), per_mode in results.items()
                for name, res in per_mode.items()
            }
            args.raw.write_text(json.dumps(raw))
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
