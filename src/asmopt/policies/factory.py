"""Build the policy an `asmopt eval` command line asks for, validating its options."""

from __future__ import annotations

import argparse
from typing import Any

from asmopt.policies import get_policy
from asmopt.policies.base import Policy
from asmopt.policies.llm import ANSWER_TOKENS, LLMPolicy, PolicyError, SamplingParams
from asmopt.policies.prompts import load_template

LLM_POLICIES = ("openai", "hf")


def add_policy_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("language-model policies (--policy openai | hf)")
    g.add_argument("--model", help="model name (openai) or local model directory (hf)")
    g.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    g.add_argument("--api", choices=("chat", "completions"), default="chat")
    g.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key"
    )
    g.add_argument(
        "--template",
        default="reference",
        help="reference | c_only | few_shot | diff | PATH to your own template",
    )
    g.add_argument("--temperature", type=float, default=0.0)
    g.add_argument("--top-p", type=float, default=1.0)
    g.add_argument(
        "--max-tokens",
        type=int,
        default=ANSWER_TOKENS,
        help=f"max new tokens per answer (default {ANSWER_TOKENS}: a whole assembly file; "
        "answers on the built-in suite run to about 6,300 tokens)",
    )
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--concurrency", type=int, default=8, help="parallel HTTP requests")
    g.add_argument("--device", default="cpu", help="hf: torch device")
    g.add_argument("--dtype", default="auto", help="hf: auto | float32 | bfloat16")
    g.add_argument(
        "--search-budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="compiler-search: wall seconds per program for building, checking and timing "
        "its variants (default 180); variants left when it is spent are skipped and listed",
    )
    g.add_argument(
        "--answers",
        metavar="FILE.jsonl",
        help="--policy answers: answers produced elsewhere, one JSON object per line "
        '({"program": ID, "sample": N, "text": ANSWER}); extracted with --template\'s format',
    )
    g.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="refinement rounds with feedback on the selection split",
    )


def make_policy(args: argparse.Namespace, toolchain: Any, sandbox: Any) -> Policy:
    """The policy named by `args.policy`, wrapped for refinement when --rounds > 1."""
    name = args.policy
    rounds = getattr(args, "rounds", 1)
    if rounds < 1:
        raise PolicyError(f"--rounds must be at least 1, got {rounds}")
    if name in LLM_POLICIES:
        if not args.model:
            raise PolicyError(f"--policy {name} needs --model")
        params = SamplingParams(
            temperature=args.temperature,
            top_p=args.top_p,
            max_new_tokens=args.max_tokens,
            seed=args.seed,
        )
        template = load_template(args.template)
        if name == "openai":
            from asmopt.policies.openai_http import OpenAIBackend

            if not args.base_url:
                raise PolicyError("--policy openai needs --base-url (e.g. http://host:8000/v1)")
            backend: Any = OpenAIBackend(
                base_url=args.base_url,
                model=args.model,
                api=args.api,
                api_key_env=args.api_key_env,
                concurrency=args.concurrency,
            )
            backend.preflight()
            label = f"openai:{args.model}"
        else:
            from asmopt.policies.hf_local import HFBackend
            from asmopt.typed_config import check_device

            try:  # before the model loads: `--device tpu9` is one line, not a late traceback
                check_device(args.device, "--device")
            except ValueError as exc:
                raise PolicyError(str(exc)) from None
            backend = HFBackend(args.model, device=args.device, dtype=args.dtype)
            label = f"hf:{backend.name}"
        if template.name != "reference":
            label += f":{template.name}"
        policy: Policy = LLMPolicy(backend=backend, name=label, template=template, params=params)
    elif name == "answers":
        from pathlib import Path

        from asmopt.policies.answers import AnswersPolicy

        if not getattr(args, "answers", None):
            raise PolicyError("--policy answers needs --answers FILE.jsonl")
        if rounds > 1:
            raise PolicyError("--policy answers cannot refine (--rounds): its answers are fixed")
        policy = AnswersPolicy(Path(args.answers), template=load_template(args.template))
    else:
        if getattr(args, "answers", None):
            raise PolicyError("--answers is for --policy answers")
        if name == "compiler-search":
            budget = getattr(args, "search_budget", None)
            if budget is not None and budget <= 0:
                raise PolicyError(f"--search-budget must be positive, got {budget}")
            options: dict[str, Any] = {"toolchain": toolchain, "sandbox": sandbox}
            if budget is not None:
                options["budget_s"] = budget
            policy = get_policy(name, **options)
        else:
            policy = get_policy(name)
    if rounds > 1:
        from asmopt.policies.refine import RefinePolicy

        policy = RefinePolicy(policy, rounds, toolchain, sandbox)
    return policy
