"""The Gymnasium environment: conformance (check_env), episodes, feedback, replayable state."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from conftest import lazy
from fresh_interpreter import run_fresh

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
    # info carries the verdict and numbers, never a person's message (it may quote test
    # data: tests/test_feedback_hidden.py)
    assert "message" not in info
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
    assert restored.get_state() == state  # the history's verdicts written back as names
    with pytest.raises(ValueError, match="version"):
        restored.set_state({**state, "version": 99})
    bad = {**state, "history": [{**state["history"][0], "verdict": "asemble_error"}]}
    with pytest.raises(ValueError, match=r"history\[0\]: unknown verdict 'asemble_error'"):
        restored.set_state(bad)


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="max_rounds"):
        reward_env.AsmOptEnv(max_rounds=0)
    with pytest.raises(Exception, match="no program"):
        reward_env.AsmOptEnv(program_ids=["no_such_program"])


def test_score_config_as_a_mapping_with_nested_timing(program: Program) -> None:
    """gym.make's keyword arguments are plain values: `score_config` may be a mapping of
    ScoreConfig fields, `timing` nested; an old flat timing key names its new spelling."""
    env = gym.make(
        reward_env.ENV_ID,
        program_ids=[program.id],
        score_config={"measure": "none", "timing": {"budget_s": 5}},
    ).unwrapped
    assert env.score_config.measure == "none" and env.score_config.timing.budget_s == 5.0
    env.reset(seed=3)
    env.step("no assembly here")
    state = json.loads(json.dumps(env.get_state()))  # plain JSON, timing included
    assert state["score_config"]["timing"]["budget_s"] == 5.0
    with pytest.raises(ValueError, match=r"timing_max_pairs: use timing\.max_pairs"):
        reward_env.AsmOptEnv(program_ids=[program.id], score_config={"timing_max_pairs": 9})


def test_gymnasium_make_works_after_a_plain_import_asmopt(program: Program) -> None:
    """Gymnasium 1.x loads no entry points, so `import asmopt` itself must register the
    environment; and must not import Gymnasium (or the sandbox) to do it."""
    pytest.importorskip("gymnasium")
    out = run_fresh(
        "import sys, asmopt\n"
        "print('gym before:', 'gymnasium' in sys.modules, 'asmopt.reward.env' in sys.modules)\n"
        "import gymnasium\n"
        f"env = gymnasium.make('asmopt/AsmOpt-v0', program_ids=[{program.id!r}])\n"
        "obs, info = env.reset(seed=0)\n"
        "print('made:', info['program_id'], type(env.unwrapped).__name__)\n"
    ).stdout
    assert "gym before: False False" in out
    assert f"made: {program.id} AsmOptEnv" in out


def test_gymnasium_imported_first_then_asmopt_also_registers() -> None:
    pytest.importorskip("gymnasium")
    out = run_fresh(
        "import gymnasium, asmopt\n"
        "print('registered:', 'asmopt/AsmOpt-v0' in gymnasium.registry)\n"
    ).stdout
    assert "registered: True" in out


def test_probing_for_gymnasium_before_importing_it_keeps_the_registration() -> None:
    """Libraries probe optional packages with find_spec without importing them; the
    registration must survive that and happen at the real import."""
    pytest.importorskip("gymnasium")
    out = run_fresh(
        "import importlib.util, sys, asmopt\n"
        "assert importlib.util.find_spec('gymnasium') is not None\n"
        "assert 'gymnasium' not in sys.modules\n"
        "import gymnasium\n"
        "print('registered:', 'asmopt/AsmOpt-v0' in gymnasium.registry)\n"
        "print('hooks left:', sum(type(h).__name__ == '_GymnasiumHook' for h in sys.meta_path))\n"
    ).stdout
    assert "registered: True" in out and "hooks left: 0" in out


def test_garbage_is_an_extraction_error_even_with_the_sandbox_down_simulated(
    program: Program, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer with no assembly is the model's fault whatever state our side is in; a
    real answer with the sandbox down is ours (excluded). The down sandbox is simulated:
    this machine's sandbox works."""
    import asmopt.sandbox.runner
    from asmopt.reward import service

    class DownSandbox:
        def check(self) -> None:
            raise RuntimeError("bubblewrap is not available (simulated)")

    monkeypatch.setattr(service, "_WORKER", {})
    monkeypatch.setattr(asmopt.sandbox.runner, "default_sandbox", lambda: DownSandbox())
    env = reward_env.AsmOptEnv(program_ids=[program.id], measure="none")
    env._baselines[program.id] = "\t.text\n"  # so reset() needs no toolchain either
    env.reset(seed=0)
    _, reward, _, _, info = env.step("I cannot write assembly today.")
    assert info["verdict"] == "extraction_error" and not info["excluded"] and reward < 0
    env.reset(seed=0)
    _, reward, _, _, info = env.step("```assembly\n\t.text\n```")
    assert info["verdict"] == "infra_error" and info["excluded"] and reward == 0.0


def test_async_vector_env_with_shared_memory_steps_real_answers(
    toolchain: Toolchain, program: Program
) -> None:
    """`make_vec(..., vectorization_mode="async")` with its default shared memory: AnyText
    has shared-memory functions, and what each step returns is that step's text (gymnasium's
    own Text reader decodes its buffer once, at start-up, and returns that forever)."""
    asm = toolchain.baseline_assembly(program)
    envs = gym.make_vec(
        reward_env.ENV_ID, num_envs=2, vectorization_mode="async", program_ids=[program.id]
    )
    try:
        assert envs.shared_memory
        obs, _ = envs.reset(seed=0)
        assert obs["program_id"] == (program.id, program.id) and obs["feedback"] == ("", "")
        assert all("```c" in prompt for prompt in obs["prompt"])
        assert envs.observation_space.contains(obs)
        obs, rewards, terminated, _, info = envs.step((f"```assembly\n{asm}```", "\udcff"))
        assert list(info["verdict"]) == ["pass", "extraction_error"]
        assert rewards[0] == 0.0 and rewards[1] < 0 and terminated.all()
        assert list(obs["round"]) == [1, 1] and "extraction_error" in obs["feedback"][1]
        assert "baseline itself" in obs["feedback"][0]
        assert isinstance(obs["feedback"], tuple) and envs.observation_space.contains(obs)
    finally:
        envs.close()


def test_sync_vector_env_and_batched_spaces(program: Program) -> None:
    envs = gym.make_vec(
        reward_env.ENV_ID, num_envs=2, vectorization_mode="sync", program_ids=[program.id]
    )
    try:
        obs, _ = envs.reset(seed=0)
        assert envs.observation_space.contains(obs)
        obs, rewards, _, _, info = envs.step(("no assembly here", "\udcff"))
        assert list(info["verdict"]) == ["extraction_error"] * 2 and (rewards < 0).all()
        assert envs.observation_space.contains(obs)
    finally:
        envs.close()
    batched = gym.vector.utils.batch_space(reward_env.AnyText(16), n=3)
    assert batched == gym.spaces.Tuple([reward_env.AnyText(16)] * 3)
    assert batched.contains(("a", "b" * 16, "")) and not batched.contains(("a", "b" * 17, ""))


def test_any_text_shared_memory_round_trips_any_string() -> None:
    """Four-byte characters at the full length, non-ASCII and lone surrogates come back as
    written; a write changes what an earlier read returns; copies are plain tuples."""
    import copy
    import multiprocessing

    from gymnasium.vector import utils

    space = reward_env.AnyText(16)
    memory = utils.create_shared_memory(space, n=3, ctx=multiprocessing)
    texts = utils.read_from_shared_memory(space, memory, n=3)
    assert tuple(texts) == ("", "", "")
    written = ["\U0001d11e" * 16, "h\u00e9llo \udcff", ""]
    for index, text in enumerate(written):
        utils.write_to_shared_memory(space, index, text, memory)
    assert list(texts) == written and texts[-1] == "" and texts[:2] == tuple(written[:2])
    snapshot = copy.deepcopy(texts)
    utils.write_to_shared_memory(space, 2, "later", memory)
    assert snapshot == tuple(written) and type(snapshot) is tuple and texts[2] == "later"
    with pytest.raises(ValueError, match="17 characters"):
        utils.write_to_shared_memory(space, 0, "x" * 17, memory)
    with pytest.raises(IndexError):
        texts[3]


def test_lone_surrogates_are_extraction_errors_not_exceptions(program: Program) -> None:
    """A str may hold a lone surrogate (JSON "\\udcff" decodes to one) that no UTF-8 file
    can: the answer is the model's extraction_error, bare or inside an assembly fence (which
    would otherwise reach the build and come back as our infra_error), and the episode's
    history still stores and digests it."""
    from asmopt.reward.service import ScoreConfig

    bare = "\t.text\n\t.globl main\nmain:\n\tret # \udcff\n"
    fenced = "```assembly\n\t.text\n# \udcff\n```"
    env = reward_env.AsmOptEnv(program_ids=[program.id], measure="none", max_rounds=3)
    env.reset(seed=0)
    for action in ("\udcff", fenced, bare):
        _, reward, _, _, info = env.step(action)
        assert info["verdict"] == "extraction_error", action
        assert not info["excluded"] and reward < 0
    state = json.loads(json.dumps(env.get_state()))
    assert [h["action"] for h in state["history"]] == ["\udcff", fenced, bare]
    assert len({h["action_sha256"] for h in state["history"]}) == 3
    diffs = reward_env.AsmOptEnv(
        program_ids=[program.id],
        template="diff",
        score_config=ScoreConfig(measure="none", edit_format="diff"),
    )
    diffs.reset(seed=0)
    _, reward, _, _, info = diffs.step("```diff\n@@ -1 +1 @@\n-\t.text\n+\udcff\n```")
    assert info["verdict"] == "extraction_error" and reward < 0
