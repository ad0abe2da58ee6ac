"""Gymnasium environment `asmopt/AsmOpt-v0`: one program per episode, assembly as action.

Observation: the prompt text (the chosen template rendered with the program's C code, its
-O3 assembly and, after the first round, feedback on the previous attempt) plus structured
program information. Action: the model's answer text (an `assembly` fence is extracted; a
bare assembly file is accepted too). Reward: the configured reward function on the judged
candidate.

Feedback, observations and `info` follow the rule of policies/feedback.py: they name the
verdict, the failing test, the kind of difference and the speedup, never a byte of a test's
input, its expected output or what the candidate printed (a policy that reads them learns
the tests, not the program), nor a value the candidate chose (an exit code, a signal, which
timed run failed, its run times). `info` carries the verdict, the test counts and the
speedup at two significant digits; the full message for a person is what `asmopt check`
prints.

A program unfit for reward (adequacy.is_reward_fit: no input generator, a tabulable class,
tests that accept trivial programs) is refused when the environment is made or when
`reset(options={"program_id": ...})` picks it, with an `UnfitProgramError` naming it, unless
`allow_unfit=True` (or `score_config={"allow_unfit": True}`); then `info["unfit"]` says why
at every step.

An episode is `max_rounds` attempts: `terminated` becomes true after the last one (the
episode's defined length), `truncated` is never used. An infrastructure failure sets
`info["excluded"]` and gives reward 0.0, since Gymnasium rewards must be numbers; learners
should drop such steps.

The episode state (`get_state()`) is plain JSON: program, seed, round and every action
with its verdict, reward and the feedback it earned, so an episode can be stored,
inspected and replayed (`replay(state)`). Version 1 states are refused: their feedback may
quote test data.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import string
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from types import ModuleType
from typing import Any, overload

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

from asmopt.adequacy import require_fit
from asmopt.errors import InputError
from asmopt.gym_registration import ENV_ID, register
from asmopt.judge import Verdict
from asmopt.policies.feedback import coarse_speedup
from asmopt.policies.prompts import answer_form_mismatch, load_template
from asmopt.programs import load_builtin_suite, load_suite
from asmopt.programs.model import ProgramError
from asmopt.reward.adapters import policy_feedback
from asmopt.reward.service import ScoreConfig, fitness, score_one

STATE_VERSION = 2
MAX_TEXT = 4 << 20


class AnyText(spaces.Space[str]):
    """Any Python string up to `max_length` characters (prompts and assembly are free text).

    gymnasium's Text space limits the alphabet, which C sources and assembly do not fit."""

    def __init__(self, max_length: int = MAX_TEXT, seed: int | None = None) -> None:
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        n = int(self.np_random.integers(0, 64))
        alphabet = string.printable
        return "".join(alphabet[int(i)] for i in self.np_random.integers(0, len(alphabet), n))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyText) and other.max_length == self.max_length


# --- AnyText in the shared memory of gymnasium's AsyncVectorEnv ----------------------------
#
# AsyncVectorEnv (shared_memory=True, its default) has each worker write its observation
# into one buffer per space and reads the buffers once, at start-up: what it returns after
# each reset and step is that one object, so a space's reader must return a live view of the
# buffer (Box's is a numpy view). Gymnasium's own Text reader decodes the buffer into a tuple
# of strings at start-up, which never changes afterwards; AnyText returns `SharedTexts`,
# decoded when read, and a plain tuple of strings when copied (AsyncVectorEnv copies what
# it returns unless `copy=False`).
#
# One slot per environment: an 8-byte little-endian length, then the text in UTF-8 (lone
# surrogates kept, "surrogatepass", so any Python string round-trips). A character takes at
# most 4 bytes, so a slot holds 4 * max_length bytes: 16 MiB for the 4 Mi-character prompt
# and feedback fields, about 32 MiB per environment in all.

_LENGTH = 8


def _slot(space: AnyText) -> int:
    return _LENGTH + 4 * space.max_length


def _buffer(shared_memory: Any) -> np.ndarray:
    return np.frombuffer(shared_memory.get_obj(), dtype=np.uint8)


class SharedTexts(Sequence[str]):
    """The current texts of the environments, one per slot of an AnyText shared buffer."""

    def __init__(self, space: AnyText, shared_memory: Any, n: int) -> None:
        self._slot = _slot(space)
        self._buffer = _buffer(shared_memory)
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._n)))
        if not -self._n <= index < self._n:
            raise IndexError(f"environment {index} of {self._n}")
        start = (index % self._n) * self._slot
        length = int.from_bytes(self._buffer[start : start + _LENGTH].tobytes(), "little")
        data = self._buffer[start + _LENGTH : start + _LENGTH + length].tobytes()
        return data.decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(self._n))

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]  # the texts change

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@create_shared_memory.register(AnyText)
def _create_any_text_shared_memory(
    space: AnyText, n: int = 1, ctx: ModuleType = multiprocessing
) -> Any:
    return ctx.Array("B", n * _slot(space))  # type: ignore[attr-defined]


@read_from_shared_memory.register(AnyText)
def _read_any_text_from_shared_memory(
    space: AnyText, shared_memory: Any, n: int = 1
) -> SharedTexts:
    return SharedTexts(space, shared_memory, n)


@write_to_shared_memory.register(AnyText)
def _write_any_text_to_shared_memory(
    space: AnyText, index: int, value: str, shared_memory: Any
) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{space} holds text, not {type(value).__name__}")
    if len(value) > space.max_length:
        raise InputError(f"{len(value)} characters do not fit {space}")
    data = value.encode("utf-8", "surrogatepass")
    start = index * _slot(space)
    buffer = _buffer(shared_memory)
    buffer[start : start + _LENGTH] = np.frombuffer(len(data).to_bytes(_LENGTH, "little"), np.uint8)
    buffer[start + _LENGTH : start + _LENGTH + len(data)] = np.frombuffer(data, np.uint8)


def _score_config(
    given: ScoreConfig | Mapping[str, Any] | None, reward: str, measure: str, template: Any
) -> ScoreConfig:
    """The env's ScoreConfig: the one given, one built from a mapping of its fields
    (`gym.make(ENV_ID, score_config={"measure": "time", "timing": {"budget_s": 5}})`), or
    `reward` and `measure` with the defaults and the answer form `template` asks for. A
    given config that reads another form than the template asks for is refused (every
    answer would be an extraction error), naming the key that fixes it."""
    if isinstance(given, Mapping):
        given = ScoreConfig.from_options(given)
    if given is None:
        options = {"reward": reward, "measure": measure, "edit_format": template.edit_format}
        return ScoreConfig.from_options(options)
    if isinstance(given, ScoreConfig):
        why = answer_form_mismatch(template, given.edit_format, "score_config edit_format")
        if why is not None:
            raise InputError(why)
        return given
    raise TypeError(
        f"score_config must be a ScoreConfig or a mapping of its fields, got {type(given).__name__}"
    )


class AsmOptEnv(gym.Env[dict[str, Any], str]):
    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012

    def __init__(
        self,
        suite: str | None = None,
        split: str = "train",
        program_ids: list[str] | None = None,
        reward: str = "robust",
        measure: str = "none",
        max_rounds: int = 1,
        template: str = "reference",
        score_config: ScoreConfig | Mapping[str, Any] | None = None,
        render_mode: str | None = None,
        allow_unfit: bool = False,
    ) -> None:
        """Wide because `gymnasium.make` passes the environment's options as keywords, one
        parameter each (`reward` and `measure` are shorthands for a `score_config`)."""
        if max_rounds < 1:
            raise InputError(f"max_rounds must be at least 1, got {max_rounds}")
        if render_mode not in (None, "ansi"):
            raise InputError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.suite = load_suite(suite) if suite else load_builtin_suite()
        self.programs = self.suite.select(split=split, ids=program_ids)
        if not self.programs:
            raise ProgramError(f"no programs in split {split!r} of suite {self.suite.name!r}")
        self.suite_path = suite
        self.split = split
        self.max_rounds = max_rounds
        self.template = load_template(template)
        self.score_config = _score_config(score_config, reward, measure, self.template)
        if allow_unfit and not self.score_config.allow_unfit:
            self.score_config = replace(self.score_config, allow_unfit=True)
        # A program unfit for reward (no input generator, a tabulable class, inadequate
        # tests) is refused here, by name, not paid at the first step.
        require_fit(self.programs, "the Gymnasium environment", self.score_config.allow_unfit)
        for program in self.programs:
            fitness(program, self.score_config, "the Gymnasium environment")
        self.render_mode = render_mode
        self.action_space = AnyText()
        self.observation_space = spaces.Dict(
            {
                "prompt": AnyText(),
                "program_id": AnyText(256),
                "category": AnyText(256),
                "num_tests": spaces.Discrete(10_000),
                "round": spaces.Discrete(max_rounds + 1),
                "feedback": AnyText(),
            }
        )
        self._baselines: dict[str, str] = {}
        self._program = self.programs[0]
        self._round = 0
        self._feedback = ""
        self._history: list[dict[str, Any]] = []
        self._seed: int | None = None

    # ------------------------------------------------------------------ helpers
    def _baseline(self) -> str:
        pid = self._program.id
        if pid not in self._baselines:
            from asmopt.toolchain import default_toolchain

            given = self._program.meta.get("baseline_asm")
            self._baselines[pid] = given or default_toolchain().baseline_assembly(self._program)
        return self._baselines[pid]

    def _obs(self) -> dict[str, Any]:
        prompt = self.template.render(
            self._program.source, self._baseline(), self._feedback or None
        )
        return {
            "prompt": prompt,
            "program_id": self._program.id,
            "category": str(self._program.meta.get("category", "")),
            "num_tests": len(self._program.tests),
            "round": self._round,
            "feedback": self._feedback,
        }

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self._seed = seed
        options = options or {}
        if "program_id" in options:
            program = self.suite.get(options["program_id"])
            fitness(program, self.score_config, "the Gymnasium environment")
            self._program = program
        else:
            self._program = self.programs[int(self.np_random.integers(len(self.programs)))]
        self._round = 0
        self._feedback = ""
        self._history = []
        return self._obs(), {"program_id": self._program.id, "split": self.split}

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self._round >= self.max_rounds:
            raise RuntimeError("the episode is over; call reset() first")
        if not isinstance(action, str | bytes):
            raise TypeError(f"action must be text, got {type(action).__name__}")
        result = score_one(self._program, action, self._baseline(), self.score_config)
        self._round += 1
        # The service's feedback names no test data; a result without one (extraction
        # error, excluded) gets it rebuilt from the message's fixed phrases.
        self._feedback = policy_feedback(result, self._program)
        excluded = result.reward is None
        reward = 0.0 if excluded else float(result.reward)  # type: ignore[arg-type]
        text = action if isinstance(action, str) else action.decode("utf-8", "replace")
        self._history.append(
            {
                "action": text,
                # surrogatepass: a lone surrogate is the model's (an extraction_error), not
                # a reason for the history to fail; the digest stays that of the UTF-8 text.
                "action_sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
                "verdict": result.verdict,
                "reward": None if excluded else reward,
                "feedback": self._feedback,
            }
        )
        terminated = self._round >= self.max_rounds
        info = {
            "verdict": result.verdict,
            "passed": result.passed,
            "total": result.total,
            # At the precision feedback gives it (coarse_speedup): a policy reads info too,
            # and a finer number is a channel a candidate fills through its run time.
            "speedup": coarse_speedup(result.speedup),
            "is_copy": result.is_copy,
            "excluded": excluded,
            "unfit": result.unfit,
            "speedup_interval": (
                coarse_speedup(result.speedup_low),
                coarse_speedup(result.speedup_high),
            ),
        }
        return self._obs(), reward, terminated, False, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        last = self._history[-1] if self._history else None
        head = f"{self._program.id} round {self._round}/{self.max_rounds}"
        return head if last is None else f"{head}: {last['verdict']} reward={last['reward']}"

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict[str, Any]:
        """Everything needed to inspect or replay the episode, as plain JSON."""
        return {
            "version": STATE_VERSION,
            "env": ENV_ID,
            "suite": self.suite.name,
            "suite_path": self.suite_path,
            "program_id": self._program.id,
            "seed": self._seed,
            "round": self._round,
            "max_rounds": self.max_rounds,
            "template": self.template.name,
            "score_config": self.score_config.to_dict(),
            "history": [{**h, "verdict": str(h["verdict"])} for h in self._history],
        }

    def set_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """Restore an episode without re-running anything; returns the observation."""
        if state.get("version") != STATE_VERSION:
            raise InputError(
                f"episode state version {state.get('version')!r} is not "
                f"supported (expected {STATE_VERSION})"
            )
        self._program = self.suite.get(state["program_id"])
        self._seed = state.get("seed")
        self._history = [
            {**h, "verdict": Verdict.parse(h.get("verdict"), f"episode state: history[{i}]")}
            for i, h in enumerate(state["history"])
        ]
        self._round = len(self._history)
        self._feedback = self._history[-1]["feedback"] if self._history else ""
        return self._obs()

    def replay(
        self, state: dict[str, Any]
    ) -> list[tuple[dict[str, Any], float, bool, bool, dict[str, Any]]]:
        """Re-run a stored episode's actions from the start and return every transition."""
        self.reset(seed=state.get("seed"), options={"program_id": state["program_id"]})
        return [self.step(h["action"]) for h in state["history"]]


def register_envs() -> None:
    """Register with Gymnasium. `import asmopt` already does (asmopt.gym_registration);
    kept for code written against earlier releases."""
    register(gym)


register_envs()
