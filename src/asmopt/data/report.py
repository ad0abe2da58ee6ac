"""What an import, build or export kept and dropped, and why.

Every dataset step ends with a `DataReport`: the ids it kept, one `Drop` per item it left
out (with a reason code from `REASONS` and a human detail naming the file or the failure),
counters for items filtered by design (e.g. CodeNet submissions that are not C), and free
notes. Reports are printed as a summary by the CLI, written as JSON beside a suite, and
merged when steps are chained, so a researcher can always say how many programs were lost
at which step and why.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Reason codes and what they mean. Codes are stable (they appear in JSON reports); the text
# is what a person reads in the summary.
REASONS: dict[str, str] = {
    # bad input
    "missing_file": "a required file is missing",
    "unreadable": "a file could not be read",
    "outside_pool": "a file is a symlink or path leading outside the imported tree",
    "not_regular_file": "a file is a FIFO, device or other non-regular file (never opened)",
    "not_utf8": "source or test text is not UTF-8",
    "io_mismatch": "test inputs and expected outputs do not pair up",
    "no_tests": "no test inputs",
    "missing_column": "a required column or field is missing",
    "bad_row": "a row or record is malformed",
    "duplicate_id": "an id already used by an earlier item",
    "invalid_program": "the program description is invalid",
    "unsupported": "uses a feature this format cannot express",
    "not_loadable": "the suite loader would refuse the program once written",
    # builder / verification
    "duplicate_source": "same normalised source as an earlier program",
    "compile_failed": "gcc could not compile it",
    "crash": "the reference build crashed",
    "timeout": "the reference build timed out",
    "nonzero_exit": "the reference build exited with a non-zero status",
    "output_limit": "the reference build printed too much",
    "sandbox_violation": "the reference build broke a sandbox rule",
    "infra_error": "our side failed (sandbox or toolchain); not the program's fault",
    "below_speedup": "-O0/-O3 speedup under the threshold",
    "beyond_top_n": "not among the top N by speedup",
    "o3_fails_tests": "the -O3 build fails its own tests",
    "too_long": "prompt + answer exceed the token budget",
    "prompt_too_long": "the prompt exceeds the trainer's prompt length (--max-prompt-tokens)",
    "verify_failed": "the -O0 or -O3 build does not pass the imported tests",
    "ill_defined_tests": "the -O0, -O3 and sanitizer builds disagree on every fixed test",
}


@dataclass(frozen=True)
class Drop:
    """One item left out: which, the reason code, and the specific detail."""

    item: str
    reason: str
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"item": self.item, "reason": self.reason, "detail": self.detail}


@dataclass
class DataReport:
    """Kept ids, drops with reasons, filter counters and notes for one dataset step."""

    step: str
    kept: list[str] = field(default_factory=list)
    dropped: list[Drop] = field(default_factory=list)
    filtered: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def keep(self, item: str) -> None:
        self.kept.append(item)

    def drop(self, item: str, reason: str, detail: str = "") -> None:
        if reason not in REASONS:
            raise ValueError(f"unknown drop reason {reason!r}")
        self.dropped.append(Drop(item, reason, " ".join(detail.split())[:500]))

    def filter(self, what: str, n: int = 1) -> None:
        """Count items skipped by design (not errors), e.g. 'language is not C'."""
        self.filtered[what] += n

    def note(self, text: str) -> None:
        self.notes.append(text)

    def reason_counts(self) -> dict[str, int]:
        counts = Counter(d.reason for d in self.dropped)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def extend(self, other: DataReport) -> None:
        """Fold another step's drops, filters and notes into this one (kept is not merged)."""
        self.dropped.extend(other.dropped)
        self.filtered.update(other.filtered)
        self.notes.extend(other.notes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "kept": len(self.kept),
            "dropped": len(self.dropped),
            "reasons": self.reason_counts(),
            "filtered": dict(sorted(self.filtered.items())),
            "notes": list(self.notes),
            "stats": self.stats,
            "kept_ids": list(self.kept),
            "drops": [d.to_dict() for d in self.dropped],
        }

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        return path

    def summary_lines(self, max_items: int = 20) -> list[str]:
        """A short human summary: totals, counts per reason, the first dropped items."""
        lines = [f"{self.step}: kept {len(self.kept)}, dropped {len(self.dropped)}"]
        for reason, n in self.reason_counts().items():
            lines.append(f"  {n:6d}  {reason:18s} {REASONS[reason]}")
        for what, n in sorted(self.filtered.items()):
            lines.append(f"  {n:6d}  skipped by filter: {what}")
        if self.dropped:
            lines.append("dropped:")
            for d in self.dropped[:max_items]:
                lines.append(f"  {d.item}: {d.reason}" + (f" ({d.detail})" if d.detail else ""))
            if len(self.dropped) > max_items:
                lines.append(f"  ... and {len(self.dropped) - max_items} more (see --json)")
        lines.extend(f"note: {n}" for n in self.notes)
        return lines
