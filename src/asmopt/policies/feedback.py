"""Compact feedback on an attempt, for refinement rounds and multi-turn environments.

A model revising its answer needs the few facts that explain the verdict: the first
assembler errors, the first failing test's difference, or the measured speedup and whether
it is significant. Long messages are cut so feedback never dominates the prompt.
"""

from __future__ import annotations

MAX_FEEDBACK_CHARS = 1200


def format_feedback(
    verdict: str,
    message: str = "",
    speedup: float | None = None,
    low: float | None = None,
    high: float | None = None,
    is_copy: bool = False,
) -> str:
    lines = [f"Verdict: {verdict}."]
    if verdict == "pass":
        if is_copy:
            lines.append(
                "Your answer is the baseline itself (after removing comments, "
                "whitespace and label names); it earns nothing. Change the code."
            )
        elif speedup is not None and low is not None and high is not None:
            if low > 1.0:
                note = "significantly faster than the baseline"
            elif high < 1.0:
                note = "significantly SLOWER than the baseline"
            else:
                note = "not distinguishable from the baseline"
            lines.append(
                f"All tests passed. Measured speedup {speedup:.3f}x "
                f"(95% interval {low:.3f}-{high:.3f}): {note}."
            )
        else:
            lines.append("All tests passed.")
    elif message:
        lines.append(message.strip())
    text = "\n".join(lines)
    if len(text) > MAX_FEEDBACK_CHARS:
        text = text[: MAX_FEEDBACK_CHARS - 15] + "\n[... cut ...]"
    return text
