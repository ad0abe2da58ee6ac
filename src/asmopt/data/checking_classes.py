"""Checking classes: draws of a learnt class at the sample's sizes and at the low end of its
ranges, which grade correctness beside the class but are never timed.

A class grown past its sample (counts up to 16 times the test's, ranges widened to a power
of ten) exercises a program's loops at scale, but rarely reaches what the sample was
written to reach: `impossible` when three stamps do not cover the need, a pair whose sum is
13, two equal values, an empty answer. Its draws then test less than the fixed tests do
(measure/coverage.py counts it), and a candidate that is wrong only there passes every
grading. Test sets of programming contests hold both kinds (random cases of every size,
and edge values: small values, equal elements); a learnt generator holds both too. Per
class accepted at a level that grows, up to two variants:

* `sample`: the class at the sample's own sizes and ranges (the mutator's `full` level:
  counts and ranges as seen), the inputs the fixed tests stand for, drawn afresh;
* `low`: the accepted class with every drawn integer narrowed to the ten lowest values of
  its range (around zero where the range holds it) and every drawn string to the first two
  characters of its alphabet (a column kept in order with no value twice keeps its range,
  which may hold no fewer values than its rows); a var that a count or a length names is
  kept as drawn, so the sizes stay, and a bound that names another var is narrowed from
  it, so the rows' relations (`l <= r`, an index below n) stay. Ties, equal halves, small
  sums and zeros then come often.

Each variant is judged like any level (both builds agree, the sanitizers stay quiet:
data/mutator.py) and kept only if all its draws pass, draws no class kept before draws,
and fewer than MAX_CHECKING_CLASSES were kept before it. It is named `<class>.sample` or
`<class>.low` and no fixed test stands for it, so every grading checks K of its draws
and nothing times it. Its entropy does not matter for the rule that no answer can be
precomputed (asmopt.entropy): it is graded beside the timed classes, never instead of
them, so it can only make a precomputed answer fail more.
"""

from __future__ import annotations

import copy
import re
from typing import Any

# The width of a narrowed integer range: values lo .. lo + LOW_WIDTH - 1.
LOW_WIDTH = 10
# Characters a narrowed string is drawn from: the first of its alphabet.
LOW_ALPHABET = 2
# Checking classes per program at most (the first classes' first): every grading draws K
# inputs of each, and the adequacy mutants run on them too. Eight keep a grading's drawn
# runs within a few times a one-class program's while covering the samples of most
# imported programs (their tests are few).
MAX_CHECKING_CLASSES = 8
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def checking_name(size_class: str, suffix: str) -> str:
    """The name of a class's checking variant (within the generator's 64-character names)."""
    return f"{size_class[: 63 - len(suffix)]}.{suffix}"


def variants(
    accepted: dict[str, Any], sample: dict[str, Any] | None
) -> list[tuple[str, dict[str, Any]]]:
    """(suffix, body) of each checking variant of a class accepted with body `accepted`:
    `sample` (the class's sample-sized body, where it differs) and `low` (where narrowing
    changes anything)."""
    out: list[tuple[str, dict[str, Any]]] = []
    if sample is not None and sample != accepted:
        out.append(("sample", sample))
    low = low_body(accepted)
    if low != accepted and all(low != body for _, body in out):
        out.append(("low", low))
    return out


def low_body(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with its free integers and strings narrowed (module docstring)."""
    out = copy.deepcopy(body)
    _narrow_vars(out.get("vars") or {}, _named(body))
    return out


def _named(node: Any) -> set[str]:
    """The var names a count or a length of a body names (its sizes)."""
    names: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("count", "length") and isinstance(value, str):
                names.update(_NAME.findall(value))
            else:
                names |= _named(value)
    elif isinstance(node, list):
        for item in node:
            names |= _named(item)
    return names


def _narrow_vars(vars_: dict[str, Any], named: set[str]) -> None:
    for name, rule in vars_.items():
        if not isinstance(rule, dict):
            continue
        if "repeat" in rule and isinstance(rule["repeat"], dict):
            _narrow_vars(rule["repeat"].get("vars") or {}, named)
        elif name in named:
            continue
        elif "int" in rule and not rule.get("distinct"):  # a column in order, none twice
            rule["int"] = _narrow_range(rule["int"])
        elif "ints" in rule and isinstance(rule["ints"], dict) and not rule["ints"].get("distinct"):
            rule["ints"]["range"] = _narrow_range(rule["ints"].get("range"))
        elif "text" in rule and isinstance(rule["text"], dict):
            alphabet = str(rule["text"].get("alphabet", ""))
            if len(alphabet) > LOW_ALPHABET:
                rule["text"]["alphabet"] = alphabet[:LOW_ALPHABET]


def _narrow_range(pair: Any) -> Any:
    """[lo, hi] narrowed to LOW_WIDTH values: from lo, or around 0 where [lo, hi] holds it;
    a bound that is an expression stays one (`min(hi, lo + 9)`)."""
    if not isinstance(pair, list) or len(pair) != 2:
        return pair
    lo, hi = pair
    numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in (lo, hi))
    if numbers:
        if hi - lo < LOW_WIDTH:
            return pair
        if lo <= 0 <= hi:
            low = max(lo, -(LOW_WIDTH // 2) + 1)
            return [low, min(hi, low + LOW_WIDTH - 1)]
        return [lo, lo + LOW_WIDTH - 1]
    if isinstance(lo, int | str) and isinstance(hi, int | str) and not isinstance(lo, bool):
        return [lo, f"min({hi}, ({lo}) + {LOW_WIDTH - 1})"]
    return pair
