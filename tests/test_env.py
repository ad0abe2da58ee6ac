"""The Gymnasium environment: conformance (check_env), episodes, feedback, replayable state."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from conftest import lazy

from asmopt.programs import Program, load_builtin_suite
from asmopt.toolchain import Toolchain

if TYPE_CHECKING:
    import gymnasium as gym
    from gymnasium.utils import env_checker

    from asmopt.reward import env as reward_env
else:
    # Imported by the first test that uses them; skipped without gymnasium (the `rl` extra).
    gym = lazy("gymnasium")
    env_checker = lazy("gymnasium.utils.env_checker")
    reward_env = lazy("asmopt.reward.env")  # registers asmopt/AsmOpt-v0


@pytest.fixture(scope="module")
def program() -> Program:
    return load_builtin_suite().select(split="train")[0]


def test_check_env_conformance(program: Program) -> None:
    env = gym.make(reward_env.ENV_ID, program_ids=[program.id]).unwrapped
    env_checker.check_env(env, skip_render_check=True)


def test_single_round_episode(toolchain: Toolchain, program: Program) -> None:
    env = reward_env.AsmOptEnv(program_ids=[program.id], reward="supercoder-design1")
    obs, info = env.reset(seed=1)
    assert obs["program_id"] == program.id and "```c" in obs["prompt"] and obs["round"] == 0
    asm = toolchain.baseline_assembly(program)
    obs, reward, terminated, truncated, info = env.step(f"```assembly\n{asm}```")
    assert reward == 1.0 and terminated and not truncated and info["verdict"] == "pass"
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step("x")


def test_multi_round_refinement_carries_feedback_and_replays(
    toolchain: Toolchain, program: Program
) -> None:
    env = reward_env.AsmOptEnv(program_ids=[program.id], reward="robust", max_rounds=2)
    env.reset(seed=7)
    obs, reward, terminated, _, info = env.step("```assembly\n\tmovq %rax\n```")
    assert reward == -1.0 and not terminated and info["verdict"] == "assemble_error"
    assert obs["round"] == 1 and "assemble_error" in obs["feedback"]
    assert "Feedback on your previous attempt" in obs["prompt"]
    asm = toolchain.baseline_assembly(program)
    obs, reward, terminated, _, info = env.step(f"```asm\n{asm}```")
    assert terminated and reward == 0.0 and info["is_copy"]
    assert "baseline itself" in obs["feedback"]
    state = json.loads(json.dumps(env.get_state()))  # plain JSON
    assert [h["verdict"] for h in state["history"]] == ["assemble_error", "pass"]
    fresh = reward_env.AsmOptEnv(program_ids=[program.id], reward="robust", max_rounds=2)
    transitions = fresh.replay(state)
    assert [t[1] for t in transitions] == [-1.0, 0.0]
    restored = reward_env.AsmOptEnv(program_ids=[program.id], reward="robust", max_rounds=2)
    obs2 = restored.set_state(state)
    assert obs2 == obs
    with pytest.raises(ValueError, match="version"):
        restored.set_state({**state, "version": 99})


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="max_rounds"):
        reward_env.AsmOptEnv(max_rounds=0)
    with pytest.raises(Exception, match="no program"):
        reward_env.AsmOptEnv(program_ids=["no_such_program"])
