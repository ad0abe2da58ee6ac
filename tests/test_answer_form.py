"""One name for an answer's form everywhere: `assembly` (a whole assembly file) or `diff`
(a unified diff against -O3). Templates, `ScoreConfig.edit_format`, the trainers' check and
the Gymnasium environment all use it, so a disagreement is refused once, with a fix that
works when applied as written; the old template name `full` is refused naming `assembly`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from asmopt.errors import InputError
from asmopt.policies.prompts import (
    BUILTIN_TEMPLATES,
    EDIT_FORMATS,
    answer_form_mismatch,
    check_edit_format,
    load_template,
)
from asmopt.reward.service import ScoreConfig


def test_templates_and_the_reward_name_the_forms_alike() -> None:
    forms = {name: load_template(name).edit_format for name in BUILTIN_TEMPLATES}
    assert forms == {"reference": "assembly", "c_only": "assembly", "few_shot": "assembly",
                     "diff": "diff"}  # fmt: skip
    assert set(forms.values()) == set(EDIT_FORMATS)
    for form in EDIT_FORMATS:
        assert ScoreConfig(measure="none", edit_format=form).edit_format == form  # type: ignore[arg-type]
    # The reward's default reads what the default (reference) template asks for.
    assert ScoreConfig().edit_format == load_template("reference").edit_format


@pytest.mark.parametrize("make", [
    lambda: ScoreConfig(measure="none", edit_format="full"),  # type: ignore[arg-type]
    lambda: ScoreConfig.from_options({"measure": "none", "edit_format": "full"}),
])  # fmt: skip
def test_the_old_name_full_is_refused_naming_assembly(make: object) -> None:
    with pytest.raises(InputError, match=r"'full' is now called 'assembly'.*edit_format: assembly"):
        make()  # type: ignore[operator]
    with pytest.raises(InputError, match="edit_format must be assembly or diff, got 'patch'"):
        check_edit_format("patch")


def test_a_mismatch_names_the_value_that_fixes_it() -> None:
    why = answer_form_mismatch(load_template("diff"), "assembly", "reward_options.edit_format")
    assert why is not None and "set reward_options.edit_format: diff" in why
    assert answer_form_mismatch(load_template("diff"), "diff", "x") is None


def _ppo(**fields: object) -> object:
    from asmopt.train.config import PPOConfig

    base: dict[str, object] = {"train_data": "suite:train", "reward": "execution"}
    return PPOConfig(**{**base, **fields})  # type: ignore[arg-type]


def _apply_fix(message: str, options: dict[str, object]) -> dict[str, object]:
    """The setting the message says to make, made."""
    key, value = re.search(r"(?:set|use) reward_options\.(\w+): (\w+)", message).groups()  # type: ignore[union-attr]
    return {**options, key: value}


@pytest.mark.ml
@pytest.mark.parametrize("template, options", [
    ("diff", {}),                              # a diff template, the reward's default form
    ("reference", {"edit_format": "diff"}),    # the reverse
    ("reference", {"edit_format": "full"}),    # what an earlier error message told users
])  # fmt: skip
def test_the_trainer_refuses_a_mismatch_once_and_its_fix_works(
    template: str, options: dict[str, object]
) -> None:
    from asmopt.train.ppo import check_edit_format as check_training

    with pytest.raises(InputError) as info:
        check_training(_ppo(prompt_template=template, reward_options=options))
    fixed = _apply_fix(str(info.value), options)
    check_training(_ppo(prompt_template=template, reward_options=fixed))  # accepted as told
    ScoreConfig.from_options({k: v for k, v in fixed.items()})  # and the reward takes it


@pytest.mark.ml
def test_the_reference_config_agrees_with_itself() -> None:
    import asmopt.train
    from asmopt.train.config import PPOConfig, load_config
    from asmopt.train.ppo import check_edit_format as check_training

    configs = Path(asmopt.train.__file__).parent / "configs"
    cfg = load_config(PPOConfig, configs / "ppo_reference.yaml")
    check_training(cfg)  # the reference prompt and the reward read whole assembly files
    assert cfg.reward == "execution" and cfg.reward_options["reward"] == "supercoder-design2"


def test_the_environment_takes_the_templates_form_or_refuses_another() -> None:
    pytest.importorskip("gymnasium")
    from asmopt.reward.env import AsmOptEnv

    env = AsmOptEnv(template="diff", measure="none")
    assert env.score_config.edit_format == "diff"
    with pytest.raises(InputError, match="set score_config edit_format: diff"):
        AsmOptEnv(template="diff", score_config=ScoreConfig(measure="none"))
    with pytest.raises(InputError, match="set score_config edit_format: assembly"):
        AsmOptEnv(score_config={"measure": "none", "edit_format": "diff"})
