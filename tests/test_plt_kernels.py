"""Kernel choice of `PLTLinear` for few-row CPU products: timed in use, cached per machine,
forceable.

Timings themselves are not asserted (they belong to bench/); what is checked is that the
first calls of a shape take every candidate kernel in turn (the matrix-vector product only for
one row) and compute the same product, that a choice follows from the candidates' timings by
the documented rule (near ties get more rounds), that it is stored and read back under this
machine's key, that a malformed cache entry is timed again, and that forcing overrides
timing. The sanity checks a timing passes before it is stored (the per-row bound, repeated
timings, contention) are tested as pure functions on made-up timings, and the retime, store
or refuse path through an injected timing function.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import lazy
from kernel_choices import write_choice

if TYPE_CHECKING:
    import torch

    from asmopt.models.plt import kernels, modeling_plt
else:
    torch = lazy("torch")
    kernels = lazy("asmopt.models.plt.kernels")
    modeling_plt = lazy("asmopt.models.plt.modeling_plt")

pytestmark = pytest.mark.ml


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private cache directory and no choices in memory; auto mode. The machine's load
    average reads as calm: the test machine is shared, and a choice timed under load is not
    cached (the contention rule has tests of its own below); timings stay real."""
    monkeypatch.setenv("ASMOPT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(kernels.ENV_VAR, raising=False)
    # The multi-row float32 kernel has tests of its own (test_plt_native.py).
    monkeypatch.setenv("ASMOPT_PLT_NATIVE", "off")
    kernels.forget_choices()
    kernels.set_linear_kernel(None)
    with kernels.timing_hooks(load=lambda: 0.0):
        yield tmp_path
    kernels.forget_choices()
    kernels.set_linear_kernel(None)


def _calls_until_decided(layer: torch.nn.Module, x: torch.Tensor, limit: int = 400) -> int:
    """Calls the layer until its shape has a choice; checks every call's product on the way."""
    expected = torch.nn.functional.linear(x, layer.weight, layer.bias)
    for calls in range(1, limit + 1):
        with torch.no_grad():
            assert torch.allclose(layer(x), expected, atol=1e-5)
        if not kernels.calibrating():
            return calls
    raise AssertionError(f"no choice after {limit} calls")


@pytest.mark.parametrize("rows", [1, 3])
def test_first_products_time_every_candidate_in_use_and_cache_the_choice(
    fresh: Path, rows: int
) -> None:
    layer = modeling_plt.PLTLinear(64, 96, bias=rows == 1)
    x = torch.randn(rows, 64)
    # Every timed call lasts 20 us by the clock: the calls, the decision, the cache and its
    # reading are what is tested, on a busy machine as on a calm one (real timings of these
    # kernels are in bench/results/few_row_products.md).
    with kernels.timing_hooks(clock=ScriptedClock(lambda call: 20.0)):
        calls = _calls_until_decided(layer, x)
    expected = ("linear", "few_row", "mv") if rows == 1 else ("linear", "few_row")
    assert kernels.candidates(rows, torch.float32) == expected
    # One untimed call per kernel, then SAMPLES timed calls per kernel and round (1-3 rounds
    # per attempt; a timing that fails the sanity checks is retimed, at most MAX_RETIMES).
    n = len(expected)
    attempts = kernels.MAX_RETIMES + 1
    assert calls in {n + n * kernels.SAMPLES * rounds for rounds in range(1, 3 * attempts + 1)}
    (choice,) = kernels.kernel_report()
    assert (choice.dtype, choice.rows, choice.in_features, choice.out_features) == (
        "float32",
        rows,
        64,
        96,
    )
    assert choice.source == "measured" and set(choice.timings_us) == set(expected)
    assert all(us > 0 for us in choice.timings_us.values())
    best = choice.best_alternative
    assert choice.timings_us[best] == min(v for k, v in choice.timings_us.items() if k != "linear")
    faster = choice.timings_us[best] < (1 - kernels.MARGIN) * choice.timings_us["linear"]
    assert choice.kernel == (best if faster else "linear")
    assert kernels.chosen_kernel(layer.weight, rows) == choice.kernel

    stored = json.loads(kernels.cache_path().read_text())
    assert kernels.cache_path().parent == fresh
    entry = stored[kernels.machine_key()][f"float32 rows={rows} 64x96"]
    assert entry["kernel"] == choice.kernel and entry["timings_us"] == choice.timings_us

    # A new process (simulated by forgetting) reads the file instead of timing again.
    kernels.forget_choices()
    assert kernels.chosen_kernel(layer.weight, rows) == choice.kernel
    assert _calls_until_decided(layer, x) == 1
    (again,) = kernels.kernel_report()
    assert again.source == "cache" and again.kernel == choice.kernel


@pytest.mark.parametrize("kernel", ["linear", "few_row", "mv"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("bias", [False, True])
def test_every_kernel_computes_the_product(
    fresh: Path, kernel: str, dtype: str, bias: bool
) -> None:
    """Forced one at a time: each kernel's one-row product (and the row counts it applies
    to) equals F.linear's to rounding; `mv` on two rows falls back to F.linear."""
    torch_dtype = getattr(torch, dtype)
    layer = modeling_plt.PLTLinear(48, 40, bias=bias).to(torch_dtype)
    kernels.set_linear_kernel(kernel)  # type: ignore[arg-type]
    tol = 1e-5 if dtype == "float32" else 2e-2
    for rows in (1, 2):
        x = torch.randn(rows, 48, dtype=torch_dtype)
        with torch.no_grad():
            out = layer(x)
            expected = torch.nn.functional.linear(
                x.double(),
                layer.weight.double(),
                None if layer.bias is None else layer.bias.double(),
            )
        assert out.shape == (rows, 40) and out.dtype == torch_dtype
        assert torch.allclose(out.double(), expected, atol=tol, rtol=tol)
        want = kernel if kernel in kernels.candidates(rows, torch_dtype) else "linear"
        assert kernels.chosen_kernel(layer.weight, rows) == want
    assert kernels.kernel_report() == []  # forced: nothing timed


def test_cached_choice_is_used_as_stored(fresh: Path) -> None:
    """The file decides: an entry saying "few_row" (whatever this machine would measure) is
    followed, and the product is still F.linear's."""
    write_choice()
    layer = modeling_plt.PLTLinear(16, 8, bias=True)
    x = torch.randn(2, 16)
    with torch.no_grad():
        # The two kernels sum in different orders: equal to float32 rounding (an absolute
        # bound too, for outputs near zero).
        expected = torch.nn.functional.linear(x, layer.weight, layer.bias)
        assert torch.allclose(layer(x), expected, atol=1e-5)
    (choice,) = kernels.kernel_report()
    assert choice.source == "cache" and choice.kernel == "few_row"
    # Another machine's entries are not used: the shape is timed here.
    kernels.forget_choices()
    write_choice(machine="other cpu")
    assert kernels.chosen_kernel(layer.weight, 2) is None
    _calls_until_decided(layer, x)
    # Timed in this process either way: stored, or refused by the timing's sanity checks
    # when the machine is too busy to time it (F.linear then, nothing cached, a reason kept).
    (timed,) = kernels.kernel_report()
    assert timed.source in ("measured", "refused"), timed.source
    if timed.source == "refused":
        assert kernels.refusals()


@pytest.mark.parametrize(
    "change",
    [
        {"kernel": "mv"},  # not a candidate for two rows
        {"kernel": "fastest"},
        {"timings_us": {"linear": 10.0}},  # a candidate never timed
        {"timings_us": "fast"},
        {"use_few_row": True},  # the older schema's field
    ],
)
def test_malformed_cache_entry_is_timed_again(fresh: Path, change: dict[str, object]) -> None:
    write_choice(**change)
    layer = modeling_plt.PLTLinear(16, 8, bias=False)
    assert kernels.chosen_kernel(layer.weight, 2) is None
    with kernels.timing_hooks(clock=ScriptedClock(lambda call: 20.0)):  # a calm clock
        _calls_until_decided(layer, torch.randn(2, 16))
    (choice,) = kernels.kernel_report()
    assert choice.source == "measured"


def test_forcing_by_code_or_environment_skips_measuring(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weight = torch.randn(8, 16)
    monkeypatch.setenv(kernels.ENV_VAR, "few-row")
    assert kernels.kernel_mode() == "few_row" and kernels.chosen_kernel(weight, 2) == "few_row"
    monkeypatch.setenv(kernels.ENV_VAR, "linear")
    assert kernels.chosen_kernel(weight, 2) == "linear"
    monkeypatch.setenv(kernels.ENV_VAR, "MV")
    assert kernels.chosen_kernel(weight, 1) == "mv"
    assert kernels.chosen_kernel(weight, 2) == "linear"  # mv does not apply to two rows
    monkeypatch.setenv(kernels.ENV_VAR, "rows")
    assert kernels.chosen_kernel(weight, 2) == "linear"  # the multi-row kernel is off here
    kernels.set_linear_kernel("few_row")  # code wins over the environment
    assert kernels.chosen_kernel(weight, 2) == "few_row"
    assert kernels.kernel_report() == [] and not kernels.cache_path().exists()
    # Never for prefill-sized products or float64.
    assert kernels.chosen_kernel(weight, kernels.MAX_ROWS + 1) == "linear"
    assert kernels.chosen_kernel(weight.double(), 2) == "linear"
    monkeypatch.setenv(kernels.ENV_VAR, "fast")
    kernels.set_linear_kernel(None)
    with pytest.raises(ValueError, match="ASMOPT_PLT_LINEAR_KERNEL"):
        kernels.kernel_mode()
    with pytest.raises(ValueError, match="linear kernel"):
        kernels.set_linear_kernel("fast")  # type: ignore[arg-type]


def test_trial_takes_turns_skips_first_calls_and_decides_by_median() -> None:
    trial = kernels.Trial(("linear", "few_row", "mv"))
    used = []
    speed = {"linear": 100.0, "few_row": 70.0, "mv": 50.0}
    for _ in range(3 + 3 * kernels.SAMPLES):
        kernel = trial.next_kernel()
        used.append(kernel)
        # Untimed first calls are slow (allocation); mv is clearly the fastest.
        trial.record(kernel, 1000.0 if trial.calls < 3 else speed[kernel])
    assert used[:6] == ["linear", "few_row", "mv"] * 2
    assert all(len(v) == kernels.SAMPLES for v in trial.samples_us.values())
    assert all(1000.0 not in v for v in trial.samples_us.values())
    assert trial.decision() == (speed, "mv")
    with pytest.raises(ValueError, match="linear"):
        kernels.Trial(("few_row", "linear"))


def test_near_tie_gets_more_rounds_then_decides_on_all_samples() -> None:
    """The best alternative's median ratio to F.linear within a few per cent of the threshold
    asks for another round of samples (at most three rounds); clear ratios decide after
    one."""
    threshold = 1.0 - kernels.MARGIN
    n = kernels.SAMPLES
    trial = kernels.Trial()
    trial.calls = 2  # past the untimed calls
    trial.samples_us = {"linear": [100.0] * n, "few_row": [100.0 * threshold + 0.5] * n}
    assert trial.decision() is None and trial.rounds == 2
    trial.samples_us["linear"] += [100.0] * n
    trial.samples_us["few_row"] += [80.0] * n
    medians, chosen = trial.decision() or ({}, "")
    assert medians["linear"] == 100.0 and chosen == "few_row"
    assert medians["few_row"] < 95.0  # median of both rounds
    stuck = kernels.Trial(
        samples_us={"linear": [100.0] * (3 * n), "few_row": [100.0 * threshold] * (3 * n)},
        rounds=3,
    )
    assert stuck.decision() is not None  # the last round decides, tie or not
    clear = kernels.Trial(samples_us={"linear": [100.0] * n, "few_row": [60.0] * n})
    assert clear.decision() == ({"linear": 100.0, "few_row": 60.0}, "few_row")
    assert clear.rounds == 1
    slower = kernels.Trial(
        ("linear", "few_row", "mv"),
        samples_us={"linear": [100.0] * n, "few_row": [130.0] * n, "mv": [120.0] * n},
    )
    assert slower.decision() == ({"linear": 100.0, "few_row": 130.0, "mv": 120.0}, "linear")


# --------------------------------------------------------------------------- sanity checks


def test_per_row_bound_on_made_up_timings() -> None:
    """More rows cost no less than fewer rows (padding) and at most ceil(more / fewer) times
    them (splitting), each within ROW_TOLERANCE (25%), on the best kernel's median."""
    bound = kernels.row_bound_problems
    # An 8-row product at 97 ms beside 22 ms for one row is 4.4x: inside [22 / 1.25, 8 x 22 x
    # 1.25] ms, so the bound alone does not refuse it ...
    assert bound(8, 97_000.0, {1: 22_000.0}) == []
    # ... but with a 4-row product of the same weight at 25 ms it does (at most 2 x 25 x 1.25
    # = 62.5 ms for twice the rows), whichever of the two is being stored.
    (problem,) = bound(8, 97_000.0, {1: 22_000.0, 4: 25_000.0})
    assert "8 rows at 97000.0 us against 4 at 25000.0 us" in problem and "at most 2x" in problem
    assert bound(4, 25_000.0, {1: 22_000.0, 8: 97_000.0}) == [problem]
    # More rows cheaper than fewer rows beyond the tolerance: refused.
    (cheaper,) = bound(8, 15_000.0, {1: 22_000.0})
    assert "no less than the fewer rows" in cheaper
    assert bound(8, 18_000.0, {1: 22_000.0}) == []  # 0.82x: within 25%
    assert bound(2, 56_000.0, {1: 22_000.0}) != []  # above 2 x 22 x 1.25 = 55 ms
    assert bound(2, 54_000.0, {1: 22_000.0}) == []
    assert bound(2, 1.0, {2: 1000.0}) == []  # the same row count is no evidence
    # A few microseconds either way are one call's jitter, not load (TIMER_FLOOR_US).
    assert bound(2, 3.0, {1: 6.0}) == [] and bound(2, 30.0, {1: 6.0}) != []
    assert kernels.row_bound_conflicts(8, 97_000.0, {1: 22_000.0, 4: 25_000.0}) == {4: problem}
    assert bound(3, 10.0, {}) == []


def test_repeated_timings_and_contention_on_made_up_timings() -> None:
    # Halves in time order: 100, 100 then 250, 250 (2.5x) is load arriving mid-timing.
    (problem,) = kernels.repeat_problems({"linear": [100.0, 100.0, 250.0, 250.0]})
    assert problem.startswith("linear: repeated timings 100.0 and 250.0 us differ by 2.50x")
    steady = {"linear": [100.0, 120.0, 90.0, 110.0], "few_row": [50.0, 52.0, 60.0, 55.0]}
    assert kernels.repeat_problems(steady) == []
    assert kernels.repeat_problems({"linear": [100.0]}) == []
    assert kernels.repeat_problems({"linear": [3.8, 3.8, 5.8, 5.8]}) == []  # 2 us: jitter
    assert kernels.contention_problems(1.0, 0.5) == []
    assert kernels.contention_problems(None, None) == []
    starved, loaded = kernels.contention_problems(0.3, 2.5)
    assert "ran 0.30 of the wall time" in starved and "load average 2.50 per CPU" in loaded
    # All of it together: the 97 ms case timed while the process got a third of the CPU and
    # its timings drifted is refused for both reasons.
    problems = kernels.timing_problems(
        8,
        {"linear": 97_000.0, "few_row": 99_000.0},
        {"linear": [45_000.0, 45_000.0, 97_000.0, 98_000.0], "few_row": [99_000.0] * 4},
        {1: 22_000.0},
        cpu_over_wall=0.33,
        load_per_cpu=0.5,
    )
    assert len(problems) == 2 and problems[0].startswith("linear: repeated timings")


class ScriptedClock:
    """A timing function with known answers: product call i lasts `duration(i)` us of wall
    time, of which the process runs `cpu_share`."""

    def __init__(self, duration: Callable[[int], float], cpu_share: float = 1.0) -> None:
        self.duration, self.cpu_share = duration, cpu_share
        self.wall = self.cpu = 0.0
        self.calls = 0
        self.started = False

    def __call__(self) -> tuple[float, float]:
        if self.started:  # the end of a call
            us = self.duration(self.calls)
            self.wall += us / 1e6
            self.cpu += self.cpu_share * us / 1e6
            self.calls += 1
        self.started = not self.started
        return self.wall, self.cpu


def drifting(bad_attempts: int) -> Callable[[int], float]:
    """Durations of a two-kernel trial (F.linear 100 us, the transposed product 50 us) whose
    second half of samples runs 3x slower in its first `bad_attempts` attempts."""
    per_attempt = 2 * kernels.SAMPLES

    def duration(call: int) -> float:
        base = 100.0 if call % 2 == 0 else 50.0  # linear first, then few_row, in turn
        timed = call - 2  # the first call of each kernel is untimed
        attempt, position = divmod(max(timed, 0), per_attempt)
        late = timed >= 0 and position >= per_attempt // 2 and attempt < bad_attempts
        return 3 * base if late else base

    return duration


def test_a_drifting_timing_is_retimed_then_refused(
    fresh: Path, caplog: pytest.LogCaptureFixture
) -> None:
    layer = modeling_plt.PLTLinear(16, 8, bias=False)
    x = torch.randn(2, 16)
    clock = ScriptedClock(drifting(bad_attempts=99))
    with (
        kernels.timing_hooks(clock=clock),
        caplog.at_level("INFO", logger="asmopt.models.plt.kernels"),
    ):
        calls = _calls_until_decided(layer, x)
    attempts = kernels.MAX_RETIMES + 1
    assert calls == 2 + attempts * 2 * kernels.SAMPLES  # retimed MAX_RETIMES times, no more
    (choice,) = kernels.kernel_report()
    assert choice.source == "refused" and choice.kernel == "linear"
    assert kernels.chosen_kernel(layer.weight, 2) == "linear"
    (reason,) = kernels.refusals().values()
    assert "repeated timings" in reason and "differ by 3.00x" in reason
    assert not kernels.cache_path().exists()  # nothing cached: the next process times again
    retimes = [r for r in caplog.records if "retimed" in r.getMessage()]
    refused = [r for r in caplog.records if "not cached" in r.getMessage()]
    assert len(retimes) == kernels.MAX_RETIMES and len(refused) == 1
    assert "not cached, F.linear used" in refused[0].getMessage()
    # The refusal holds for this process: the shape is not timed again.
    with torch.no_grad():
        layer(x)
    assert not kernels.calibrating() and kernels.kernel_report() == [choice]


def test_a_retimed_timing_that_settles_is_stored(fresh: Path) -> None:
    layer = modeling_plt.PLTLinear(16, 8, bias=False)
    with kernels.timing_hooks(clock=ScriptedClock(drifting(bad_attempts=1))):
        calls = _calls_until_decided(layer, torch.randn(2, 16))
    assert calls == 2 + 2 * 2 * kernels.SAMPLES  # one retime
    (choice,) = kernels.kernel_report()
    assert choice.source == "measured" and choice.kernel == "few_row"
    assert choice.timings_us == {"linear": 100.0, "few_row": 50.0}  # the second attempt only
    assert kernels.refusals() == {}
    stored = json.loads(kernels.cache_path().read_text())[kernels.machine_key()]
    assert stored["float32 rows=2 16x8"]["kernel"] == "few_row"


def test_a_contended_or_out_of_bound_timing_is_not_cached(fresh: Path) -> None:
    layer = modeling_plt.PLTLinear(16, 8, bias=False)
    x = torch.randn(2, 16)
    steady = drifting(bad_attempts=0)
    # The process got a third of the wall time of its calls.
    with kernels.timing_hooks(clock=ScriptedClock(steady, cpu_share=0.33)):
        _calls_until_decided(layer, x)
    assert "ran 0.33 of the wall time" in kernels.refusals()["float32 rows=2 16x8"]
    # The machine's load average was above one runnable thread per CPU.
    kernels.forget_choices()
    with kernels.timing_hooks(clock=ScriptedClock(steady), load=lambda: 2.5):
        _calls_until_decided(layer, x)
    assert "load average 2.50 per CPU" in kernels.refusals()["float32 rows=2 16x8"]
    # Two rows at 50 us best against one row of this weight stored at 10 us: more than twice.
    kernels.forget_choices()
    one_row = {"rows": 1, "timings_us": {"linear": 10.0, "few_row": 12.0, "mv": 11.0}}
    store_entries({"float32 rows=1 16x8": {**one_row, "kernel": "linear"}})
    with kernels.timing_hooks(clock=ScriptedClock(steady)):
        _calls_until_decided(layer, x)
    assert "2 rows at 50.0 us against 1 at 10.0 us" in kernels.refusals()["float32 rows=2 16x8"]
    stored = json.loads(kernels.cache_path().read_text())[kernels.machine_key()]
    assert set(stored) == {"float32 rows=1 16x8"}  # nothing added
    # Either side of the pair may be the one timed under load: the stored one-row choice is
    # timed again when next met, not trusted over the refused one.
    assert kernels.chosen_kernel(layer.weight, 1) is None


def store_entries(entries: dict[str, dict[str, object]]) -> None:
    """Writes float32 16 x 8 choices (fields in `entries` replace or add) under this
    machine's key, as an earlier process would have."""
    base = {"dtype": "float32", "in_features": 16, "out_features": 8}
    kernels.cache_path().write_text(
        json.dumps({kernels.machine_key(): {k: {**base, **e} for k, e in entries.items()}})
    )


def test_stored_choices_that_break_the_bound_are_timed_again(fresh: Path) -> None:
    """Entries written before the checks are read in the same format; a pair that breaks the
    per-row bound against each other is not used (which one was timed under load cannot be
    told), a consistent entry of another weight still is."""
    entries: dict[str, dict[str, object]] = {
        "float32 rows=1 16x8": {
            "rows": 1,
            "timings_us": {"linear": 22_000.0, "few_row": 23_000.0, "mv": 22_500.0},
            "kernel": "linear",
        },
        "float32 rows=8 16x8": {
            "rows": 8,
            "timings_us": {"linear": 15_000.0, "few_row": 16_000.0},
            "kernel": "linear",
        },
        "float32 rows=2 32x8": {
            "rows": 2,
            "in_features": 32,
            "timings_us": {"linear": 10.0, "few_row": 5.0},
            "kernel": "few_row",
        },
    }
    store_entries(entries)
    assert kernels.chosen_kernel(torch.randn(8, 16), 1) is None
    assert kernels.chosen_kernel(torch.randn(8, 16), 8) is None
    assert kernels.chosen_kernel(torch.randn(8, 32), 2) == "few_row"
    base = {"dtype": "float32", "in_features": 16, "out_features": 8, "source": "cache"}
    choices = {key: kernels.KernelChoice(**{**base, **e}) for key, e in entries.items()}
    bad = kernels.inconsistent_entries(choices)
    assert set(bad) == {"float32 rows=1 16x8", "float32 rows=8 16x8"}
    assert "8 rows at 15000.0 us against 1 at 22000.0 us" in bad["float32 rows=8 16x8"]
