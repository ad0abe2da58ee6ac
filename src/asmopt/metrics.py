"""Suite metrics: the reference system's definitions, exactly, and strict ones.

An "answer" is one candidate for one program (a (program, sample) pair). Answers whose
verdict is `infra_error`, or whose speedup measurement failed on our side, are left out of
every denominator and counted apart: our failures are never the policy's.

Reference metrics (docs/supercoder.md; comparable with the published tables):
* compile %   = answers that assembled and linked / answers;
* test pass % = answers that passed every test / answers (a copy of the input passes);
* speedup     = geometric mean over answers of the answer's speedup, where an answer that
                passes every test scores the arithmetic mean over its tests of
                max(1.0, per-test speedup), and every other answer (compile failure, any
                failed test) scores 1.0. A copy of the baseline scores 1.0.
* %Opt (point)  = correct answers whose point-estimate speedup is >= 1.10 (PIE's
                  definition; an answer whose interval reaches below 1.0 can count).

Strict metrics (what we report as the headline; intervals from measure/):
* significantly faster % = correct, reliably measured answers whose program interval lies
                           above 1.0 (`strict_wins`);
* %Opt (strict)          = the significantly faster answers whose interval's lower bound
                           is >= 1.10: a subset of them by construction, so the two counts
                           can never disagree, and an unreliable answer is never a win;
* geomean (correct)      = geometric mean of unfloored program speedups over correct answers
                           that have one (measured, or 1.0 for copies);
* significantly slower % = correct answers whose program interval lies below 1.0;
* copy %                 = answers that are the baseline after canonicalisation.
The four shares are over all answers, so they are comparable across policies whatever
their pass rates.

Every rate and speedup over answers is computed here, once: `compute_metrics` for judged
and measured answers, `verdict_rates` for the build and pass rates of bare verdicts (the
summary of `asmopt eval` and the trainers' logs), `outcome_shares` for the share of each
outcome. Callers format and log these numbers; they do not recompute them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from asmopt.judge import BUILD_FAILURES, Verdict

PIE_OPT_THRESHOLD = 1.10


def share(count: float, total: int) -> float | None:
    """`count / total`, or None when there is nothing to divide by: the rate of no answers
    is unknown, and reporting 0 would read as "every answer failed"."""
    return count / total if total else None


def verdict_rates(verdicts: Iterable[str]) -> dict[str, float | None]:
    """Build and pass rates over answers' overall verdicts.

    `infra_error` is left out of both denominators (our failure is never the policy's);
    an answer built unless its verdict is a build failure (extraction, assembly, link)."""
    judged = [str(v) for v in verdicts if str(v) != Verdict.INFRA_ERROR]
    return {
        "build_rate": share(sum(v not in BUILD_FAILURES for v in judged), len(judged)),
        "pass_rate": share(sum(v == Verdict.PASS for v in judged), len(judged)),
    }


def outcome_shares(outcomes: Sequence[Any]) -> dict[str, float]:
    """The share of each distinct outcome over all answers, infrastructure errors included
    (they are a share of the work done), keyed by the outcome's text, sorted."""
    counts = Counter(str(o) for o in outcomes)
    return {k: c / len(outcomes) for k, c in sorted(counts.items())}


@dataclass(frozen=True)
class Answer:
    """What metrics need to know about one answer."""

    program_id: str
    sample: int = 0
    verdict: Verdict = Verdict.PASS
    built: bool = True
    correct: bool = True
    is_copy: bool = False
    # "measured", "copy", "unmeasurable", "infra_error", "not_measured" (see MeasureStatus)
    measure_status: str = "not_measured"
    speedup: float | None = None
    low: float | None = None
    high: float | None = None
    test_speedups: tuple[float, ...] = ()
    reliable: bool = True

    @property
    def infra(self) -> bool:
        return self.verdict == Verdict.INFRA_ERROR or (
            self.correct and self.measure_status == "infra_error"
        )

    @property
    def has_speedup(self) -> bool:
        return self.correct and self.measure_status in ("measured", "copy")


def reference_answer_speedup(answer: Answer) -> float:
    """The reference harness's score of one answer: mean of per-test speedups floored at 1.0
    if every test passes, else 1.0; identical-to-baseline answers score 1.0."""
    if not answer.correct or answer.is_copy or answer.measure_status != "measured":
        return 1.0
    if not answer.test_speedups:
        return 1.0
    return sum(max(1.0, s) for s in answer.test_speedups) / len(answer.test_speedups)


def strict_wins(answers: Iterable[Answer]) -> list[Answer]:
    """Correct answers measured reliably whose whole interval is above 1.0: the only
    answers the strict block counts as faster (significantly faster and strict %Opt)."""
    return [
        a
        for a in answers
        if a.correct
        and a.measure_status == "measured"
        and a.reliable
        and a.low is not None
        and a.low > 1.0
    ]


def strict_opt(answers: Iterable[Answer], threshold: float = PIE_OPT_THRESHOLD) -> list[Answer]:
    """The strict wins whose interval's lower bound reaches `threshold`."""
    return [a for a in strict_wins(answers) if (a.low or 0.0) >= threshold]


def geometric_mean(values: Sequence[float]) -> float | None:
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass
class Metrics:
    answers: int
    infra_errors: int
    programs: int
    # reference
    compile_rate: float | None
    pass_rate: float | None
    reference_speedup: float | None
    pie_opt_point: float | None
    # strict
    significantly_faster: float | None
    pie_opt: float | None
    geomean_correct: float | None
    significantly_slower: float | None
    copy_rate: float | None
    measured: int = 0
    unreliable: int = 0
    unmeasurable: int = 0
    counts: dict[Verdict, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "answers": self.answers,
            "programs": self.programs,
            "infra_errors": self.infra_errors,
            "reference": {
                "compile_rate": self.compile_rate,
                "pass_rate": self.pass_rate,
                "speedup": self.reference_speedup,
                "pie_opt_point": self.pie_opt_point,
            },
            "strict": {
                "significantly_faster": self.significantly_faster,
                "pie_opt": self.pie_opt,
                "geomean_correct": self.geomean_correct,
                "significantly_slower": self.significantly_slower,
                "copy_rate": self.copy_rate,
            },
            "measured": self.measured,
            "unreliable": self.unreliable,
            "unmeasurable": self.unmeasurable,
            "counts": {str(v): n for v, n in self.counts.items()},
        }


def compute_metrics(answers: Sequence[Answer]) -> Metrics:
    """Reference and strict metrics over answers (see the module docstring)."""
    judged = [a for a in answers if not a.infra]
    n = len(judged)
    correct = [a for a in judged if a.correct]
    with_speedup = [a for a in correct if a.has_speedup and a.speedup is not None]
    measured = [a for a in correct if a.measure_status == "measured"]
    counts: dict[Verdict, int] = {}
    for a in judged:
        counts[a.verdict] = counts.get(a.verdict, 0) + 1
    return Metrics(
        answers=n,
        infra_errors=len(answers) - n,
        programs=len({a.program_id for a in answers}),
        compile_rate=share(sum(a.built for a in judged), n),
        pass_rate=share(len(correct), n),
        reference_speedup=geometric_mean([reference_answer_speedup(a) for a in judged]),
        pie_opt_point=share(
            sum(
                a.measure_status == "measured" and (a.speedup or 0) >= PIE_OPT_THRESHOLD
                for a in correct
            ),
            n,
        ),
        significantly_faster=share(len(strict_wins(correct)), n),
        pie_opt=share(len(strict_opt(correct)), n),
        geomean_correct=geometric_mean([a.speedup for a in with_speedup if a.speedup]),
        significantly_slower=share(
            sum(a.measure_status == "measured" and (a.high or 2) < 1.0 for a in correct), n
        ),
        copy_rate=share(sum(a.is_copy for a in judged), n),
        measured=len(measured),
        unreliable=sum(not a.reliable for a in measured),
        unmeasurable=sum(a.measure_status == "unmeasurable" for a in correct),
        counts=dict(sorted(counts.items())),
    )
