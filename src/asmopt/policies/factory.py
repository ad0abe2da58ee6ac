"""Build a policy from a typed spec: what `asmopt eval --policy NAME ...` names, from Python.

`PolicySpec` holds every policy option of `asmopt eval` (the command line builds one from its
flags and nothing else), is checked when it is made, and `make_policy` turns it into a
`Policy`. A spec is plain data, so an evaluation config can hold it, print it, and compare it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from asmopt.errors import InputError
from asmopt.policies import available_policies, get_policy
from asmopt.policies.base import Policy
from asmopt.policies.llm import ANSWER_TOKENS, LLMPolicy, PolicyError, SamplingParams
from asmopt.policies.prompts import load_template
from asmopt.typed_config import Renamed, renamed_keywords

if TYPE_CHECKING:
    from asmopt.policies.hf_local import HFBackend
    from asmopt.policies.openai_http import OpenAIBackend
    from asmopt.sandbox.runner import Sandbox
    from asmopt.toolchain import Toolchain

LLM_POLICIES = ("openai", "hf")


# The `asmopt eval` flag of each PolicySpec field whose name differs from `--FIELD` spelt
# with dashes (`--policy` sets `name`).
CLI_FLAGS = {"name": "--policy"}


def _lit(value: object) -> str:
    """`value` as literal text inside a SpecError template (its braces doubled)."""
    return str(value).replace("{", "{{").replace("}", "}}")


class SpecError(PolicyError, InputError):
    """A PolicySpec that cannot be used. The message names the spec's fields (`rounds must
    be at least 1`) to a Python caller; `for_cli()` names the `asmopt eval` flags that set
    them (`--rounds must be at least 1`), which the command line shows instead.

    `template` holds `{field}` placeholders (the other text is already formatted)."""

    def __init__(self, template: str) -> None:
        self.template = template
        super().__init__(self._render(lambda name: name))

    def _render(self, spell: Callable[[str], str]) -> str:
        names = {f: spell(f) for f in PolicySpec.__dataclass_fields__}
        return self.template.format(**names)

    def for_cli(self) -> str:
        """The message with each field named by the `asmopt eval` flag that sets it."""
        return self._render(lambda name: CLI_FLAGS.get(name, "--" + name.replace("_", "-")))


# (field, lowest, highest) of the numeric PolicySpec fields: the ranges the endpoints and
# samplers accept (an OpenAI-compatible server takes temperature 0..2), and a rounds count
# and concurrency a run can afford.
SPEC_RANGES = (
    ("temperature", 0.0, 2.0),
    ("top_p", 0.0, 1.0),
    ("max_tokens", 1, 1_000_000),
    ("sampling_seed", 0, 2**63 - 1),
    ("concurrency", 1, 1024),
    ("rounds", 1, 100),
)

# Fields that were renamed: `PolicySpec(seed=...)` is refused naming the new field.
RENAMED_FIELDS: Renamed = {
    "seed": (
        "sampling_seed",
        "the language model's sampling seed; a grading's secret input seed is "
        "FreshInputs.seed",
    ),
}


@renamed_keywords(RENAMED_FIELDS)
@dataclass(frozen=True)
class PolicySpec:
    """Which policy, and the options it takes; fields a policy does not use keep defaults.

    `name` is a registered policy (`identity`, `compiler-search`, ...), `openai` (an
    OpenAI-compatible endpoint: `model`, `base_url`), `hf` (a local model directory:
    `model`, `device`, `dtype`) or `answers` (answers produced elsewhere, in `answers`).
    `rounds` > 1 wraps the policy in refinement with feedback on the selection split."""

    name: str = "identity"
    model: str | None = None
    base_url: str | None = None
    api: Literal["chat", "completions"] = "chat"
    api_key_env: str = "OPENAI_API_KEY"
    template: str = "reference"
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = ANSWER_TOKENS
    sampling_seed: int = 0  # the sampler's seed (an OpenAI request's `seed`)
    concurrency: int = 8
    device: str = "cpu"
    dtype: str = "auto"
    search_budget: float | None = None  # compiler-search: wall seconds per program
    answers: Path | None = None  # answers: the JSONL file
    rounds: int = 1

    def __post_init__(self) -> None:
        """Every inconsistency is refused here, before a model loads or a request is sent,
        naming the spec's fields (`SpecError.for_cli` names the flags instead)."""
        from asmopt.typed_config import check_fields

        check_fields(self)  # types first: `rounds="3"` is named, not a TypeError below
        for name, low, high in SPEC_RANGES:
            value = getattr(self, name)
            if value is not None and not value >= low:
                raise SpecError(f"{{{name}}} must be at least {low}, got {_lit(value)}")
            if value is not None and not value <= high:
                raise SpecError(f"{{{name}}} must be at most {high}, got {_lit(value)}")
        if self.top_p == 0:
            raise SpecError("{top_p} must be above 0 (nucleus sampling keeps that mass)")
        if self.api not in ("chat", "completions"):
            raise SpecError(f"{{api}} must be chat or completions, got {_lit(repr(self.api))}")
        known = (*available_policies(), *LLM_POLICIES, "answers")
        if self.name not in known:
            get_policy(self.name)  # raises, naming the close matches and the known ones
        if self.name in LLM_POLICIES and not self.model:
            raise SpecError(f"{{name}} {self.name} needs {{model}}")
        if self.name == "openai" and not self.base_url:
            raise SpecError("{name} openai needs {base_url} (e.g. http://host:8000/v1)")
        if self.name == "answers":
            if self.answers is None:
                raise SpecError("{name} answers needs {answers} (a FILE.jsonl)")
            if self.rounds > 1:
                raise SpecError("{name} answers cannot refine ({rounds}): its answers are fixed")
        elif self.answers is not None:
            raise SpecError("{answers} is for {name} answers")
        if self.search_budget is not None and self.search_budget <= 0:
            raise SpecError(f"{{search_budget}} must be positive, got {_lit(self.search_budget)}")
        if self.name == "hf":
            from asmopt.typed_config import check_device

            try:  # before the model loads: a bad device is one line, not a late traceback
                check_device(self.device, "\0device\0")
            except ValueError as exc:
                raise SpecError(_lit(str(exc)).replace("\0device\0", "{device}")) from None

    def sampling(self) -> SamplingParams:
        return SamplingParams(
            temperature=self.temperature,
            top_p=self.top_p,
            max_new_tokens=self.max_tokens,
            sampling_seed=self.sampling_seed,
        )


def make_policy(
    spec: PolicySpec | str, toolchain: Toolchain | None, sandbox: Sandbox | None
) -> Policy:
    """The policy `spec` names (a bare name is a spec with defaults), wrapped for refinement
    when `spec.rounds` > 1. An `openai` policy checks its endpoint answers first."""
    if isinstance(spec, str):
        spec = PolicySpec(name=spec)
    if spec.name in LLM_POLICIES:
        policy = _language_model_policy(spec)
    elif spec.name == "answers":
        from asmopt.policies.answers import AnswersPolicy

        assert spec.answers is not None  # checked by the spec
        policy = AnswersPolicy(Path(spec.answers), template=load_template(spec.template))
    elif spec.name == "compiler-search":
        options: dict[str, Any] = {"toolchain": toolchain, "sandbox": sandbox}
        if spec.search_budget is not None:
            options["budget_s"] = spec.search_budget
        policy = get_policy(spec.name, **options)
    else:
        policy = get_policy(spec.name)
    if spec.rounds > 1:
        from asmopt.policies.refine import RefinePolicy

        policy = RefinePolicy(policy, spec.rounds, toolchain, sandbox)
    return policy


def _language_model_policy(spec: PolicySpec) -> Policy:
    template = load_template(spec.template)
    assert spec.model is not None  # checked by the spec
    if spec.name == "openai":
        from asmopt.policies.openai_http import OpenAIBackend

        backend: OpenAIBackend | HFBackend = OpenAIBackend(
            base_url=str(spec.base_url),
            model=spec.model,
            api=spec.api,
            api_key_env=spec.api_key_env,
            concurrency=spec.concurrency,
        )
        backend.preflight()
        label = f"openai:{spec.model}"
    else:
        from asmopt.policies.hf_local import HFBackend

        backend = HFBackend(spec.model, device=spec.device, dtype=spec.dtype)
        label = f"hf:{backend.name}"
    if template.name != "reference":
        label += f":{template.name}"
    return LLMPolicy(backend=backend, name=label, template=template, params=spec.sampling())
