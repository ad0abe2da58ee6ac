"""`asmopt serve`: the OpenAI-compatible server around a local model directory.

A first try needs no download: `asmopt.train.tiny.build_tiny_model` writes a small random
model that loads like any other; the help text and the missing-model error say how.
"""

from __future__ import annotations

import argparse
import logging
import sys

log = logging.getLogger(__name__)

BUILD_TINY = (
    'python -c "from pathlib import Path; from asmopt.train.tiny import build_tiny_model; '
    "build_tiny_model(Path('tiny-llama'), 'llama')\""
)
FIRST_TRY = f"for a first try, build a tiny random model ({BUILD_TINY}) and serve tiny-llama"
EPILOG = f"""\
Honours n, temperature, top_p, max_tokens, seed, stop and logprobs; any parameter
it cannot honour (tools, response_format, stream, ...) is refused with a 400 naming it.
Limits follow the model's context C: a body of at most 64 bytes per token of C (never
over 32 MiB, checked before it is read); prompt tokens + max_tokens over C is a 400.
When --max-concurrent requests generate and --max-queue wait, others get a 429 with
Retry-After; more than --max-connections connections get a 503.

A first try needs no download: build a tiny random model (asmopt.train.tiny) with
  {BUILD_TINY}
then run: asmopt serve tiny-llama
"""


# The server's own limits: (lowest, highest). Checked here, before the port and the model,
# so a wrong number costs nothing; the highs are far above sensible use.
LIMIT_BOUNDS: dict[str, tuple[float, float]] = {
    "max_concurrent": (1, 256),
    "max_queue": (0, 100_000),
    "max_connections": (1, 100_000),
    "read_timeout": (0.1, 3_600),
}


def _check_limits(args: argparse.Namespace) -> None:
    for name, (low, high) in LIMIT_BOUNDS.items():
        value = getattr(args, name)
        flag = "--" + name.replace("_", "-")
        if not low <= value <= high:  # also false for nan
            raise ValueError(f"{flag} must be {low:g}..{high:g}, got {value}")


def cmd_serve(args: argparse.Namespace) -> int:
    from asmopt.policies.hf_local import HFBackend
    from asmopt.policies.llm import PolicyError
    from asmopt.policies.serve import ModelServer, ServeLimits, check_port
    from asmopt.typed_config import check_device

    if args.model_dir is None:
        raise ValueError(f"asmopt serve needs MODEL_DIR, a local model directory; {FIRST_TRY}")
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be 0..65535, got {args.port}")
    _check_limits(args)
    check_device(args.device, "--device")  # before the model loads: one line, not a traceback
    limits = ServeLimits(
        max_concurrent=args.max_concurrent,
        max_queue=args.max_queue,
        max_connections=args.max_connections,
        read_timeout_s=args.read_timeout,
    )
    try:  # before the model loads, which takes a while
        check_port(args.host, args.port)
    except OSError as exc:
        raise ValueError(
            f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc}); "
            "choose another --port or stop what uses it"
        ) from None
    try:
        backend = HFBackend(
            args.model_dir, device=args.device, dtype=args.dtype, batch_size=args.batch_size
        )
    except PolicyError as exc:
        raise PolicyError(f"{exc}; {FIRST_TRY}") from None
    server = ModelServer(
        backend, host=args.host, port=args.port, model_name=args.name, limits=limits
    )
    print(
        f"asmopt serve: model {server.model_name!r} at {server.url} "
        f"(OpenAI-compatible: /models, /chat/completions, /completions; "
        f"context {backend.context_length} tokens)",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "serve",
        parents=[common],
        help="serve a local model over an OpenAI-compatible HTTP API",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "model_dir",
        nargs="?",
        metavar="MODEL_DIR",
        help="local Hugging Face model directory (see below for a tiny one to start with)",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--name", default=None, help="model name clients must use (default: dir name)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="auto", help="auto | float32 | bfloat16 | float16")
    p.add_argument("--batch-size", type=int, default=8)
    from asmopt.policies.serve import ServeLimits

    defaults = ServeLimits()
    p.add_argument(
        "--max-concurrent",
        type=int,
        default=defaults.max_concurrent,
        help="requests generating at once (default: %(default)s)",
    )
    p.add_argument(
        "--max-queue",
        type=int,
        default=defaults.max_queue,
        help="requests waiting to generate; beyond them a 429 (default: %(default)s)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=defaults.max_connections,
        help="connections served at once; beyond them a 503 (default: %(default)s)",
    )
    p.add_argument(
        "--read-timeout",
        type=float,
        default=defaults.read_timeout_s,
        help="seconds a client may take per read, and for its whole body (default: %(default)s)",
    )
    p.set_defaults(func=cmd_serve)
