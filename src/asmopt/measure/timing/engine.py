"""The timing engine: the adaptive loop over rounds of paired samples.

It only sees an executor that returns paired samples (`BatchExecutor`, rounds.py), so its
statistics are tested with a mock executor and no real timing; executor.py runs real
sandboxes. Its knobs are config.py's `TimingConfig`. It runs the rounds of every test
(what each round asks for, when a test stops, the budgets); a test's estimate and summary
(its interval, warnings and record) are summary.py's, and the state both read is state.py's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from asmopt.errors import InputError
from asmopt.measure.speedup import (
    MeasureMode,
    MeasureStatus,
    TestSpeedup,
    TimingWarning,
)
from asmopt.measure.stats import RatioInterval, t_quantile
from asmopt.measure.timing.config import TimingConfig
from asmopt.measure.timing.decisions import (
    EQUIVALENCE_ALPHA,
    decided,
    far_from_decisions,
    program_aims,
    program_decided,
)
from asmopt.measure.timing.requests import CandidateRoundRequest, CandidateTest, RoundRequest
from asmopt.measure.timing.rounds import (
    BatchExecutor,
    CandidatesExecutor,
    PairExecutor,
    Round,
    RunFailure,
)
from asmopt.measure.timing.state import _TestState
from asmopt.measure.timing.summary import _summarise


class _OneCandidate:
    """A BatchExecutor (one candidate) seen as a CandidatesExecutor of candidate 0."""

    def __init__(self, executor: BatchExecutor) -> None:
        self.executor = executor

    def run_candidates(
        self, requests: Sequence[CandidateRoundRequest]
    ) -> dict[CandidateTest, Round]:
        rounds = self.executor.run_batch([req.for_test() for req in requests])
        return {CandidateTest(0, i): rnd for i, rnd in rounds.items()}


class _OneTest:
    """A PairExecutor seen as a BatchExecutor of a single test."""

    def __init__(self, executor: PairExecutor) -> None:
        self.executor = executor

    def run_batch(self, requests: Sequence[RoundRequest]) -> dict[int, Round]:
        first = requests[0]
        return {first.test: self.executor.run_round(first.pairs, first.warmup_pairs)}


@dataclass
class TimingOutcome:
    """The engine's answer: a speedup, or the failure that stopped the measurement."""

    speedup: TestSpeedup
    failure: RunFailure | None = None



# ---------------------------------------------------------------------------- engine
def _warmup(state: _TestState, config: TimingConfig) -> int:
    """Warm-up pairs for the test's next round (see TimingConfig.warmup_pairs)."""
    return 0 if state.slow or state.rounds else config.warmup_pairs


def _plan_slow(state: _TestState, pair_s: float | None, config: TimingConfig) -> None:
    """Size the first round of a test whose pairs are slow (see measure_candidates)."""
    if pair_s is None or pair_s <= 0:
        return
    affordable = int(config.budget_s / pair_s)
    if affordable >= 2 * (config.min_pairs + config.warmup_pairs):
        return
    state.slow = True
    state.want = max(2, min(config.min_pairs, affordable // config.rounds_needed))


def _stop(
    state: _TestState, config: TimingConfig, warnings: Sequence[TimingWarning], why: str
) -> None:
    """End a test's measurement where it stands (a budget outside the test ran out)."""
    if state.target is not None:
        config = replace(config, target_half_width=state.target)
    state.done, state.stopped = True, why
    state.speedup, _ = _summarise(state, config, warnings)


def _advance(state: _TestState, config: TimingConfig, warnings: Sequence[TimingWarning]) -> None:
    """Recompute the test's interval; decide whether it is done or how many pairs it needs.

    A test with its own target (`state.target`) is judged against that half-width instead
    of the config's."""
    if state.target is not None:
        config = replace(config, target_half_width=state.target)
    speedup, stat = _summarise(state, config, warnings)
    state.stat = stat
    half_width = stat.half_width
    n_used = speedup.n
    clean = str(TimingWarning.MANY_OUTLIERS) not in speedup.warnings
    # No test ends on one sandbox's pairs (TimingConfig.min_rounds): the pilot alone, or a
    # later round alone once the pilot was left out, asks for another round.
    # The pilot round alone never settles a test either (see TimingConfig.pilot_round).
    piloting = config.pilot_round and len(state.rounds) == 1 and not state.slow
    short_of_rounds = state.rounds_used < config.rounds_needed
    enough = n_used >= config.min_pairs and clean and not short_of_rounds and not piloting
    settled = enough and half_width <= state.effective_target
    decided_now = enough and not settled and decided(stat, config, state.resolution)
    n = len(state.pairs)
    # The same test as the `too_fast` warning (either side's median run under TOO_FAST_S):
    # a test warned too fast always gets the short-test allowance, and only such a test.
    if str(TimingWarning.TOO_FAST) in speedup.warnings:
        factor = config.short_test_pair_factor
        config = replace(
            config, max_pairs=factor * config.max_pairs, round_pairs=factor * config.round_pairs
        )
    # Budgets give way, up to twice over, to the round a test still needs.
    over_budget = state.spent >= (2.0 if short_of_rounds else 1.0) * config.budget_s
    reasons = [
        (settled, "target"),
        (decided_now, "decided"),
        (n >= config.max_pairs and not short_of_rounds, "pairs"),
        (len(state.rounds) >= config.max_rounds, "rounds"),
        (over_budget, "budget"),
    ]
    stop = next((why for hit, why in reasons if hit), "")
    if stop:
        state.done, state.stopped, state.decided = True, stop, decided_now
        # Summarise again so the record says why it stopped (and drops target_not_met
        # where the sequential rule settled the answer).
        state.speedup, _ = _summarise(state, config, warnings)
        return
    state.speedup = speedup
    needed = _pairs_needed(state, stat, config)
    per_pair = state.pair_seconds
    warmup = _warmup(state, config)
    left = config.budget_s - state.spent
    by_time = int(left / per_pair) - warmup if per_pair > 0 else config.round_pairs
    if by_time < 2:
        if not short_of_rounds:
            state.done, state.stopped = True, "budget"
            state.speedup, _ = _summarise(state, config, warnings)
            return
        by_time = 2  # the smallest round that can stand as one: the budget gives way
    state.want = max(2, min(needed, config.max_pairs - n, by_time, config.round_pairs))


def _pairs_needed(state: _TestState, stat: RatioInterval, config: TimingConfig) -> int:
    """Pairs for the next round, from the variance model of the estimate: a round of n
    pairs adds precision 1 / (s2 / n + tau^2), s2 the per-pair variance within rounds and
    tau^2 the between-sandbox variance. Enough pairs to reach the aimed standard error in
    one more round where one round can; else the n where s2 / n = tau^2, past which more
    pairs in a round buy little and further rounds are what narrows the interval."""
    parts = state.parts
    floor = config.min_pairs if len(parts) <= 1 and not state.slow else 2
    if not parts or not math.isfinite(stat.log_se) or stat.df <= 0:
        return config.min_pairs
    s2 = sum(p.log_se**2 * p.n for p in parts) / len(parts)
    tau2 = state.tau**2
    # The aimed standard error: the target half-width at the confidence; where it already
    # lies far from every decision point, the sequential rule's width; with the decision
    # precision, whichever of that and the equivalence test's needs is less.
    df = max(stat.df, 4.0)
    aim = max(config.target_half_width, state.effective_target)
    if config.early_stop and far_from_decisions(stat, config):
        aim = max(aim, 0.6 * config.early_stop_half_width)
    aim_se = math.log1p(aim) / t_quantile(0.5 + config.confidence / 2.0, df)
    if config.precision == "decision":
        room = math.log1p(config.equivalence_margin) - abs(stat.log_mean)
        aim_se = max(aim_se, room / t_quantile(1.0 - EQUIVALENCE_ALPHA, df))
    # What the program's verdict asks of this test, where that is less (program_aims).
    aim_se = max(aim_se, state.program_aim_se)
    have = 1.0 / stat.log_se**2
    more = 1.0 / aim_se**2 - have
    if more <= 0:  # precise enough already: the round is for the rounds rule
        return max(floor, config.min_pairs)
    if tau2 > 0 and more >= 1.0 / tau2:
        n = s2 / tau2
    else:
        n = s2 / (1.0 / more - tau2)
    return max(floor, math.ceil(1.2 * n))


def measure_tests(
    executor: BatchExecutor,
    names: Sequence[str],
    config: TimingConfig | None = None,
    *,
    warnings: Sequence[TimingWarning] = (),
    clock: Any = time.monotonic,
    targets: Sequence[float] | None = None,
) -> tuple[list[TestSpeedup], RunFailure | None, str | None]:
    """Measure several tests together: every batch runs the tests that still need pairs.

    `targets` optionally gives each test its own target half-width. Returns the speedups
    (in `names` order), and the failure that stopped the measurement with the name of its
    test (None, None when every run behaved). One candidate: `measure_candidates` with K=1."""
    (result,) = measure_candidates(
        _OneCandidate(executor), names, 1, config, warnings=warnings, clock=clock, targets=targets
    )
    return result


def measure_candidates(
    executor: CandidatesExecutor,
    names: Sequence[str],
    n_candidates: int,
    config: TimingConfig | None = None,
    *,
    warnings: Sequence[TimingWarning] = (),
    clock: Any = time.monotonic,
    targets: Sequence[float] | None = None,
    pair_seconds: Sequence[Sequence[float | None] | None] | None = None,
) -> list[tuple[list[TestSpeedup], RunFailure | None, str | None]]:
    """Measure several candidates of one program on several tests together.

    `pair_seconds` optionally estimates, per candidate and test, the seconds one pair
    takes (from its correctness run): a test whose runs are so slow that its budget
    affords no second round gets one round without warm-up, sized to the budget, and that
    round is its estimate; its result says it stopped on the budget.

    Every batch runs, for each candidate, the tests it still needs pairs on; the executor
    shares the baseline's runs between the candidates of a test (see CandidatesExecutor),
    so K candidates cost about (K+1)/K runs a pair instead of 2. Each candidate keeps its
    own statistics, stopping rule, budget and failure exactly as if it were measured alone:
    a candidate whose tests are done asks for nothing more, and one whose run fails is
    removed (its failure recorded) while the others go on with the next batch.

    Budget: each (candidate, test) is charged the seconds its Round reports (the executor's
    share: its own runs, its part of every shared baseline run, its part of the sandbox's
    fixed cost); waiting for the timing core and stalled rounds are counted apart, the wait
    split evenly over every (candidate, test) of the batch.

    Returns, per candidate (in order), what `measure_tests` returns for one candidate."""
    config = config or TimingConfig()
    if targets is not None and len(targets) != len(names):
        raise InputError("one target per test")
    if n_candidates < 1:
        raise InputError(f"need at least one candidate, got {n_candidates}")
    states = _initial_states(names, n_candidates, config, targets, pair_seconds)
    failures: list[tuple[RunFailure, str] | None] = [None] * n_candidates
    while active := _active(states, failures):
        start = clock()
        rounds = executor.run_candidates(
            [
                CandidateRoundRequest(c, i, states[c][i].want, _warmup(states[c][i], config))
                for c, i in active
            ]
        )
        elapsed = clock() - start
        batch = _BatchShare(elapsed, len(active), _record_failures(rounds, states, failures))
        for c, i in active:
            if failures[c] is None:
                _take_round(states[c][i], rounds.get((c, i)), batch, config, warnings)
        _enforce_candidate_budgets(states, config, warnings)
        _stop_decided_programs(states, failures, config, warnings)
        _plan_for_programs(states, failures, config)
    return [
        (
            [_final(x) for x in states[c]],
            failures[c][0] if failures[c] else None,
            failures[c][1] if failures[c] else None,
        )
        for c in range(n_candidates)
    ]


def _initial_states(
    names: Sequence[str],
    n_candidates: int,
    config: TimingConfig,
    targets: Sequence[float] | None,
    pair_seconds: Sequence[Sequence[float | None] | None] | None,
) -> list[list[_TestState]]:
    """Each candidate's state on each test before the first batch (slow tests planned)."""
    states = [
        [
            _TestState(name, want=config.min_pairs, target=targets[k] if targets else None)
            for k, name in enumerate(names)
        ]
        for _ in range(n_candidates)
    ]
    for c, hints in enumerate(pair_seconds or ()):
        for st, hint in zip(states[c], hints or (), strict=False):
            _plan_slow(st, hint, config)
    return states


def _active(
    states: Sequence[Sequence[_TestState]], failures: Sequence[tuple[RunFailure, str] | None]
) -> list[CandidateTest]:
    """The (candidate, test)s the next batch runs: unfinished tests of unfailed candidates."""
    return [
        CandidateTest(c, i)
        for c in range(len(states))
        if failures[c] is None
        for i, st in enumerate(states[c])
        if not st.done
    ]


def _record_failures(
    rounds: dict[CandidateTest, Round],
    states: Sequence[Sequence[_TestState]],
    failures: list[tuple[RunFailure, str] | None],
) -> bool:
    """Record the first failure of each candidate that failed in this batch (its test's
    speedup says so); True if any did."""
    failed_now = False
    for (c, i), rnd in rounds.items():
        if rnd.failure is not None and failures[c] is None:
            st = states[c][i]
            st.speedup = TestSpeedup(
                st.name,
                MeasureMode.TIME,
                MeasureStatus.INFRA_ERROR,
                reliable=False,
                message=rnd.failure.message,
            )
            failures[c] = (rnd.failure, st.name)
            failed_now = True
    return failed_now


@dataclass(frozen=True)
class _BatchShare:
    """What a (candidate, test) of a batch needs to know of the batch as a whole."""

    elapsed: float  # seconds the whole batch took (its wait for the core included)
    active: int  # (candidate, test)s in the batch
    failed_now: bool  # some candidate failed in it


def _take_round(
    st: _TestState,
    rnd: Round | None,
    batch: _BatchShare,
    config: TimingConfig,
    warnings: Sequence[TimingWarning],
) -> None:
    """Add one (candidate, test)'s Round of a batch to its state and advance it: a round
    not run is retried (at most three times), a stalled one discarded and repeated (up to
    max_stalled_rounds), any other joins the estimate."""
    if rnd is None or not rnd.pairs:  # not run: the next batch retries it
        # A round lost because another candidate failed beside it is not the
        # test's doing (and cannot recur: that candidate is gone).
        if not batch.failed_now:
            st.retries += 1
        if st.retries > 3:
            st.done, st.stopped = True, "not_run"
        return
    # The budget counts time spent timing (the executor's share for this test);
    # waiting for the core lock and stalled rounds are counted apart.
    seconds = rnd.seconds if rnd.seconds > 0 else batch.elapsed / batch.active
    st.waited += rnd.waited_s / batch.active
    if rnd.stalled(config):
        if st.discarded < config.max_stalled_rounds:
            st.discarded += 1
            st.stalled_s += seconds
            return  # repeated by the next batch, with the same request
        st.kept_stalled += 1
    st.rounds.append(rnd)
    st.pairs += [(b, c_run, len(st.rounds) - 1) for b, c_run in rnd.pairs]
    st.spent += seconds
    _advance(st, config, warnings)


def _enforce_candidate_budgets(
    states: Sequence[Sequence[_TestState]],
    config: TimingConfig,
    warnings: Sequence[TimingWarning],
) -> None:
    """Stop the unfinished tests of every candidate whose whole budget is spent."""
    for candidate_states in states:
        if sum(st.spent for st in candidate_states) >= config.candidate_budget_s:
            for st in candidate_states:
                if not st.done and st.pairs:
                    _stop(st, config, warnings, "candidate_budget")


def _stop_decided_programs(
    states: Sequence[Sequence[_TestState]],
    failures: Sequence[tuple[RunFailure, str] | None],
    config: TimingConfig,
    warnings: Sequence[TimingWarning],
) -> None:
    """Stop the unfinished tests of every candidate whose program verdict is settled
    (decisions.program_decided; TimingConfig.program_stop): they end where they stand,
    recorded as stopped by the program."""
    for c, candidate_states in enumerate(states):
        if failures[c] is not None or all(st.done for st in candidate_states):
            continue
        if program_decided(candidate_states, config):
            for st in candidate_states:
                if not st.done:
                    st.decided = True  # settled by the program's rule: no target is missed
                    _stop(st, config, warnings, "program")


def _plan_for_programs(
    states: Sequence[Sequence[_TestState]],
    failures: Sequence[tuple[RunFailure, str] | None],
    config: TimingConfig,
) -> None:
    """Size every unfinished test's next round for what its program's verdict still needs
    (decisions.program_aims), where that is fewer pairs than the test's own target asks."""
    for c, candidate_states in enumerate(states):
        if failures[c] is not None:
            continue
        aims = program_aims(candidate_states, config)
        for k, st in enumerate(candidate_states):
            st.program_aim_se = aims[k] if aims else 0.0
            if st.done or st.stat is None or st.program_aim_se <= 0:
                continue
            own = config if st.target is None else replace(config, target_half_width=st.target)
            # A round of at most a quarter of the budget, so that the program is looked at
            # again before a heavy test spends the rest on one sandbox's estimate.
            per_pair = st.used_pair_seconds
            quarter = int(config.budget_s / (4 * per_pair)) if per_pair > 0 else st.want
            st.want = max(2, min(st.want, _pairs_needed(st, st.stat, own), quarter))


def _final(state: _TestState) -> TestSpeedup:
    if state.speedup is not None:
        return state.speedup
    return TestSpeedup(
        state.name,
        MeasureMode.TIME,
        MeasureStatus.INFRA_ERROR,
        reliable=False,
        message="not measured: the measurement stopped on another test",
    )


def measure_pairs(
    executor: PairExecutor,
    config: TimingConfig | None = None,
    *,
    test: str = "test",
    warnings: Sequence[TimingWarning] = (),
    clock: Any = time.monotonic,
) -> TimingOutcome:
    """One test: run rounds until the interval is narrow enough or the budget is spent."""
    speedups, failure, _ = measure_tests(
        _OneTest(executor), [test], config, warnings=warnings, clock=clock
    )
    return TimingOutcome(speedups[0], failure)
