"""What a run's results say beside its samples: the summary (counts, rates and metrics,
metrics.py defining each) and the programs marked unfit (`record_unfit`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from asmopt.evaluate import SampleOutcome
from asmopt.judge import Verdict
from asmopt.measure.speedup import MeasureStatus
from asmopt.metrics import compute_metrics, verdict_rates
from asmopt.programs.model import Program

if TYPE_CHECKING:
    from asmopt.store import ResultStore

# Run metadata key: program id -> why its tests are inadequate (see record_unfit).
UNFIT_META_KEY = "unfit_programs"


def record_unfit(store: ResultStore, programs: Iterable[Program]) -> dict[str, str]:
    """Keep the evaluated programs marked unfit (docs/adequacy.md) in the run's metadata.

    Reports are built from the store alone, and a speedup or pass rate on tests that accept
    wrong answers must not be read without that warning beside it. Kept over sessions: a
    resumed run keeps what earlier sessions saw, and the programs of this session replace
    their earlier entries."""
    from asmopt.adequacy import unfit_programs

    programs = list(programs)
    found = unfit_programs(programs)
    now = {p.id for p in programs}
    stored = store.get_meta(UNFIT_META_KEY) or {}
    merged = {**{k: v for k, v in stored.items() if k not in now}, **found}
    if merged != stored:
        store.set_meta(UNFIT_META_KEY, merged)
    return found

def summarize(outcomes: Sequence[SampleOutcome]) -> dict[str, Any]:
    """Counts, rates and metrics; infra errors are excluded from the denominators and
    reported apart (metrics.py defines every number)."""
    verdicts = Counter(str(o.check.verdict) for o in outcomes)
    infra_errors = verdicts.get(str(Verdict.INFRA_ERROR), 0)
    rates = verdict_rates(str(o.check.verdict) for o in outcomes)
    metrics = compute_metrics([o.answer() for o in outcomes])
    measure_status = Counter(
        str(o.check.speedup.status) for o in outcomes if o.check.speedup is not None
    )
    return {
        "samples": len(outcomes),
        "programs": len({o.program_id for o in outcomes}),
        "judged": len(outcomes) - infra_errors,
        "infra_errors": infra_errors,
        "measure_infra_errors": measure_status.get(str(MeasureStatus.INFRA_ERROR), 0),
        "build_rate": rates["build_rate"],
        "pass_rate": rates["pass_rate"],
        "verdicts": dict(sorted(verdicts.items())),
        "measurements": dict(sorted(measure_status.items())),
        "copies": sum(o.is_copy for o in outcomes),
        "resumed": sum(o.resumed for o in outcomes),
        "metrics": metrics.to_dict(),
    }
