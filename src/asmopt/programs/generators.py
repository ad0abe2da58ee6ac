"""Input generators: how to draw a fresh input of a program, so no run's input is known.

A fixed test's answer is fixed and knowable: a candidate can memorise it (a lookup table
keyed by a hash of stdin) or replay it from an earlier run through any channel that
survives between runs. Neither works on an input nobody has seen before. So a program
declares, as data, how to draw an input of each *size class* ("edge", "small", ...,
"heavy") and which class each fixed test stands for; every grading run then draws its
inputs from a secret seed, and the trusted baseline's output on the same input is the
expected output (evaluate.py, measure/timing/executor.py).

The generator is a declarative spec, never code: it arrives with a suite (hand-written or
learnt from an imported program's own test inputs, data/mutator.py) and is interpreted
here, so nothing a dataset brings is ever executed. The spec (docs/suite_format.md,
"Input generators"):

    {"version": 1,
     "classes": {"small": {"template": "{n} {seed}\\n",
                           "vars": {"n": {"int": [1, 100]}, "seed": {"int": [1, 1e9]}}}},
     "tests": {"t1": "small"}}

A class's `template` is text with `{name}` placeholders (`{{` and `}}` stand for braces);
its `vars` are drawn in the order written, each by one rule:

| rule | draws |
|---|---|
| `{"int": [lo, hi]}` | an integer in [lo, hi]; `"log": true` draws log-uniformly |
| `{"float": [lo, hi], "digits": d}` | a decimal number with d digits after the point |
| `{"choice": [v, ...]}` | one of the values as written (`"weights": [...]` optional) |
| `{"text": {"length": L, "alphabet": "abc"}}` | L characters of the alphabet |
| `{"mutate": {"of": "a", "rate": r, "alphabet": "abc"}}` | var a with a share r of its |
| | characters substituted, deleted or doubled |
| `{"ints": {"count": N, "range": [lo, hi], "sep": " ", "per_line": k}}` | N integers |
| `{"repeat": {"count": N, "template": "...", "vars": {...}, "sep": ""}}` | N records, |
| | each drawn like a class |
| `{"value": X}` | the number or expression X (over earlier vars) |

Every bound, count, length and rate may be a number or an expression over earlier vars
(`"n * (n - 1) // 2"`, `"min(n, 5)"`; + - * // % and min/max/abs only). Drawing is
deterministic in the seed (splitmix64), so any verdict can be drawn again exactly.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asmopt.errors import InputError

GENERATOR_VERSION = 1
# What one drawn input may be: far above any built-in test, far below what a run may read.
MAX_DRAWN_BYTES = 16 << 20
MAX_REPEAT = 4_000_000
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_CLASS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|[{}]")
_RULES = ("int", "float", "choice", "text", "mutate", "ints", "repeat", "value")
_MASK = 0xFFFFFFFFFFFFFFFF


class GeneratorError(InputError):
    """An input generator spec is malformed, or a draw broke one of its limits."""


# ---------------------------------------------------------------------------- randomness
class Rng:
    """splitmix64: tiny, fast enough, and the same on every machine and Python version, so
    a recorded seed draws the same input anywhere."""

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """Uniform in [0, n) (rejection sampling: no modulo bias, any n)."""
        if n <= 0:
            raise GeneratorError(f"cannot draw below {n}")
        bits = max(1, n.bit_length())
        while True:
            v = 0
            for _ in range(-(-bits // 64)):
                v = (v << 64) | self.next()
            v >>= (-(-bits // 64)) * 64 - bits
            if v < n:
                return v

    def between(self, lo: int, hi: int) -> int:
        return lo + self.below(hi - lo + 1)

    def unit(self) -> float:
        """Uniform in [0, 1)."""
        return (self.next() >> 11) / float(1 << 53)


def derive_seed(secret: int, *labels: object) -> int:
    """A 64-bit seed for one draw, from a grading's secret seed and what the draw is for
    (program, sample, purpose, class, index): draws never collide and none can be told
    from another without the secret."""
    h = hashlib.sha256(str(int(secret)).encode())
    for label in labels:
        h.update(b"\x00" + str(label).encode())
    return int.from_bytes(h.digest()[:8], "little")


# ---------------------------------------------------------------------------- expressions
_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Div: lambda a, b: a / b,
}
_FUNCS = {"min": min, "max": max, "abs": abs}


def _compile_expr(text: str, where: str, known: frozenset[str] | None = None) -> ast.expr:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise GeneratorError(f"{where}: {text!r} is not an expression") from None
    for node in ast.walk(tree):
        ok = isinstance(
            node,
            ast.Expression | ast.BinOp | ast.UnaryOp | ast.Constant | ast.Name | ast.Call
            | ast.Load | ast.USub | ast.UAdd | ast.operator,
        )
        if isinstance(node, ast.BinOp) and type(node.op) not in _BINOPS:
            ok = False
        if isinstance(node, ast.Constant) and not isinstance(node.value, int | float):
            ok = False
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords
        ):
            ok = False
        if not ok:
            raise GeneratorError(
                f"{where}: {text!r}: only numbers, earlier vars, + - * / // %, min, max and "
                "abs are allowed"
            )
        if (
            known is not None
            and isinstance(node, ast.Name)
            and node.id not in _FUNCS
            and node.id not in known
        ):
            raise GeneratorError(f"{where}: names {node.id!r} before it is drawn")
    return tree.body


def _eval_expr(node: ast.expr, env: Mapping[str, Any], where: str) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise GeneratorError(f"{where}: names {node.id!r} before it is drawn")
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        v = _eval_expr(node.operand, env, where)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval_expr(node.left, env, where), _eval_expr(node.right, env, where)
        try:
            return _BINOPS[type(node.op)](a, b)
        except (ZeroDivisionError, TypeError) as exc:
            raise GeneratorError(f"{where}: {exc}") from None
    if isinstance(node, ast.Call):
        args = [_eval_expr(a, env, where) for a in node.args]
        return _FUNCS[node.func.id](*args)  # type: ignore[attr-defined]
    raise GeneratorError(f"{where}: unsupported expression")


@dataclass(frozen=True)
class _Num:
    """A number or an expression over earlier vars."""

    expr: ast.expr | None
    const: float | int | None

    @classmethod
    def parse(cls, value: Any, where: str, known: frozenset[str] | None = None) -> _Num:
        if isinstance(value, bool):
            raise GeneratorError(f"{where}: expected a number or an expression, got {value!r}")
        if isinstance(value, int | float):
            if isinstance(value, float) and not math.isfinite(value):
                raise GeneratorError(f"{where}: {value!r} is not a finite number")
            return cls(None, int(value) if float(value).is_integer() else value)
        if isinstance(value, str):
            return cls(_compile_expr(value, where, known), None)
        raise GeneratorError(f"{where}: expected a number or an expression, got {value!r}")

    def get(self, env: Mapping[str, Any], where: str) -> float | int:
        v = self.const if self.expr is None else _eval_expr(self.expr, env, where)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise GeneratorError(f"{where}: expected a number, got {v!r}")
        return v

    def get_int(self, env: Mapping[str, Any], where: str) -> int:
        v = self.get(env, where)
        if isinstance(v, float):
            if not math.isfinite(v):
                raise GeneratorError(f"{where}: {v!r} is not finite")
            v = math.floor(v)
        return int(v)


# ---------------------------------------------------------------------------- the spec
def _pair(value: Any, where: str, known: frozenset[str]) -> tuple[_Num, _Num]:
    if not isinstance(value, list) or len(value) != 2:
        raise GeneratorError(f"{where}: expected [low, high], got {value!r}")
    return (
        _Num.parse(value[0], f"{where}[0]", known),
        _Num.parse(value[1], f"{where}[1]", known),
    )


def _keys(rule: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = set(rule) - allowed
    if unknown:
        raise GeneratorError(f"{where}: unknown keys {', '.join(sorted(unknown))}")


@dataclass(frozen=True)
class _Var:
    name: str
    kind: str
    args: tuple[tuple[str, Any], ...]

    def arg(self, key: str, default: Any = None) -> Any:
        return dict(self.args).get(key, default)


@dataclass(frozen=True)
class _Template:
    """A template and its vars: a class, or the record of a `repeat`."""

    parts: tuple[str | tuple[str], ...]  # literal text, or (var name,)
    vars: tuple[_Var, ...]

    @classmethod
    def parse(cls, data: Any, where: str, outer: frozenset[str] = frozenset()) -> _Template:
        if not isinstance(data, dict):
            raise GeneratorError(f"{where}: expected an object with 'template' and 'vars'")
        _keys(data, {"template", "vars", "count", "sep"}, where)
        template = data.get("template")
        if not isinstance(template, str):
            raise GeneratorError(f"{where}.template: expected a string")
        raw_vars = data.get("vars", {})
        if not isinstance(raw_vars, dict):
            raise GeneratorError(f"{where}.vars: expected an object")
        names: set[str] = set(outer)
        variables = []
        for name, rule in raw_vars.items():
            if not _NAME_RE.match(name):
                raise GeneratorError(f"{where}.vars: invalid var name {name!r}")
            variables.append(_parse_var(name, rule, f"{where}.vars.{name}", frozenset(names)))
            names.add(name)
        parts: list[str | tuple[str]] = []
        pos = 0
        for m in _PLACEHOLDER.finditer(template):
            if m.start() > pos:
                parts.append(template[pos : m.start()])
            tok = m.group(0)
            if tok in ("{{", "}}"):
                parts.append(tok[0])
            elif m.group(1) is None:
                raise GeneratorError(f"{where}.template: a lone {tok!r} (write {tok * 2})")
            else:
                if m.group(1) not in names:
                    raise GeneratorError(f"{where}.template: {{{m.group(1)}}} is not a var")
                parts.append((m.group(1),))
            pos = m.end()
        if pos < len(template):
            parts.append(template[pos:])
        return cls(tuple(parts), tuple(variables))

    def render(
        self,
        rng: Rng,
        env: dict[str, Any],
        budget: list[int],
        perturb: _Perturb | None = None,
    ) -> str:
        for var in self.vars:
            env[var.name] = _draw_var(var, rng, env, budget)
            if perturb is not None and var.name == perturb.var:
                env[var.name] = perturb.redraw(var, env[var.name], env, budget)
        out = []
        for part in self.parts:
            out.append(part if isinstance(part, str) else _text(env[part[0]]))
        text = "".join(out)
        budget[0] -= len(text)
        if budget[0] < 0:
            raise GeneratorError(f"a drawn input would exceed {MAX_DRAWN_BYTES} bytes")
        return text


def _text(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _parse_var(name: str, rule: Any, where: str, known: frozenset[str]) -> _Var:
    if not isinstance(rule, dict):
        raise GeneratorError(f"{where}: expected an object naming one rule ({', '.join(_RULES)})")
    kinds = [k for k in _RULES if k in rule]
    if len(kinds) != 1:
        raise GeneratorError(f"{where}: name exactly one rule of {', '.join(_RULES)}")
    kind = kinds[0]
    body = rule[kind]
    args: dict[str, Any] = {}
    if kind == "int":
        _keys(rule, {"int", "log"}, where)
        args["range"] = _pair(body, f"{where}.int", known)
        args["log"] = bool(rule.get("log", False))
    elif kind == "float":
        _keys(rule, {"float", "digits"}, where)
        args["range"] = _pair(body, f"{where}.float", known)
        digits = rule.get("digits", 6)
        if not isinstance(digits, int) or isinstance(digits, bool) or not 0 <= digits <= 17:
            raise GeneratorError(f"{where}.digits: expected an integer 0..17")
        args["digits"] = digits
    elif kind == "choice":
        _keys(rule, {"choice", "weights"}, where)
        if not isinstance(body, list) or not body or not all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in body
        ):
            raise GeneratorError(f"{where}.choice: expected a non-empty list of values")
        weights = rule.get("weights")
        if weights is not None and (
            not isinstance(weights, list)
            or len(weights) != len(body)
            or not all(isinstance(w, int | float) and w >= 0 for w in weights)
            or sum(weights) <= 0
        ):
            raise GeneratorError(f"{where}.weights: one non-negative number per value")
        args["values"] = tuple(body)
        args["weights"] = tuple(weights) if weights else None
    elif kind in ("text", "mutate", "ints", "repeat", "value"):
        if kind != "value":
            _keys(rule, {kind}, where)
        if kind == "value":
            _keys(rule, {"value"}, where)
            args["value"] = _Num.parse(body, f"{where}.value", known)
        elif not isinstance(body, dict):
            raise GeneratorError(f"{where}.{kind}: expected an object")
        elif kind == "text":
            _keys(body, {"length", "alphabet"}, f"{where}.text")
            args["length"] = _Num.parse(body.get("length", 0), f"{where}.text.length", known)
            args["alphabet"] = _alphabet(body.get("alphabet"), f"{where}.text.alphabet")
        elif kind == "mutate":
            _keys(body, {"of", "rate", "alphabet"}, f"{where}.mutate")
            of = body.get("of")
            if of not in known:
                raise GeneratorError(f"{where}.mutate.of: {of!r} is not an earlier var")
            args["of"] = of
            args["rate"] = _Num.parse(body.get("rate", 0.1), f"{where}.mutate.rate", known)
            args["alphabet"] = _alphabet(body.get("alphabet"), f"{where}.mutate.alphabet")
        elif kind == "ints":
            _keys(body, {"count", "range", "sep", "per_line"}, f"{where}.ints")
            args["count"] = _Num.parse(body.get("count", 0), f"{where}.ints.count", known)
            args["range"] = _pair(body.get("range"), f"{where}.ints.range", known)
            args["sep"] = _string(body.get("sep", " "), f"{where}.ints.sep")
            per_line = body.get("per_line", 0)
            if not isinstance(per_line, int) or isinstance(per_line, bool) or per_line < 0:
                raise GeneratorError(f"{where}.ints.per_line: expected an integer >= 0")
            args["per_line"] = per_line
        else:  # repeat
            _keys(body, {"count", "template", "vars", "sep"}, f"{where}.repeat")
            args["count"] = _Num.parse(body.get("count", 0), f"{where}.repeat.count", known)
            args["record"] = _Template.parse(body, f"{where}.repeat", known)
            args["sep"] = _string(body.get("sep", ""), f"{where}.repeat.sep")
    return _Var(name, kind, tuple(sorted(args.items())))


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise GeneratorError(f"{where}: expected a string")
    return value


def _alphabet(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise GeneratorError(f"{where}: expected a non-empty string")
    return value


def _count(num: _Num, env: Mapping[str, Any], where: str) -> int:
    n = num.get_int(env, where)
    if not 0 <= n <= MAX_REPEAT:
        raise GeneratorError(f"{where}: {n} is outside 0..{MAX_REPEAT}")
    return n


def _draw_var(var: _Var, rng: Rng, env: dict[str, Any], budget: list[int]) -> Any:
    where = var.name
    if var.kind == "int":
        lo_n, hi_n = var.arg("range")
        lo, hi = lo_n.get_int(env, where), hi_n.get_int(env, where)
        if hi < lo:
            raise GeneratorError(f"{where}: empty range [{lo}, {hi}]")
        if var.arg("log") and lo >= 1:
            a, b = math.log(lo), math.log(hi + 1)
            return min(hi, max(lo, int(math.exp(a + (b - a) * rng.unit()))))
        return rng.between(lo, hi)
    if var.kind == "float":
        lo_n, hi_n = var.arg("range")
        lo, hi = float(lo_n.get(env, where)), float(hi_n.get(env, where))
        if hi < lo:
            raise GeneratorError(f"{where}: empty range [{lo}, {hi}]")
        digits = var.arg("digits")
        return f"{lo + (hi - lo) * rng.unit():.{digits}f}"
    if var.kind == "choice":
        values, weights = var.arg("values"), var.arg("weights")
        if weights is None:
            return values[rng.below(len(values))]
        x, acc = rng.unit() * sum(weights), 0.0
        for v, w in zip(values, weights, strict=True):
            acc += w
            if x < acc:
                return v
        return values[-1]
    if var.kind == "text":
        n = _count(var.arg("length"), env, where)
        alphabet = var.arg("alphabet")
        _spend(budget, n)
        return "".join(alphabet[rng.below(len(alphabet))] for _ in range(n))
    if var.kind == "mutate":
        return _mutate(str(env[var.arg("of")]), rng, var.arg("rate").get(env, where),
                       var.arg("alphabet"), budget)
    if var.kind == "ints":
        n = _count(var.arg("count"), env, where)
        lo_n, hi_n = var.arg("range")
        lo, hi = lo_n.get_int(env, where), hi_n.get_int(env, where)
        if hi < lo and n:
            raise GeneratorError(f"{where}: empty range [{lo}, {hi}]")
        sep, per_line = var.arg("sep"), var.arg("per_line")
        values = [str(rng.between(lo, hi)) for _ in range(n)]
        if per_line:
            text = "\n".join(
                sep.join(values[i : i + per_line]) for i in range(0, len(values), per_line)
            )
        else:
            text = sep.join(values)
        _spend(budget, len(text))
        return text
    if var.kind == "repeat":
        n = _count(var.arg("count"), env, where)
        record: _Template = var.arg("record")
        out = []
        for _ in range(n):
            out.append(record.render(rng, dict(env), budget))
        return var.arg("sep").join(out)
    return var.arg("value").get(env, where)


def _spend(budget: list[int], n: int) -> None:
    if n > budget[0]:
        raise GeneratorError(f"a drawn input would exceed {MAX_DRAWN_BYTES} bytes")


def _mutate(text: str, rng: Rng, rate: float, alphabet: str, budget: list[int]) -> str:
    """A related copy of `text`: each character is kept, substituted, deleted or doubled
    (substitution, deletion, insertion in equal shares of `rate`)."""
    out = []
    third = max(0.0, min(1.0, float(rate))) / 3
    for ch in text:
        u = rng.unit()
        if u < third:
            out.append(alphabet[rng.below(len(alphabet))])
        elif u < 2 * third:
            continue
        elif u < 3 * third:
            out.append(ch)
            out.append(alphabet[rng.below(len(alphabet))])
        else:
            out.append(ch)
    _spend(budget, len(out))
    return "".join(out)


# ---------------------------------------------------------------------------- entropy
# How much a draw of a class can be known in advance is the min-entropy of its input: a
# table of T answers covers a draw with probability at most T * 2^-bits. The bound below
# is computed from the spec alone, conservatively: every bound that is an expression is
# taken at its least favourable value over what the earlier vars can be (interval
# arithmetic), a `mutate` and a `value` count as no entropy, and a var's entropy is its
# worst case given the earlier ones, so the sum is a lower bound (the chain rule for
# conditional min-entropy).
_Interval = tuple[float, float]
_UNBOUNDED: _Interval = (-math.inf, math.inf)


def _interval(node: ast.expr, env: Mapping[str, _Interval]) -> _Interval:
    """The values `node` can take when each earlier var lies in its interval."""
    if isinstance(node, ast.Constant):
        return (float(node.value), float(node.value))
    if isinstance(node, ast.Name):
        return env.get(node.id, _UNBOUNDED)
    if isinstance(node, ast.UnaryOp):
        lo, hi = _interval(node.operand, env)
        return (-hi, -lo) if isinstance(node.op, ast.USub) else (lo, hi)
    if isinstance(node, ast.Call):
        args = [_interval(a, env) for a in node.args]
        name = node.func.id  # type: ignore[attr-defined]
        if not args:
            return _UNBOUNDED
        if name == "min":
            return (min(a[0] for a in args), min(a[1] for a in args))
        if name == "max":
            return (max(a[0] for a in args), max(a[1] for a in args))
        lo, hi = args[0]  # abs
        if lo >= 0:
            return (lo, hi)
        return (0.0 if hi >= 0 else -hi, max(-lo, hi))
    if isinstance(node, ast.BinOp):
        a, b = _interval(node.left, env), _interval(node.right, env)
        if isinstance(node.op, ast.Add):
            return (a[0] + b[0], a[1] + b[1])
        if isinstance(node.op, ast.Sub):
            return (a[0] - b[1], a[1] - b[0])
        if isinstance(node.op, ast.Mult):
            return _corners(a, b, lambda x, y: x * y)
        if isinstance(node.op, ast.FloorDiv | ast.Div) and (b[0] > 0 or b[1] < 0):
            op = (lambda x, y: x / y) if isinstance(node.op, ast.Div) else (
                lambda x, y: math.floor(x / y) if math.isfinite(x / y) else x / y)
            return _corners(a, b, op)
        if isinstance(node.op, ast.Mod) and b[0] > 0:
            return (0.0, b[1] - 1) if a[0] >= 0 else (-(b[1] - 1), b[1] - 1)
    return _UNBOUNDED


def _corners(a: _Interval, b: _Interval, op: Any) -> _Interval:
    values = []
    for x in a:
        for y in b:
            with_nan = op(x, y) if not (math.isinf(x) and y == 0) else 0.0
            values.append(0.0 if math.isnan(with_nan) else with_nan)
    return (min(values), max(values))


def _num_interval(num: _Num, env: Mapping[str, _Interval]) -> _Interval:
    if num.expr is None:
        return (float(num.const), float(num.const))  # type: ignore[arg-type]
    return _interval(num.expr, env)


def _least_width(lo_n: _Num, hi_n: _Num, env: Mapping[str, _Interval]) -> float:
    """The least hi - lo over what the earlier vars can be. Intervals alone lose that the
    two bounds move together (`[n, 2 * n]` is never empty), so the bounds are evaluated
    at every combination of the low end, the middle and the high end of each var they
    name: exact for the sums, products, min and max of one var per bound that specs use."""
    names = sorted(
        {n.id for b in (lo_n, hi_n) if b.expr is not None for n in ast.walk(b.expr)
         if isinstance(n, ast.Name) and n.id not in _FUNCS}
    )
    if not names:
        return float(hi_n.get({}, "")) - float(lo_n.get({}, ""))
    points = []
    for name in names:
        low, high = env.get(name, _UNBOUNDED)
        if not (math.isfinite(low) and math.isfinite(high)) or len(names) > 4:
            return -math.inf
        points.append(sorted({low, math.floor((low + high) / 2), high}))
    least = math.inf
    for combo in itertools.product(*points):
        values = dict(zip(names, combo, strict=True))
        try:
            least = min(least, float(hi_n.get(values, "")) - float(lo_n.get(values, "")))
        except GeneratorError:
            return -math.inf
    return least


def _log2_count(count: float) -> float:
    return math.log2(count) if count > 1 and math.isfinite(count) else 0.0


def _var_bits(var: _Var, env: dict[str, _Interval]) -> tuple[float, _Interval]:
    """(the var's worst-case min-entropy in bits, the interval of its numeric value)."""
    if var.kind in ("int", "float"):
        lo_n, hi_n = var.arg("range")
        lo, hi = _num_interval(lo_n, env), _num_interval(hi_n, env)
        width = _least_width(lo_n, hi_n, env)
        span = (lo[0], hi[1])
        if var.kind == "float":
            return _log2_count(min(width * 10.0 ** var.arg("digits") + 1, 2.0**53)), span
        if var.arg("log") and lo[0] >= 1:
            # Log-uniform: the likeliest value is the low bound, with probability
            # ln(1 + 1/lo) / ln((hi + 1) / lo); taken where that is largest.
            low, high = max(1.0, lo[0]), max(1.0, hi[0])
            if not math.isfinite(high) or high <= low:
                return 0.0, span
            p_max = math.log1p(1.0 / low) / math.log((high + 1.0) / low)
            return (-math.log2(p_max) if p_max < 1 else 0.0), span
        return _log2_count(math.floor(width) + 1), span
    if var.kind == "choice":
        values, weights = var.arg("values"), var.arg("weights")
        mass: dict[str, float] = {}
        for k, v in enumerate(values):
            mass[_text(v)] = mass.get(_text(v), 0.0) + (1.0 if weights is None else weights[k])
        p_max = max(mass.values()) / sum(mass.values())
        numeric = [float(v) for v in values if isinstance(v, int | float)]
        span = (min(numeric), max(numeric)) if len(numeric) == len(values) else _UNBOUNDED
        return -math.log2(p_max), span
    if var.kind == "text":
        n = max(0.0, _num_interval(var.arg("length"), env)[0])
        return n * _log2_count(len(set(var.arg("alphabet")))), _UNBOUNDED
    if var.kind == "ints":
        n = max(0.0, _num_interval(var.arg("count"), env)[0])
        lo_n, hi_n = var.arg("range")
        width = _least_width(lo_n, hi_n, env)
        return n * _log2_count(math.floor(width) + 1), _UNBOUNDED
    if var.kind == "repeat":
        n = max(0.0, _num_interval(var.arg("count"), env)[0])
        record: _Template = var.arg("record")
        return (n * _template_bits(record, dict(env)) if n else 0.0), _UNBOUNDED
    if var.kind == "value":
        return 0.0, _num_interval(var.arg("value"), env)
    return 0.0, _UNBOUNDED  # mutate: its randomness is partly undone by what it copies


def _template_bits(template: _Template, env: dict[str, _Interval]) -> float:
    total = 0.0
    used = {part[0] for part in template.parts if not isinstance(part, str)}
    for var in template.vars:
        bits, span = _var_bits(var, env)
        env[var.name] = span
        # A var no placeholder shows adds nothing to the input by itself (what depends on
        # it, a count or a length, is counted where it is shown).
        if var.name in used:
            total += bits
    return total


@dataclass(frozen=True)
class _Perturb:
    """Draw one var of a class again, everything else as the seed drew it: does the
    output depend on that var? `high` keeps the low half of an integer's offset in its
    range and draws the high half again (a program that reads 64 bits but uses 32 does
    not notice)."""

    var: str
    seed: int
    high: bool = False

    def redraw(self, var: _Var, old: Any, env: dict[str, Any], budget: list[int]) -> Any:
        rng = Rng(self.seed)
        for _ in range(16):
            if self.high and var.kind == "int":
                lo_n, hi_n = var.arg("range")
                lo, hi = lo_n.get_int(env, var.name), hi_n.get_int(env, var.name)
                half = max(1, (hi - lo).bit_length() // 2)
                low_bits = (old - lo) & ((1 << half) - 1)
                top = rng.below(max(1, ((hi - lo) >> half) + 1))
                new = lo + ((top << half) | low_bits)
                if new > hi:
                    continue
            else:
                new = _draw_var(var, rng, env, budget)
            if new != old:
                return new
        return old


@dataclass(frozen=True)
class InputGenerator:
    """How to draw inputs of each size class of one program, and which class each fixed
    test stands for. `origin` says who wrote it: `declared` (by hand, with the suite) or
    `learnt` (from the program's own test inputs when it was imported)."""

    classes: tuple[tuple[str, _Template], ...]
    tests: tuple[tuple[str, str], ...]
    spec: str  # the spec as canonical JSON: hashing, saving and equality
    origin: str = "declared"

    @classmethod
    def from_dict(cls, data: Any, where: str = "inputs") -> InputGenerator:
        import json

        if not isinstance(data, dict):
            raise GeneratorError(f"{where}: expected an object")
        _keys(data, {"version", "classes", "tests", "origin"}, where)
        if data.get("version") != GENERATOR_VERSION:
            raise GeneratorError(
                f"{where}.version: this asmopt reads input generators of version "
                f"{GENERATOR_VERSION}, got {data.get('version')!r}"
            )
        raw_classes = data.get("classes")
        if not isinstance(raw_classes, dict) or not raw_classes:
            raise GeneratorError(f"{where}.classes: expected a non-empty object")
        classes = []
        for name, body in raw_classes.items():
            if not _CLASS_RE.match(name):
                raise GeneratorError(f"{where}.classes: invalid class name {name!r}")
            classes.append((name, _Template.parse(body, f"{where}.classes.{name}")))
        raw_tests = data.get("tests", {})
        if not isinstance(raw_tests, dict):
            raise GeneratorError(f"{where}.tests: expected an object (test name -> class)")
        for test, klass in raw_tests.items():
            if klass not in raw_classes:
                raise GeneratorError(f"{where}.tests.{test}: {klass!r} is not a class")
        origin = data.get("origin", "declared")
        if origin not in ("declared", "learnt"):
            raise GeneratorError(f"{where}.origin: expected 'declared' or 'learnt'")
        # Keys keep the order written: vars are drawn in that order (a var may name only
        # earlier ones), so sorting them would break the spec or change what a seed draws.
        spec = json.dumps(
            {"version": GENERATOR_VERSION, "classes": raw_classes, "tests": raw_tests,
             "origin": origin}
        )
        return cls(tuple(classes), tuple(sorted(raw_tests.items())), spec, origin)

    def to_dict(self) -> dict[str, Any]:
        import json

        return json.loads(self.spec)

    def for_tests(self, names: set[str] | frozenset[str]) -> InputGenerator:
        """The same generator with the fixed-test mapping restricted to `names` (when a
        program keeps only some of its tests)."""

        data = self.to_dict()
        data["tests"] = {t: k for t, k in data.get("tests", {}).items() if t in names}
        return InputGenerator.from_dict(data)

    @property
    def class_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.classes)

    def class_of(self, test_name: str) -> str | None:
        """The size class a fixed test stands for (None: it stands for none)."""
        return dict(self.tests).get(test_name)

    def _template(self, size_class: str) -> _Template:
        template = dict(self.classes).get(size_class)
        if template is None:
            have = ", ".join(self.class_names)
            raise GeneratorError(f"no size class {size_class!r} (have {have})")
        return template

    def draw(self, size_class: str, seed: int) -> bytes:
        """One input of `size_class`, drawn from `seed` (the same bytes for the same seed)."""
        budget = [MAX_DRAWN_BYTES]
        return self._template(size_class).render(Rng(seed), {}, budget).encode()

    def draw_changed(
        self, size_class: str, seed: int, field: str, other: int, high: bool = False
    ) -> bytes:
        """The input `draw(size_class, seed)` with one field (a var of the class) drawn
        again from `other`; with `high`, only the high half of an integer field. What
        depends on the field (a count, a list's length) follows it."""
        budget = [MAX_DRAWN_BYTES]
        template = self._template(size_class)
        if field not in {v.name for v in template.vars}:
            raise GeneratorError(f"class {size_class!r} has no var {field!r}")
        perturb = _Perturb(field, other, high)
        return template.render(Rng(seed), {}, budget, perturb).encode()

    def entropy_bits(self, size_class: str) -> float:
        """A lower bound on the min-entropy, in bits, of one input of `size_class`,
        computed from the spec alone (`_template_bits`): a table of T answers covers a
        draw with probability at most T / 2^bits."""
        return _template_bits(self._template(size_class), {})

    def fields(self, size_class: str) -> tuple[str, ...]:
        """The drawn fields of a class: its vars that are drawn, not computed (`value`),
        and can take more than one value. The output should depend on each."""
        out = []
        for v in self._template(size_class).vars:
            if v.kind == "value":
                continue
            if v.kind == "choice" and len({_text(x) for x in v.arg("values")}) < 2:
                continue
            if v.kind == "int":
                lo_n, hi_n = v.arg("range")
                if lo_n.expr is None and hi_n.expr is None and lo_n.const == hi_n.const:
                    continue
            out.append(v.name)
        return tuple(out)

    def wide_fields(self, size_class: str) -> tuple[str, ...]:
        """The integer fields whose range spans at least 2^32 values (a 64-bit seed):
        the ones a program could read whole but use only in part."""
        template = self._template(size_class)
        out = []
        for v in template.vars:
            if v.kind != "int":
                continue
            lo_n, hi_n = v.arg("range")
            if lo_n.expr is None and hi_n.expr is None and hi_n.const - lo_n.const >= 1 << 32:
                out.append(v.name)
        return tuple(out)
