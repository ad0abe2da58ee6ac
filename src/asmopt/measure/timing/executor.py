"""The sandbox executor: baseline and candidates alternate in one sandbox on a locked core.
`judging.time_candidates` ties it to the engine, with blame and the consistency check;
`calibration` times two copies of one binary with it to measure the machine's spread."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, NamedTuple

from asmopt.errors import InputError
from asmopt.judge import Verdict, classify_run
from asmopt.measure.timing.cores import CoreLock, default_core_lock
from asmopt.measure.timing.requests import CandidateRoundRequest, CandidateTest, RoundRequest
from asmopt.measure.timing.rounds import Round, RunFailure, RunTiming
from asmopt.programs.model import Comparison, TestCase
from asmopt.sandbox.launcher import LaunchRecord
from asmopt.sandbox.records import Limits, RunResult
from asmopt.sandbox.runner import MAX_BINARIES, MAX_INPUTS, Sandbox

# ---------------------------------------------------------------------------- sandbox executor
# draw(candidate, test index, serial) -> stdin: a fresh input for one timed pair.
DrawInput = Callable[[int, int, int], bytes]

# The launcher runs at most MAX_BINARIES binaries in one sandbox: the baseline and 8
# candidates. More candidates of a test are spread over several sandboxes of a batch, each
# with its own baseline runs.
MAX_SHARED_CANDIDATES = MAX_BINARIES - 1

MAX_ROUND_OUTPUT = 256 << 20  # bytes of stdout one round may produce (all runs together)


class SharedSandboxExecutor:
    """Runs the baseline (A) and several candidates (B1..Bk) of one program in the sandbox on
    a locked core, the baseline's runs shared between the candidates (a CandidatesExecutor).

    A batch puts every requested test in ONE sandbox (their inputs as descriptors, one
    after another), so a program's tests pay for one sandbox start-up instead of one each.
    A test's runs come in blocks: the baseline once and each candidate that still wants a
    pair once, in a cyclic order rotated by one place per block (_block_order) so that
    what favours a place in a block cancels out and no binary runs twice in a row; each
    candidate's pair of a block is (the block's baseline run, its own run). With one
    candidate this is the AB, BA, ... of a paired measurement. Tests whose argv differ go
    to separate sandboxes, as do batches of more than the launcher's MAX_INPUTS inputs or
    MAX_SHARED_CANDIDATES candidates."""

    def __init__(
        self,
        sandbox: Sandbox,
        baseline: str | os.PathLike[str],
        candidates: Sequence[str | os.PathLike[str]],
        tests: Sequence[TestCase],
        limits: Limits | None = None,
        lock: CoreLock | None = None,
        check_output: bool = True,
        priority: Literal["normal", "high", "realtime"] = "realtime",
        candidate_wall_s: Sequence[float | None] | None = None,
        draw: DrawInput | None = None,
        fresh_tests: Sequence[bool] | None = None,
    ) -> None:
        """Wide because the sandbox, the binaries, the tests, their limits, the core lock and
        the run's options (output check, priority, per-candidate deadlines, fresh draws) are all
        independent, and `time_candidates`, the calibration and the tests each set a different
        few."""
        if not candidates:
            raise InputError("at least one candidate")
        if (draw is None) != (fresh_tests is None):
            raise InputError("draw and fresh_tests come together")
        if fresh_tests is not None and len(fresh_tests) != len(tests):
            raise InputError("one fresh_tests flag per test")
        if candidate_wall_s is not None and len(candidate_wall_s) != len(candidates):
            raise InputError("one candidate wall time (or None) per candidate")
        self.priority = priority
        self.sandbox = sandbox
        self.baseline = baseline
        self.candidates = list(candidates)
        self.tests = list(tests)
        self.limits = limits or sandbox.limits
        self.lock = lock or default_core_lock()
        self.check_output = check_output
        # Each candidate run's own deadline (the baseline keeps the limits' wall time): a
        # candidate that idles only when timed is stopped early and charged a timeout.
        self.candidate_wall_s = (
            list(candidate_wall_s) if candidate_wall_s is not None else [None] * len(candidates)
        )
        # sha256 of every run's stdout, per candidate and test: (digests of the baseline's
        # runs in that candidate's blocks, digests of the candidate's runs).
        self.digests: list[dict[int, tuple[set[str], set[str]]]] = [{} for _ in candidates]
        # The largest output a run of each test has written (bytes), for the output caps.
        self.output_seen: dict[int, int] = {}
        # Fresh inputs (fresh.py): for a test flagged in `fresh_tests`, every pair runs on
        # its own input, draw(candidate, test index, serial), which no other pair or
        # candidate ever gets; its baseline run's output is the expected output.
        self.draw = draw
        self.fresh_tests = (
            list(fresh_tests) if fresh_tests is not None else [False] * len(self.tests)
        )
        self._serial: dict[CandidateTest, int] = {}

    def _output_per_run(self, index: int) -> int:
        """Bytes one run of test `index` may write, for sizing a batch's output cap: the
        expected output, or, where that is a digest (`md5` comparison), the most a run of
        it has written so far (the per-run cap before the first round)."""
        test = self.tests[index]
        seen = self.output_seen.get(index)
        if test.compare.mode == "md5":
            expected = seen if seen is not None else self.limits.stdout_cap
        else:
            expected = max(len(test.expected_stdout), seen or 0)
        return expected + 64

    def _max_blocks_for_output(self, index: int, candidates: int) -> int:
        per_run = self._output_per_run(index)
        return max(2, MAX_ROUND_OUTPUT // (2 * (candidates + 1) * per_run))

    def run_candidates(
        self, requests: Sequence[CandidateRoundRequest]
    ) -> dict[CandidateTest, Round]:
        """Run one round per request; a failure removes its candidate from the batch's
        later sandboxes, the others go on."""
        out: dict[CandidateTest, Round] = {}
        failed: set[int] = set()
        for group in self._groups(requests):
            group = [req for req in group if req.candidate not in failed]
            if not group:
                continue
            rounds = self._run_group(group)
            out.update(rounds)
            failed |= {c for (c, _), r in rounds.items() if r.failure is not None}
        return out

    def _groups(
        self, requests: Sequence[CandidateRoundRequest]
    ) -> list[list[CandidateRoundRequest]]:
        """Requests by sandbox: the same argv, at most MAX_INPUTS tests and at most
        MAX_SHARED_CANDIDATES candidates (spread evenly over as few sandboxes as fit)."""
        by_argv: list[list[CandidateRoundRequest]] = []
        for req in requests:
            argv = self.tests[req.test].argv
            for g in by_argv:
                same = self.tests[g[0].test].argv == argv
                if same and len({r.test for r in g} | {req.test}) <= MAX_INPUTS:
                    g.append(req)
                    break
            else:
                by_argv.append([req])
        groups = []
        for g in by_argv:
            cands = sorted({r.candidate for r in g})
            parts = -(-len(cands) // MAX_SHARED_CANDIDATES)
            for k in range(parts):
                chosen = set(cands[k::parts])
                groups += self._by_inputs([r for r in g if r.candidate in chosen])
        return groups

    def _inputs_of(self, req: CandidateRoundRequest) -> int:
        """Inputs one request needs: one per pair and warm-up on a fresh test."""
        return min(MAX_INPUTS, req.pairs + req.warmup_pairs) if self.fresh_tests[req.test] else 1

    def _by_inputs(self, group: list[CandidateRoundRequest]) -> list[list[CandidateRoundRequest]]:
        """A group split so that no sandbox needs more than the launcher's MAX_INPUTS."""
        out: list[list[CandidateRoundRequest]] = [[]]
        used = 0
        for req in group:
            need = self._inputs_of(req)
            if out[-1] and used + need > MAX_INPUTS:
                out.append([])
                used = 0
            out[-1].append(req)
            used += need
        return out

    def _run_group(self, group: Sequence[CandidateRoundRequest]) -> dict[CandidateTest, Round]:
        """One sandbox for a group of requests that share an argv: plan the runs, run them
        on a locked core, judge every run, then split the timings into each candidate's
        pairs on each test. The first failing run ends its candidate's part of the batch:
        its Round carries the failure, and the group's other Rounds stay empty (retried by
        the next batch, without the failed one)."""
        batch = self._plan(group)
        walls = self._run_walls(batch)
        timed = self._run_on_locked_core(batch, self.tests[group[0].test].argv, walls)
        result = timed.result
        rounds = {req.key: timed.empty_round() for req in group}
        if result.infra_error:
            # Nothing of it can be told apart: every candidate of the sandbox shares it (and
            # time_candidates decides, per candidate, whose it is).
            for key in _first_test_of_each_candidate(group):
                rounds[key].failure = RunFailure(
                    False, f"timing sandbox: {result.infra_error}", result
                )
            return rounds
        failed = self._first_failure(batch, result, walls)
        if failed is not None:
            key, failure = failed
            rounds[key].failure = failure
            return rounds
        # Each (candidate, test)'s share of the batch: its own runs, an equal part of each
        # baseline run it was paired with, and an equal part of the rest (sandbox start-up,
        # the launcher's work between runs).
        records = result.records
        overhead = max(0.0, timed.seconds - sum(r.wall_time_s for r in records)) / len(group)
        for plan in batch.plan:
            _split_pairs(rounds[plan.key], records, plan.blocks, plan.warmup_pairs, overhead)
        return rounds

    def _run_walls(self, batch: _Batch) -> list[float]:
        """Each binary's per-run deadline: the baseline's, then each candidate's."""
        limits = self.limits
        return [limits.wall_seconds] + [
            self.candidate_wall_s[c] or limits.wall_seconds for c in batch.cands
        ]

    def _run_on_locked_core(
        self, batch: _Batch, argv: Sequence[str], walls: list[float]
    ) -> _TimedSandbox:
        """Run the batch's sandbox on a timing core held under the lock, noting the load
        around it, the wait for the core and the seconds it ran."""
        marker = secrets.token_hex(16)
        limits = self.limits
        load_before = os.getloadavg()[0]
        asked = time.monotonic()
        with self.lock.hold() as cpu:
            start = time.monotonic()
            result = self.sandbox.run_binaries(
                [self.baseline, *(self.candidates[c] for c in batch.cands)],
                batch.order,
                argv=argv,
                stdin=batch.inputs,
                feed=batch.feed,
                limits=limits,
                marker=marker,
                cpus=[cpu],
                priority=self.priority,
                run_wall_s=walls,
                max_total_output=min(MAX_ROUND_OUTPUT, max(limits.stdout_cap, 2 * batch.out_bytes)),
            )
            seconds = time.monotonic() - start
        load_after = os.getloadavg()[0]
        return _TimedSandbox(result, seconds, start - asked, load_before, load_after)

    def _plan(self, group: Sequence[CandidateRoundRequest]) -> _Batch:
        """The runs of a group, test after test: each test's blocks (see the class), as
        many as the candidate wanting most asks for (and its share of the output cap
        allows); each candidate is in the first `pairs + warm-up` blocks of its tests, at
        least one of them timed."""
        batch = _Batch(cands=sorted({req.candidate for req in group}))
        binary = {c: k + 1 for k, c in enumerate(batch.cands)}
        for req in group:
            if req.test not in batch.tests:
                batch.tests.append(req.test)
        for i in batch.tests:
            members = [req for req in group if req.test == i]
            cap = self._max_blocks_for_output(i, len(members))
            if self.fresh_tests[i]:
                cap = min(cap, MAX_INPUTS)
            totals = {m.candidate: min(m.pairs + m.warmup_pairs, cap) for m in members}
            blocks: dict[int, list[_BlockPair]] = {m.candidate: [] for m in members}
            if self.fresh_tests[i]:
                self._plan_fresh(batch, i, members, totals, blocks, binary)
            else:
                self._plan_shared(batch, i, members, totals, blocks, binary)
            for m in members:
                warmup = min(m.warmup_pairs, totals[m.candidate] - 1)
                batch.plan.append(_CandidatePlan(m.key, blocks[m.candidate], warmup))
        return batch

    def _plan_shared(
        self,
        batch: _Batch,
        i: int,
        members: Sequence[CandidateRoundRequest],
        totals: dict[int, int],
        blocks: dict[int, list[_BlockPair]],
        binary: dict[int, int],
    ) -> None:
        """A fixed test: one input for every run; each block's baseline run is shared by
        the candidates in it."""
        slot = len(batch.inputs)
        batch.inputs.append(self.tests[i].stdin)
        start = secrets.randbelow(len(members) + 1)
        for j in range(max(totals.values())):
            inside = [m.candidate for m in members if totals[m.candidate] > j]
            runs = _block_order(inside, start + j)
            first = len(batch.order)
            base_run = first + runs.index(-1)
            for k, c in enumerate(runs):
                batch.add(0 if c == -1 else binary[c], slot, i, c, -1)
                if c == -1:
                    batch.block.append(tuple(inside))
                else:
                    batch.block.append((c,))
                    blocks[c].append(_BlockPair(base_run, first + k, len(inside)))
            batch.out_bytes += len(runs) * self._output_per_run(i)

    def _plan_fresh(
        self,
        batch: _Batch,
        i: int,
        members: Sequence[CandidateRoundRequest],
        totals: dict[int, int],
        blocks: dict[int, list[_BlockPair]],
        binary: dict[int, int],
    ) -> None:
        """A test with fresh inputs: every pair is (the baseline, one candidate) on an
        input of its own, drawn for that candidate only. No baseline run is shared: a run
        that followed another candidate's on the same input could be handed its answer
        through whatever survives between runs. The candidate runs first in every other
        pair, so nothing can be learnt from the baseline's run either."""
        assert self.draw is not None
        turn = 0
        for j in range(max(totals.values())):
            inside = [m.candidate for m in members if totals[m.candidate] > j]
            for c in inside if j % 2 == 0 else reversed(inside):
                serial = self._serial.get(CandidateTest(c, i), 0)
                self._serial[CandidateTest(c, i)] = serial + 1
                slot = len(batch.inputs)
                batch.inputs.append(self.draw(c, i, serial))
                batch.serials[slot] = serial
                first = len(batch.order)
                runs = [-1, c] if turn % 2 == 0 else [c, -1]
                turn += 1
                base_run = first + runs.index(-1)
                for k, who in enumerate(runs):
                    partner = -1 if who == -1 else base_run
                    batch.add(0 if who == -1 else binary[c], slot, i, who, partner)
                    batch.block.append((c,))
                    if who != -1:
                        blocks[c].append(_BlockPair(base_run, first + k, 1))
                batch.out_bytes += 2 * self._output_per_run(i)

    def _first_failure(
        self, batch: _Batch, result: RunResult, walls: list[float]
    ) -> tuple[CandidateTest, RunFailure] | None:
        """The first run that failed, as ((candidate, test index), the failure), or None.

        Every run is judged like a correctness run (its output included, unless
        `check_output` is off): a timed run that misbehaves stops its candidate's
        measurement. A baseline run's failure goes to the candidate that ran beside it in
        its block (time_candidates then decides whose fault it is). Each judged run's
        output digest is kept in `self.digests` for the consistency check against the
        candidate's own correctness run (time_candidates)."""
        order, owner = batch.order, batch.owner
        records = list(result.records)
        segments = list(result.segments or ())
        if result.stdout_truncated or result.stderr_truncated:
            i = min(len(segments), len(order) - 1)
            return batch.key(i), RunFailure(
                order[i] != 0,
                f"{batch.who(i)} failed in timing run {i + 1} of {len(order)}: "
                f"{Verdict.OUTPUT_LIMIT}: "
                "it wrote more than its share of the batch's output cap",
                None,
                i,
                Verdict.OUTPUT_LIMIT,
            )
        runs = result.each_run()
        for i, single in enumerate(runs):
            test = self.tests[owner[i]]
            seen = self.output_seen.get(owner[i], 0)
            self.output_seen[owner[i]] = max(seen, len(single.stdout))
            fresh = batch.partner[i] != -1 or (order[i] == 0 and self.fresh_tests[owner[i]])
            if fresh:
                stdin = batch.inputs[batch.feed[i]]
                if order[i] == 0:  # the baseline defines the expected output: only its
                    expected = single.stdout  # exit and its limits are judged
                else:
                    partner = batch.partner[i]
                    if partner >= len(runs):
                        break  # the baseline of this pair never ran: unfinished, below
                    expected = runs[partner].stdout
                compare = Comparison() if test.compare.mode == "md5" else test.compare
                test = replace(test, stdin=stdin, expected_stdout=expected, compare=compare)
            if not self.check_output:  # judged on everything but its output
                test = replace(test, compare=Comparison())
                single = replace(single, stdout=test.expected_stdout)
            run_limits = replace(self.limits, wall_seconds=walls[order[i]])
            verdict = classify_run(test, single, run_limits)
            # The verdict carries the output's digest (judge.classify_run hashes it once);
            # a fresh input's output is checked directly against the baseline's instead.
            for c in batch.block[i] if not fresh else ():
                digests = self.digests[c].setdefault(owner[i], (set(), set()))
                digests[0 if order[i] == 0 else 1].add(verdict.stdout_sha256 or "")
            if verdict.verdict != Verdict.PASS:
                return batch.key(i), RunFailure(
                    order[i] != 0,
                    f"{batch.who(i)} failed in timing run {i + 1} of {len(order)}"
                    f"{' on a fresh input' if fresh else ''}: "
                    f"{verdict.verdict}: {verdict.message}",
                    single,
                    i,
                    verdict.verdict,
                    stdin=test.stdin if fresh else None,
                    difference=verdict.difference,
                    serial=batch.serials.get(batch.feed[i]) if fresh else None,
                )
        if len(records) < len(order):
            return _unfinished_run(batch, result, len(records))
        return None


class SandboxExecutor(SharedSandboxExecutor):
    """Runs baseline (A) and one candidate (B) alternately in the sandbox on a locked core
    (AB, BA, ...): the one-candidate case of SharedSandboxExecutor, as a BatchExecutor."""

    def __init__(
        self,
        sandbox: Sandbox,
        baseline: str | os.PathLike[str],
        candidate: str | os.PathLike[str],
        tests: Sequence[TestCase],
        limits: Limits | None = None,
        lock: CoreLock | None = None,
        check_output: bool = True,
        priority: Literal["normal", "high", "realtime"] = "realtime",
        candidate_wall_s: float | None = None,
    ) -> None:
        """Wide because it keeps SharedSandboxExecutor's parameters, in the same order, for one
        candidate."""
        super().__init__(
            sandbox,
            baseline,
            [candidate],
            tests,
            limits,
            lock,
            check_output,
            priority,
            [candidate_wall_s],
        )

    @property
    def outputs(self) -> dict[int, tuple[set[str], set[str]]]:
        """sha256 of every run's stdout, per test: (baseline digests, candidate digests)."""
        return self.digests[0]

    def run_batch(self, requests: Sequence[RoundRequest]) -> dict[int, Round]:
        rounds = self.run_candidates(
            [CandidateRoundRequest(0, req.test, req.pairs, req.warmup_pairs) for req in requests]
        )
        return {key.test: rnd for key, rnd in rounds.items()}

    def run_round(self, pairs: int, warmup_pairs: int) -> Round:
        """One test (the first): a PairExecutor for single-test callers."""
        return self.run_batch([RoundRequest(0, pairs, warmup_pairs)])[0]


def _block_order(inside: Sequence[int], turn: int) -> list[int]:
    """The runs of one block of a fixed test: the baseline (-1) and each candidate once,
    in the cyclic order (A, B1, .., Bk) rotated by `turn`.

    Successive blocks rotate by one, so over k + 1 blocks every binary takes every place
    once (a linear drift cancels in each candidate's pairs), and with two or more
    candidates no binary ever runs twice in a row. Both matter for what a shared baseline
    gives each candidate: a run that directly follows its own binary finds that binary's
    code and data still in the caches, and the earlier plan (A B1 .. Bk, then Bk .. B1 A)
    gave that repeat to the baseline and the last candidate in every other block and to no
    other candidate, a bias of its own in those candidates' ratios. With one candidate this
    is AB, BA, AB, ...: both binaries repeat equally at the block boundaries."""
    cycle = [-1, *inside]
    r = turn % len(cycle)
    return cycle[r:] + cycle[:r]


class _BlockPair(NamedTuple):
    """One candidate's pair in one block, by run number in the sandbox."""

    baseline_run: int  # the block's baseline run
    candidate_run: int  # the candidate's own run
    sharers: int  # candidates in the block, who share its baseline run


class _CandidatePlan(NamedTuple):
    """One (candidate, test) of a batch: its blocks, and how many of the first are
    warm-ups."""

    key: CandidateTest
    blocks: list[_BlockPair]
    warmup_pairs: int


@dataclass(frozen=True)
class _TimedSandbox:
    """One batch's sandbox run on a timing core, and what surrounded it."""

    result: RunResult
    seconds: float  # how long the sandbox ran (the core held)
    waited_s: float  # how long it waited for the core
    load_before: float
    load_after: float

    def empty_round(self) -> Round:
        """A Round with this sandbox's circumstances and no pairs yet."""
        return Round(
            pairs=[],
            env_pad=self.result.env_pad,
            cpus=self.result.cpus,
            load_before=self.load_before,
            load_after=self.load_after,
            priority=self.result.priority,
            waited_s=self.waited_s,
        )


def _first_test_of_each_candidate(group: Sequence[CandidateRoundRequest]) -> list[CandidateTest]:
    """Each candidate of a group with the first test it was asked for."""
    first_test: dict[int, int] = {}
    for req in group:
        first_test.setdefault(req.candidate, req.test)
    return [CandidateTest(c, i) for c, i in first_test.items()]


@dataclass
class _Batch:
    """The runs of one sandbox session, by run number."""

    # The candidates of the session (binary k + 1 is candidate cands[k]; binary 0 is the
    # baseline) and its tests (input slot k is test tests[k]).
    cands: list[int] = field(default_factory=list)
    tests: list[int] = field(default_factory=list)
    # The sandbox's inputs: a fixed test's stdin once, a fresh input once per pair.
    inputs: list[bytes] = field(default_factory=list)
    # Per run: its binary, its input slot, its test, its candidate (-1: the baseline), the
    # candidates it serves (a baseline run: every candidate of its block) and, for a
    # candidate's run on a fresh input, the run of the baseline on that input (else -1).
    order: list[int] = field(default_factory=list)
    feed: list[int] = field(default_factory=list)
    owner: list[int] = field(default_factory=list)
    cand: list[int] = field(default_factory=list)
    block: list[tuple[int, ...]] = field(default_factory=list)
    partner: list[int] = field(default_factory=list)
    # The draw serial of each fresh input slot.
    serials: dict[int, int] = field(default_factory=dict)
    # Per (candidate, test): its blocks and how many of the first are warm-ups.
    plan: list[_CandidatePlan] = field(default_factory=list)
    out_bytes: int = 0  # expected output of all runs, with a margin per run

    def add(self, binary: int, slot: int, test: int, cand: int, partner: int) -> None:
        """One run (its `block` entry is appended by the planner)."""
        self.order.append(binary)
        self.feed.append(slot)
        self.owner.append(test)
        self.cand.append(cand)
        self.partner.append(partner)

    def who(self, i: int) -> str:
        return "baseline" if self.order[i] == 0 else "candidate"

    def key(self, i: int) -> CandidateTest:
        """(candidate, test) that run `i` is charged to: its own, or for a baseline run the
        candidate beside it in its block (the first candidate next to it: nothing else ran
        between the two)."""
        return CandidateTest(
            self.block[i][0] if self.cand[i] == -1 else self.cand[i], self.owner[i]
        )


def _unfinished_run(batch: _Batch, result: RunResult, i: int) -> tuple[CandidateTest, RunFailure]:
    """Run `i` did not finish and every run before it passed: why the sandbox stopped, and
    whether that is plainly the candidate's fault (a stop we cannot explain is not; then
    time_candidates decides by running the baseline alone)."""
    if result.timed_out:
        why, verdict = "exceeded the whole batch's wall-clock limit", Verdict.TIMEOUT
    elif result.launcher_lost:
        why, verdict = "the program interfered with the launcher", Verdict.SANDBOX_VIOLATION
    else:
        why, verdict = "the sandbox stopped early", Verdict.INFRA_ERROR
    return batch.key(i), RunFailure(
        batch.order[i] != 0 and verdict != Verdict.INFRA_ERROR,
        f"{batch.who(i)} failed in timing run {i + 1} of {len(batch.order)}: {verdict}: {why}",
        None,
        i,
        verdict,
    )


def _split_pairs(
    rnd: Round,
    records: Sequence[LaunchRecord],
    blocks: Sequence[_BlockPair],
    warmup: int,
    overhead: float,
) -> None:
    """One candidate's runs on one test as (baseline, candidate) timings, block by block;
    its warm-ups are kept apart. Its time is its own runs, its share of each baseline run
    (split evenly among the candidates of that block), and `overhead`, its share of the
    batch's fixed cost."""
    timed = [
        (RunTiming.from_record(records[base]), RunTiming.from_record(records[own]))
        for base, own, _ in blocks
    ]
    rnd.warmups = timed[:warmup]
    rnd.pairs = timed[warmup:]
    rnd.seconds = overhead + sum(
        records[own].wall_time_s + records[base].wall_time_s / shared
        for base, own, shared in blocks
    )
    rnd.charged_runs = sum(1.0 + 1.0 / shared for _, _, shared in blocks)
