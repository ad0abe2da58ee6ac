"""The Gymnasium environment: conformance (check_env), episodes, feedback, replayable state."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import asmopt.reward.env  # noqa: F401  (registers asmopt/AsmOpt-v0)
from asmopt.programs import load_builtin_suite
from asmopt.reward.env import ENV_ID, AsmOptEnv
from asmopt.toolchain import Toolchain

PROGRAM = load_builtin_suite().select(split="train")[0]


def test_check_env_conformance() -> None:
    env = gym.make(ENV_ID, program_ids=[PROGRAM.id]).unwrapped
    check_env(env, skip_render_check=True)


def test_single_round_episode(toolchain: Toolchain) -> None:
    env = AsmOptEnv(program_ids=[PROGRAM.id], reward="supercoder-design1")
    obs, info = env.reset(seed=1)
    assert obs["program_id"] == PROGRAM.id and "```c" in obs["prompt"] and obs["round"] == 0
    asm = toolchain.baseline_assembly(PROGRAM)
    obs, reward, terminated, truncated, info = env.step(f"```assembly\n{asm}```")
    assert reward == 1.0 and terminated and not truncated and info["verdict"] == "pass"
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step("x")


def test_multi_round_refinement_carries_feedback_and_replays(toolchain: Toolchain) -> None:
    env = AsmOptEnv(program_ids=[PROGRAM.id], reward="robust", max_rounds=2)
    env.reset(seed=7)
    obs, reward, terminated, _, info = env.step("```assembly\n\tmovq %rax\n```")
    assert reward == -1.0 and not terminated and info["verdict"] == "assemble_error"
    assert obs["round"] == 1 and "assemble_error" in obs["feedback"]
    assert "Feedback on your previous attempt" in obs["prompt"]
    asm = toolchain.baseline_assembly(PROGRAM)
    obs, reward, terminated, _, info = env.step(f"```asm\n{asm}```")
    assert terminated and reward == 0.0 and info["is_copy"]
    assert "baseline itself" in obs["feedback"]
    state = json.loads(json.dumps(env.get_state()))  # plain JSON
    assert [h["verdict"] for h in state["history"]] == ["assemble_error", "pass"]
    fresh = AsmOptEnv(program_ids=[PROGRAM.id], reward="robust", max_rounds=2)
    transitions = fresh.replay(state)
    assert [t[1] for t in transitions] == [-1.0, 0.0]
    restored = AsmOptEnv(program_ids=[PROGRAM.id], reward="robust", max_rounds=2)
    obs2 = restored.set_state(state)
    assert obs2 == obs
    with pytest.raises(ValueError, match="version"):
        restored.set_state({**state, "version": 99})


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="max_rounds"):
        AsmOptEnv(max_rounds=0)
    with pytest.raises(Exception, match="no program"):
        AsmOptEnv(program_ids=["no_such_program"])
