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

Strict metrics (what we report as the headline; intervals from measure/):
* significantly faster % = correct answers whose program interval lies above 1.0;
* %Opt (PIE)             = correct answers with speedup >= 1.10 (point estimate);
* geomean (correct)      = geometric mean of unfloored program speedups over correct answers
                           that have one (measured, or 1.0 for copies);
* significantly slower % = correct answers whose program interval lies below 1.0;
* copy %                 = answers that are the baseline after canonicalisation.
The four shares are over all answers, so they are comparable across policies whatever
their pass rates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PIE_OPT_THRESHOLD = 1.10


@dataclass(frozen=True)
class Answer:
    """What metrics need to know about one answer."""

    program_id: str
    sample: int = 0
    verdict: str = "pass"
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
        return self.verdict == "infra_error" or (
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
    # strict
    significantly_faster: float | None
    pie_opt: float | None
    geomean_correct: float | None
    significantly_slower: float | None
    copy_rate: float | None
    measured: int = 0
    unreliable: int = 0
    unmeasurable: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "answers": self.answers,
            "programs": self.programs,
            "infra_errors": self.infra_errors,
            "reference": {
                "compile_rate": self.compile_rate,
                "pass_rate": self.pass_rate,
                "speedup": self.reference_speedup,
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
            "counts": dict(self.counts),
        }


def compute_metrics(answers: Sequence[Answer]) -> Metrics:
    """Reference and strict metrics over answers (see the module docstring)."""
    judged = [a for a in answers if not a.infra]
    n = len(judged)

    def share(k: int) -> float | None:
        return k / n if n else None

    correct = [a for a in judged if a.correct]
    with_speedup = [a for a in correct if a.has_speedup and a.speedup is not None]
    measured = [a for a in correct if a.measure_status == "measured"]
    counts: dict[str, int] = {}
    for a in judged:
        counts[a.verdict] = counts.get(a.verdict, 0) + 1
    return Metrics(
        answers=n,
        infra_errors=len(answers) - n,
        programs=len({a.program_id for a in answers}),
        compile_rate=share(sum(a.built for a in judged)),
        pass_rate=share(len(correct)),
        reference_speedup=geometric_mean([reference_answer_speedup(a) for a in judged]),
        significantly_faster=share(
            sum(a.measure_status == "measured" and (a.low or 0) > 1.0 for a in correct)
        ),
        pie_opt=share(
            sum(
                a.measure_status == "measured" and (a.speedup or 0) >= PIE_OPT_THRESHOLD
                for a in correct
            )
        ),
        geomean_correct=geometric_mean([a.speedup for a in with_speedup if a.speedup]),
        significantly_slower=share(
            sum(a.measure_status == "measured" and (a.high or 2) < 1.0 for a in correct)
        ),
        copy_rate=share(sum(a.is_copy for a in judged)),
        measured=len(measured),
        unreliable=sum(not a.reliable for a in measured),
        unmeasurable=sum(a.measure_status == "unmeasurable" for a in correct),
        counts=dict(sorted(counts.items())),
    )
