"""The Python API checks its configs and arguments as the command line does: a wrong type or
an out-of-range value of any field of EvalConfig, PolicySpec or ScoreConfig, or a wrong
argument of `score`/`check`, is an InputError naming the field when the object is made or
the call is entered (never a bare TypeError later, nor a grading that ends as infra_error)."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from asmopt.adequacy.check import check_adequacy, check_programs
from asmopt.data import BuildConfig, import_codenet, import_plain_dir, split_for
from asmopt.errors import InputError
from asmopt.evaluate import check
from asmopt.policies.factory import PolicySpec
from asmopt.programs import load_builtin_suite
from asmopt.reward.service import ScoreConfig, score
from asmopt.run import EvalConfig

pytestmark = pytest.mark.fast

CONFIGS = (EvalConfig, PolicySpec, ScoreConfig)


def _typed_fields(cls: type) -> list[str]:
    hints = typing.get_type_hints(cls)
    return [f.name for f in dataclasses.fields(cls) if hints[f.name] not in (typing.Any, object)]


@pytest.mark.parametrize(
    ("cls", "name"), [(c, n) for c in CONFIGS for n in _typed_fields(c)], ids=str
)
def test_every_field_of_a_wrong_type_is_named(cls: type, name: str) -> None:
    # A complex number is of no declared type of any field: each must be refused by name.
    with pytest.raises(InputError, match=rf"\b{name}\b"):
        cls(**{name: 1j})


@pytest.mark.parametrize(
    ("cls", "field", "value"),
    [
        (PolicySpec, "rounds", "3"),
        (PolicySpec, "temperature", -1.0),
        (PolicySpec, "temperature", float("nan")),
        (PolicySpec, "top_p", 2.0),
        (PolicySpec, "top_p", 0.0),
        (PolicySpec, "max_tokens", 0),
        (PolicySpec, "concurrency", 0),
        (PolicySpec, "max_tokens", True),
        (ScoreConfig, "max_completion_bytes", -1),
        (ScoreConfig, "max_completion_bytes", 0),
        (ScoreConfig, "fresh_inputs", {"per_class": "2"}),
        (ScoreConfig, "fresh_inputs", {"per_clas": 2}),
        (ScoreConfig, "fresh_inputs", 4),
        (ScoreConfig, "timing", 5),
        (ScoreConfig, "limits", "fast"),
        (ScoreConfig, "fresh_inputs", {"seed": 1.5}),
        (EvalConfig, "run_dir", 5),
        (EvalConfig, "split", 3),
        (EvalConfig, "only", [1]),
        (EvalConfig, "samples", 0),
        (EvalConfig, "jobs", True),
        (EvalConfig, "fresh", "yes"),
    ],
    ids=str,
)
def test_a_wrong_value_is_an_input_error_naming_its_field(
    cls: type, field: str, value: object
) -> None:
    with pytest.raises(InputError, match=field):
        cls(**{field: value})


def test_the_documented_forms_are_accepted() -> None:
    assert EvalConfig(only="bfs_grid", suite="somewhere", run_dir="r").only == ["bfs_grid"]
    config = ScoreConfig(
        timing={"budget_s": 20}, limits={"wall_seconds": 5}, fresh_inputs={"seed": 3}
    )
    assert config.timing.budget_s == 20 and config.limits.wall_seconds == 5
    assert config.fresh_inputs.seed == 3 and config.fresh_inputs.per_class == 2
    # The old flat spellings are refused naming the nested one.
    for key, new in (("drawn_per_class", "fresh_inputs.per_class"), ("seed", "fresh_inputs.seed")):
        with pytest.raises(InputError, match=new):
            ScoreConfig.from_options({key: 3})
    # A score config makes many gradings: each draws with its own secret seed unless one
    # is set, and the round trip through a mapping keeps the settings.
    free = ScoreConfig()
    assert free.fresh_inputs.seed is None
    assert free.fresh_inputs.for_grading().seed != free.fresh_inputs.for_grading().seed
    again = ScoreConfig.from_options({"fresh_inputs": config.to_dict()["fresh_inputs"]})
    assert again.fresh_inputs == config.fresh_inputs
    assert PolicySpec(temperature=0.7, top_p=0.95, max_tokens=512).top_p == 0.95


@pytest.mark.parametrize(
    ("call", "new"),
    [
        (lambda: PolicySpec(seed=3), "sampling_seed"),
        (lambda: split_for("p", 0.1, 0.0, seed="s"), "split_seed"),
        (lambda: BuildConfig(seed="s"), "split_seed"),
        (lambda: import_plain_dir("nowhere", seed="s"), "split_seed"),
        (lambda: import_codenet("nowhere", seed="s"), "split_seed"),
        (lambda: check_adequacy(None, None, seed=3), "input_seed"),
        (lambda: check_programs([], None, None, seed=3), "input_seed"),
    ],
    ids=("PolicySpec", "split_for", "BuildConfig", "import_plain_dir", "import_codenet",
         "check_adequacy", "check_programs"),
)  # fmt: skip
def test_a_renamed_seed_keyword_is_refused_naming_the_new_one(call, new: str) -> None:
    """`seed` meant five things; each keyword now says which seed it is, and the old
    spelling is refused naming the new one before any work (never read as another seed)."""
    with pytest.raises(InputError, match=rf"\(\): the keyword argument 'seed' is now {new} \("):
        call()


def test_the_sampling_seed_reaches_the_sampler() -> None:
    assert PolicySpec(sampling_seed=7).sampling().sampling_seed == 7


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda p: score(p, 5), "completion"),
        (lambda p: score("bfs_grid", "x"), "program"),
        (lambda p: score(p, "x", baseline_asm=7), "baseline_asm"),
        (lambda p: check(p, 5), "assembly"),
        (lambda p: check(p, "x", fresh="seed"), "fresh"),
    ],
    ids=("score_completion", "score_program", "score_baseline", "check_assembly", "check_fresh"),
)
def test_entry_points_refuse_wrong_arguments_before_grading(call, named: str) -> None:
    program = load_builtin_suite().programs["bfs_grid"]
    with pytest.raises(InputError, match=rf"\(\): {named} must be"):
        call(program)
