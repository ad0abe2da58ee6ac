"""What a product of a few rows costs next to one row, per kernel: the price of decoding
R loops (or a batch) as rows of one pass over the weights.

    .venv/bin/python bench/bench_few_row_products.py                 # published 7B widths
    .venv/bin/python bench/bench_few_row_products.py --shapes 768x2048 --rows 1,8,16

PLT's one-pass decode multiplies every weight by batch x R rows instead of batch rows. When a
product streams its weight, extra rows should be nearly free; whether they are depends on
the kernel the CPU's libraries offer for that row count. This benchmark times, for each
(dtype, weight shape, rows):

- `linear`: `F.linear(x, W)` (the BLAS's matrix product; a matrix-vector product at 1 row);
- `few_row`: `asmopt.models.plt.kernels.few_row_product`, the transposed product;
- `mv`: `torch.mv` per row (1 row only: the matrix-vector kernel itself);
- `rows`: the model's multi-row float32 kernel (`asmopt.models.plt.native`, built for this CPU
  at first use; float32 only, left out with `--no-native` or when it cannot be built);
- `onednn_packed`: oneDNN's linear over a weight re-packed once into its own layout
  (`torch.utils.mkldnn`), where the build has it; not used by the model, timed for reference.

Every call reads a cold weight: copies are cycled until they span at least `--cold-mb`
(beyond the last-level cache), as a decode step meets each weight once. Kernels are called
in an order that rotates every round, so load from other jobs touches all of them alike.
The table gives the median ms per call and, per kernel, the ratio to its own 1-row time and
the best kernel's ratio to the best 1-row time (what R rows cost over one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from asmopt.models.plt import native
from asmopt.models.plt.kernels import few_row_product

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
# The published 7B's products (docs/plt.md): q/o, k/v, MLP gate/up, MLP down (in x out).
DEFAULT_SHAPES = "5120x5120,5120x1024,5120x27648,27648x5120"

Kernel = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def parse_shape(text: str) -> tuple[int, int]:
    try:
        in_features, out_features = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"a weight shape is IN x OUT, like 5120x27648; got {text!r}") from None
    if in_features < 1 or out_features < 1:
        raise ValueError(f"weight dimensions must be positive; got {text!r}")
    return in_features, out_features


def kernels_for(rows: int, onednn: bool, multi_row: bool = False) -> dict[str, Kernel]:
    """The kernels that apply to `rows` rows (`mv` only to one; `multi_row` adds the
    model's multi-row float32 kernel)."""
    chosen: dict[str, Kernel] = {
        "linear": lambda x, w: F.linear(x, w),
        "few_row": lambda x, w: few_row_product(x, w),
    }
    if rows == 1:
        chosen["mv"] = lambda x, w: torch.mv(w, x[0]).unsqueeze(0)
    if multi_row:
        chosen["rows"] = native.rows_product
    if onednn:
        chosen["onednn_packed"] = _onednn_packed
    return chosen


_PACKED: dict[int, torch.nn.Module] = {}
# dtype -> why oneDNN's packed kernel was left out (it needs CPU features for some dtypes:
# bfloat16 wants AVX-512 BW/VL/DQ or AVX-NE-CONVERT), reported with the table.
LEFT_OUT: dict[str, str] = {}


def _onednn_runs(dtype: torch.dtype, in_features: int, weight: torch.Tensor) -> bool:
    """Whether the packed kernel runs on this CPU for `dtype`; if not, it is left out of
    that dtype's table and LEFT_OUT says why, instead of the whole run failing."""
    try:
        with torch.inference_mode():
            _onednn_packed(torch.zeros(1, in_features, dtype=dtype), weight)
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[-1]
        LEFT_OUT[str(dtype).removeprefix("torch.")] = reason
        print(f"onednn_packed left out for {dtype}: {reason}", file=sys.stderr, flush=True)
        return False
    return True


def _onednn_packed(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """oneDNN's linear over `w` packed once (the packing is not timed: it is cached per
    weight before timing starts)."""
    return _PACKED[w.data_ptr()](x.to_mkldnn()).to_dense()


def pack_for_onednn(weights: list[torch.Tensor]) -> None:
    from torch.utils import mkldnn

    for w in weights:
        linear = torch.nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=w.dtype)
        linear.weight = torch.nn.Parameter(w, requires_grad=False)
        _PACKED[w.data_ptr()] = mkldnn.to_mkldnn(linear, w.dtype)


def time_shape(
    dtype: torch.dtype,
    in_features: int,
    out_features: int,
    rows_list: list[int],
    args: argparse.Namespace,
) -> dict[str, dict[str, list[float]]]:
    """Seconds per call, keyed by rows then kernel; every kernel's first call is untimed."""
    weight_bytes = in_features * out_features * dtype.itemsize
    copies = max(1, -(-args.cold_mb * 2**20 // weight_bytes))
    generator = torch.Generator().manual_seed(0)
    weights = [
        torch.randn(out_features, in_features, generator=generator).to(dtype) for _ in range(copies)
    ]
    onednn = args.onednn and torch.backends.mkldnn.is_available()
    multi_row = (
        getattr(args, "native", False) and dtype == torch.float32 and native.load() is not None
    )
    if onednn:
        pack_for_onednn(weights)
        onednn = _onednn_runs(dtype, in_features, weights[0])
    samples: dict[str, dict[str, list[float]]] = {}
    with torch.inference_mode():
        for rows in rows_list:
            x = torch.randn(rows, in_features, generator=generator).to(dtype)
            kernels = kernels_for(rows, onednn, multi_row)
            names = list(kernels)
            per_kernel: dict[str, list[float]] = {name: [] for name in names}
            reference = F.linear(x, weights[0]).float()
            for name in names:  # untimed first calls, and a check that each kernel is right
                out = kernels[name](x, weights[0]).float()
                scale = reference.abs().max().item() + 1e-6
                if (out - reference).abs().max().item() > 0.05 * scale:
                    raise RuntimeError(f"{name} disagrees with F.linear at {rows} rows")
            call = 0
            for round_idx in range(args.calls):
                start = round_idx % len(names)
                for name in names[start:] + names[:start]:
                    w = weights[call % copies]
                    call += 1
                    begin = time.perf_counter()
                    kernels[name](x, w)
                    per_kernel[name].append(time.perf_counter() - begin)
            samples[str(rows)] = per_kernel
    _PACKED.clear()
    return samples


def table(results: dict[str, dict[str, dict[str, list[float]]]]) -> list[str]:
    lines = [
        "| dtype | weight in x out | rows | " + "median ms per kernel (x its own 1-row time)"
        " | best kernel | best / best at 1 row |",
        "|---|---|---|---|---|---|",
    ]
    for key, by_rows in results.items():
        dtype, shape = key.split(" ")
        one = {name: statistics.median(s) for name, s in by_rows["1"].items()}
        best_one = min(one.values())
        for rows, per_kernel in by_rows.items():
            medians = {name: statistics.median(s) for name, s in per_kernel.items()}
            cells = ", ".join(
                f"{name} {ms * 1e3:.2f}" + (f" ({ms / one[name]:.2f}x)" if rows != "1" else "")
                for name, ms in medians.items()
            )
            best = min(medians, key=medians.__getitem__)
            lines.append(
                f"| {dtype} | {shape} | {rows} | {cells} | {best} | "
                f"{medians[best] / best_one:.2f}x |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dtypes", default="fp32,bf16", help=f"comma list of {list(DTYPES)}")
    parser.add_argument("--shapes", default=DEFAULT_SHAPES, help="comma list of IN x OUT")
    parser.add_argument("--rows", default="1,2,4,8,16", help="comma list; must include 1")
    parser.add_argument("--calls", type=int, default=15, help="timed calls per kernel and rows")
    parser.add_argument("--cold-mb", type=int, default=512, help="weight copies span this much")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    parser.add_argument("--no-onednn", dest="onednn", action="store_false")
    parser.add_argument("--no-native", dest="native", action="store_false")
    parser.add_argument("--raw", type=Path, default=None, help="write every sample (JSON) here")
    parser.add_argument("--out", type=Path, default=None, help="also write the Markdown here")
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    try:
        dtypes = [DTYPES[d] for d in args.dtypes.split(",")]
    except KeyError as missing:
        parser.error(f"unknown dtype {missing}; available: {list(DTYPES)}")
    try:
        shapes = [parse_shape(s) for s in args.shapes.split(",")]
        rows_list = sorted({int(r) for r in args.rows.split(",")})
    except ValueError as err:
        parser.error(str(err))
    if rows_list[0] != 1 or any(r < 1 for r in rows_list):
        parser.error(f"--rows must include 1 and hold positive counts; got {args.rows}")
    if args.calls < 1 or args.cold_mb < 0 or args.threads < 1:
        parser.error("--calls and --threads must be at least 1 and --cold-mb at least 0")
    torch.set_num_threads(args.threads)

    from asmopt.provenance import cpu_model, git_commit

    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    for dtype in dtypes:
        for in_features, out_features in shapes:
            name = f"{str(dtype).removeprefix('torch.')} {in_features}x{out_features}"
            print(f"{name} ...", file=sys.stderr, flush=True)
            results[name] = time_shape(dtype, in_features, out_features, rows_list, args)
    text = "\n".join(
        [
            "# Few-row products: what extra rows cost",
            f"- {time.strftime('%Y-%m-%d %H:%M')}, commit {git_commit()}; command: "
            f"`bench/bench_few_row_products.py {' '.join(args.argv)}`".rstrip(),
            f"- torch {torch.__version__}, {torch.get_num_threads()} threads, CPU: {cpu_model()} "
            f"({os.cpu_count()} logical CPUs); {args.calls} timed calls per kernel and row "
            f"count over cold weights (copies spanning >= {args.cold_mb} MiB)",
            f"- multi-row float32 kernel (`rows`): "
            f"{native.status() if args.native else 'left out (--no-native)'}",
            *(f"- `onednn_packed` left out for {d}: {why}" for d, why in LEFT_OUT.items()),
            "",
            *table(results),
            "",
        ]
    )
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    if args.raw is not None:
        args.raw.write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
