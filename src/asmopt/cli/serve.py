"""`asmopt serve`: the OpenAI-compatible server around a local model directory.

A first try needs no download: `asmopt.train.tiny.build_tiny_model` writes a small random
model that loads like any other; the help text and the missing-model error say how.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from asmopt.cli.common import UsageError
from asmopt.cli.options import add_bounded

if TYPE_CHECKING:
    from asmopt.policies.serve import ServeLimits

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


@dataclass(frozen=True)
class LimitFlag:
    """One of the server's limits as a flag: its ServeLimits field, its type and the range
    it is checked against (here, before the port and the model, so a wrong number costs
    nothing; the highs are far above sensible use)."""

    dest: str
    field: str
    kind: type[int] | type[float]
    low: float
    high: float
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")


LIMIT_FLAGS = (
    LimitFlag("max_concurrent", "max_concurrent", int, 1, 256, "requests generating at once"),
    LimitFlag(
        "max_queue", "max_queue", int, 0, 100_000, "requests waiting to generate; beyond them a 429"
    ),
    LimitFlag(
        "max_connections",
        "max_connections",
        int,
        1,
        100_000,
        "connections served at once; beyond them a 503",
    ),
    LimitFlag(
        "read_timeout",
        "read_timeout_s",
        float,
        0.1,
        3_600,
        "seconds a client may take for its request line and headers, again for its body, and "
        "to start reading its answer; also how long an idle connection stays open",
    ),
)


def _limits(args: argparse.Namespace) -> ServeLimits:
    """The limits the flags ask for, each checked against its range."""
    from asmopt.policies.serve import ServeLimits

    for spec in LIMIT_FLAGS:
        value = getattr(args, spec.dest)
        if not spec.low <= value <= spec.high:  # also false for nan
            raise UsageError(f"{spec.flag} must be {spec.low:g}..{spec.high:g}, got {value}")
    return ServeLimits(**{spec.field: getattr(args, spec.dest) for spec in LIMIT_FLAGS})


def cmd_serve(args: argparse.Namespace) -> int:
    from asmopt.policies.hf_local import HFBackend
    from asmopt.policies.llm import PolicyError
    from asmopt.policies.server import ModelServer, check_port
    from asmopt.typed_config import check_device

    if args.model_dir is None:
        raise UsageError(f"asmopt serve needs MODEL_DIR, a local model directory; {FIRST_TRY}")
    limits = _limits(args)
    check_device(args.device, "--device")  # before the model loads: one line, not a traceback
    try:  # before the model loads, which takes a while
        check_port(args.host, args.port)
    except OSError as exc:
        raise UsageError(
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
        server.serve_forever()  # Ctrl+C: the requests being answered end first
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
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
    add_bounded(p, "--port", low=0, high=65_535, type=int, default=8000)
    p.add_argument("--name", default=None, help="model name clients must use (default: dir name)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="auto", help="auto | float32 | bfloat16 | float16")
    add_bounded(p, "--batch-size", low=1, high=4_096, type=int, default=8)
    from asmopt.policies.serve import ServeLimits

    defaults = ServeLimits()
    for spec in LIMIT_FLAGS:
        p.add_argument(
            spec.flag,
            type=spec.kind,
            default=getattr(defaults, spec.field),
            help=f"{spec.help} (default: %(default)s)",
        )
    p.set_defaults(func=cmd_serve)
