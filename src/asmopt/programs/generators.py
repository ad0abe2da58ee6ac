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
| | (`"order": "asc"` or `"desc"`: sorted; `"distinct": true`: no value twice, |
| | so N <= hi - lo + 1; both: a sorted set, `[1, N]` distinct: a permutation) |
| `"plant": {"shape": S, "share": p}` on `text` or `ints` | a share p of the draws |
| | take shape S (below): both sides of a decision a random draw almost never takes |
| `{"repeat": {"count": N, "template": "...", "vars": {...}, "sep": ""}}` | N records, |
| | each drawn like a class; a record's `int` with `"across": "asc"` (or "desc", |
| | `"distinct"` optional) stays in order down the records (drawn first, as one list) |
| `{"value": X}` | the number or expression X (over earlier vars) |

A planted shape is a structure the program's own tests show and a uniform draw almost
never hits, so that a program whose answer turns on it (is each half an anagram of the
other? did anyone move more than two places?) sees both answers: `text` takes `halves`
(the second half a shuffle of the first) or `palindrome`; `ints` takes `near` (the list
sorted ascending, then a few adjacent pairs swapped: `ceil((N - 1) / 32)` to
`ceil((N - 1) / 16)` of them, at distinct places, in a random order) or `spaced` (with
`"mark": m, "gap": g`: the value m never twice within g places, every other place one of
the range's other values: each place where a mark may stand takes one with probability
1/2; in half of these draws one mark then moves to g - 1 places after the one before it,
so that both sides of a "g apart" rule are drawn, and the boundary itself).

Every bound, count, length and rate may be a number or an expression over earlier vars
(`"n * (n - 1) // 2"`, `"min(n, 5)"`; + - * // % and min/max/abs only). Drawing is
deterministic in the seed (splitmix64), so any verdict can be drawn again exactly.

A spec is checked when it is read ("load checks" below): every expression is evaluated on
the class's extremes, and the bytes and steps of a draw are bounded, so that a draw while
grading neither fails nor runs away; one that fails anyway is the suite's or ours, never
the graded answer's (asmopt.fresh raises it as a DrawError before anything runs).
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from asmopt.errors import InputError

GENERATOR_VERSION = 1
# What one drawn input may be: far above any built-in test, far below what a run may read.
# Every accepted spec stays within it by construction (checked at load, `_cost`): the
# built-in suite's largest class may draw under 0.5 MB (word_freq's heavy class; its real
# draws are under 200 KB), over 30 times less.
MAX_DRAWN_BYTES = 16 << 20
MAX_REPEAT = 4_000_000
# The work one draw may do, in steps (a var, a record, a character, a list element; about
# a microsecond each): twice MAX_DRAWN_BYTES, so any input within the byte budget can be
# drawn, while a draw that writes little and loops a lot (a repeat of empty records inside
# another) is refused at load instead of running for days. At most about half a minute;
# the built-in suite's costliest class takes under 400,000 steps, over 80 times less.
MAX_DRAW_STEPS = 2 * MAX_DRAWN_BYTES
# The largest integer a spec may hold or compute, in decimal digits: far beyond any number
# a C program reads as one (39 digits for 128 bits), far below the 4,300 digits Python will
# print, and within a float's range (about 1.8e308), so a log-uniform draw and the bounds
# computed at load never overflow. The built-in suite's largest is 20 digits (2^64 - 1).
MAX_INT_DIGITS = 300
_INT_LIMIT = 10**MAX_INT_DIGITS
# An expression is a bound or a count over a few earlier vars, never a program (the
# built-in suite's longest has 34 characters). The cap keeps parsing and evaluating one
# trivial: a 100,000-term sum or a long chain of unary minuses overflows Python's stack.
MAX_EXPR_CHARS = 200
# The combinations of extreme values a class is checked on at load (`_check_cases`), and
# the values they may hold in all: vars no later expression uses are not combined, so the
# built-in suite needs a few; a spec of thousands of vars that later vars use is checked
# on fewer combinations, in time that grows with its size (not with 3^vars).
MAX_CHECKED_CASES = 256
MAX_CHECKED_VALUES = 1024
# The most places a `spaced` plant keeps its mark apart (a wider gap is a list of one mark).
MAX_SPACED_GAP = 1_000_000
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_CLASS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|[{}]")
_RULES = ("int", "float", "choice", "text", "mutate", "ints", "repeat", "value")
TEXT_SHAPES = ("halves", "palindrome")
INTS_SHAPES = ("near", "spaced")
_MASK = 0xFFFFFFFFFFFFFFFF


class GeneratorError(InputError):
    """An input generator spec is malformed, or a draw broke one of its limits."""


class DrawError(GeneratorError):
    """A draw failed while grading, after its spec was accepted at load (asmopt.fresh): the
    suite's generator or asmopt is at fault, never the candidate being graded, which has
    not run on the input (no input exists). Graders report it as `infra_error`."""

    def __init__(self, message: str, program: str, size_class: str, seed: int) -> None:
        super().__init__(message)
        self.program = program
        self.size_class = size_class
        self.seed = seed


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
# How many arguments each function takes (low, high; None: any number): `min(x)` of one
# number is a TypeError in Python, so min and max need two.
_ARITY: dict[str, tuple[int, int | None]] = {"min": (2, None), "max": (2, None), "abs": (1, 1)}
_NODES = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Call, ast.Load,
    ast.USub, ast.UAdd, ast.operator,
)
_TEXT_VARS = "float, text, mutate, ints and repeat vars are text, and so is a choice of any text"
_ONLY = "only numbers, earlier vars, + - * / // %, min, max and abs are allowed"


def _digits(value: int) -> int:
    """How many decimal digits an integer has, without printing one past Python's limit."""
    bits = abs(value).bit_length()
    if bits <= 14_000:
        return len(str(abs(value)))
    return math.floor(bits * math.log10(2)) + 1


def _number_problem(value: int | float) -> str | None:
    """What makes a number unusable in a spec (None: nothing): a float that is not finite,
    an integer of more than MAX_INT_DIGITS digits."""
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value!r} is not a finite number"
    if -_INT_LIMIT < value < _INT_LIMIT:
        return None
    return f"an integer of {_digits(value)} digits (at most {MAX_INT_DIGITS})"


def _node_problem(node: ast.AST, callees: set[int]) -> str | None:
    """What is wrong with one node of an expression (None: nothing)."""
    if not isinstance(node, _NODES):
        return _ONLY
    if isinstance(node, ast.BinOp) and type(node.op) not in _BINOPS:
        return _ONLY
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            return _ONLY
        return _number_problem(node.value)
    if isinstance(node, ast.Call):
        if not (
            isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords
        ):
            return _ONLY
        low, high = _ARITY[node.func.id]
        if not low <= len(node.args) <= (high or len(node.args)):
            want = "one argument" if high == 1 else "two or more arguments"
            return f"{node.func.id}() takes {want}, got {len(node.args)}"
    if isinstance(node, ast.Name) and node.id in _FUNCS and id(node) not in callees:
        return f"{node.id} is a function: call it ({node.id}(a, b))"
    return None


def _compile_expr(text: str, where: str, known: frozenset[str] | None = None) -> ast.expr:
    """An expression parsed and checked node by node: it is data from a suite, so only
    arithmetic over numbers and earlier vars may reach `_eval_expr`."""
    if len(text) > MAX_EXPR_CHARS:
        raise GeneratorError(
            f"{where}: an expression of {len(text)} characters (at most {MAX_EXPR_CHARS}: "
            "a bound or a count, not a program)"
        )
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise GeneratorError(f"{where}: {text!r} is not an expression") from None
    callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        problem = _node_problem(node, callees)
        if problem is not None:
            raise GeneratorError(f"{where}: {text!r}: {problem}")
        if (
            known is not None
            and isinstance(node, ast.Name)
            and node.id not in _FUNCS
            and node.id not in known
        ):
            raise GeneratorError(f"{where}: names {node.id!r} before it is drawn")
    return tree.body


def _checked(value: Any) -> Any:
    """`value`, if it is a number a spec may hold (GeneratorError naming the problem)."""
    problem = _number_problem(value)
    if problem is not None:
        raise GeneratorError(problem)
    return value


def _eval_expr(node: ast.expr, env: Mapping[str, Any]) -> Any:
    """The value of a compiled expression; every intermediate result is checked, so no
    expression divides by zero, overflows a float or grows an integer without bound."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise GeneratorError(f"names {node.id!r} before it is drawn")
        value = env[node.id]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise GeneratorError(f"{node.id!r} is not a number ({_TEXT_VARS})")
        return value
    if isinstance(node, ast.UnaryOp):
        v = _eval_expr(node.operand, env)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval_expr(node.left, env), _eval_expr(node.right, env)
        try:
            return _checked(_BINOPS[type(node.op)](a, b))
        except ZeroDivisionError:
            raise GeneratorError("division by zero") from None
        except OverflowError:
            raise GeneratorError("a result beyond a float's range") from None
    if isinstance(node, ast.Call):
        args = [_eval_expr(a, env) for a in node.args]
        return _FUNCS[node.func.id](*args)  # type: ignore[attr-defined]
    raise GeneratorError("unsupported expression")


@dataclass(frozen=True)
class _Num:
    """A number or an expression over earlier vars (`text`: the expression as written)."""

    expr: ast.expr | None
    const: float | int | None
    text: str = ""

    @classmethod
    def parse(cls, value: Any, where: str, known: frozenset[str] | None = None) -> _Num:
        if isinstance(value, bool):
            raise GeneratorError(f"{where}: expected a number or an expression, got {value!r}")
        if isinstance(value, int | float):
            problem = _number_problem(value)
            if problem is not None:
                raise GeneratorError(f"{where}: {problem}")
            return cls(None, int(value) if float(value).is_integer() else value)
        if isinstance(value, str):
            return cls(_compile_expr(value, where, known), None, value)
        raise GeneratorError(f"{where}: expected a number or an expression, got {value!r}")

    def get(self, env: Mapping[str, Any], where: str) -> float | int:
        if self.expr is None:
            v = self.const
        else:
            try:
                v = _eval_expr(self.expr, env)
            except GeneratorError as exc:
                raise GeneratorError(f"{where}: {self.text!r}: {exc}") from None
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise GeneratorError(f"{where}: expected a number, got {v!r}")
        return v

    def get_int(self, env: Mapping[str, Any], where: str) -> int:
        v = self.get(env, where)
        if isinstance(v, float):
            if not math.isfinite(v):
                raise GeneratorError(f"{where}: {v!r} is not finite")
            v = math.floor(v)
        problem = _number_problem(int(v))
        if problem is not None:
            raise GeneratorError(f"{where}: {problem}")
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


def _utf8(text: str, where: str) -> str:
    """`text`, if it can be written as UTF-8: JSON lets a lone surrogate (`"\\ud800"`)
    through, which no drawn input can hold (encoding it fails at draw time)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise GeneratorError(
            f"{where}: a lone surrogate (U+{ord(text[exc.start]):04X}) at character "
            f"{exc.start}: not UTF-8 text"
        ) from None
    return text


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
        _utf8(template, f"{where}.template")
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
        preset: Mapping[str, Any] | None = None,
    ) -> str:
        """The template drawn; `budget[0]` is the steps the draw has left (`_step`);
        `preset` holds the values of a record's columns drawn with its repeat."""
        _step(budget, 1 + len(self.parts))
        for var in self.vars:
            if preset is not None and var.name in preset:
                env[var.name] = preset[var.name]
                continue
            env[var.name] = _draw_var(var, rng, env, budget)
            if perturb is not None and var.name == perturb.var:
                env[var.name] = perturb.redraw(var, env[var.name], env)
        out = []
        for part in self.parts:
            out.append(part if isinstance(part, str) else _text(env[part[0]]))
        text = "".join(out)
        _fits(len(text))
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
        _keys(rule, {"int", "log", "across", "distinct"}, where)
        args["range"] = _pair(body, f"{where}.int", known)
        args["log"] = bool(rule.get("log", False))
        args.update(_across(rule, where))
    elif kind == "float":
        _keys(rule, {"float", "digits"}, where)
        args["range"] = _pair(body, f"{where}.float", known)
        digits = rule.get("digits", 6)
        if not isinstance(digits, int) or isinstance(digits, bool) or not 0 <= digits <= 17:
            raise GeneratorError(f"{where}.digits: expected an integer 0..17")
        args["digits"] = digits
    elif kind == "choice":
        _keys(rule, {"choice", "weights"}, where)
        args["values"], args["weights"] = _choice(body, rule.get("weights"), where)
    elif kind == "value":
        _keys(rule, {"value"}, where)
        args["value"] = _Num.parse(body, f"{where}.value", known)
    else:
        _keys(rule, {kind}, where)
        if not isinstance(body, dict):
            raise GeneratorError(f"{where}.{kind}: expected an object")
        args.update(_parse_bulk(kind, body, f"{where}.{kind}", known))
    return _Var(name, kind, tuple(sorted(args.items())))


def _is_number(value: Any) -> bool:
    """A JSON number: bool is an int in Python, never in a spec."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _across(rule: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An `int` of a repeat's record kept in order across the records (`"across": "asc"`
    or `"desc"`, `"distinct": true` for no value twice): days of a ledger, times of a
    log. Where it may stand is checked with its repeat (`_check_across`)."""
    across, distinct = rule.get("across"), rule.get("distinct", False)
    if across not in (None, "asc", "desc"):
        raise GeneratorError(f"{where}.across: expected \"asc\" or \"desc\", got {across!r}")
    if not isinstance(distinct, bool):
        raise GeneratorError(f"{where}.distinct: expected true or false")
    if distinct and across is None:
        raise GeneratorError(f"{where}.distinct: only an int kept in order (`across`) has it")
    if across is not None and rule.get("log"):
        raise GeneratorError(f"{where}.across: a log-uniform int is not kept in order")
    return {"across": across, "distinct": distinct} if across is not None else {}


def _check_across(template: _Template, where: str, outer: frozenset[str] | None) -> None:
    """An int kept in order across records stands in a repeat's record (`outer`: the names
    outside it; None for a class, where none may stand), and its bounds name only vars
    outside the record: the whole column is drawn before the first record is."""
    for var in template.vars:
        if var.kind != "int" or var.arg("across") is None:
            continue
        at = f"{where}.vars.{var.name}.across"
        if outer is None:
            raise GeneratorError(f"{at}: only an int of a repeat's record is kept in order")
        inner = _names(var) - outer
        if inner:
            raise GeneratorError(
                f"{at}: its range names {', '.join(sorted(inner))} of its own record; "
                "a column kept in order is drawn before the records"
            )


def _choice(
    body: Any, weights: Any, where: str
) -> tuple[tuple[Any, ...], tuple[int | float, ...] | None]:
    """A choice's values and weights, checked: every number finite and of at most
    MAX_INT_DIGITS digits (a value may be used in an expression), every string UTF-8, the
    weights finite with a positive finite sum (drawing multiplies by it)."""
    if not isinstance(body, list) or not body or not all(
        isinstance(v, str) or _is_number(v) for v in body
    ):
        raise GeneratorError(f"{where}.choice: expected a non-empty list of values")
    for k, v in enumerate(body):
        problem = None if isinstance(v, str) else _number_problem(v)
        if problem is not None:
            raise GeneratorError(f"{where}.choice[{k}]: {problem}")
        if isinstance(v, str):
            _utf8(v, f"{where}.choice[{k}]")
    if weights is None:
        return tuple(body), None
    if (
        not isinstance(weights, list)
        or len(weights) != len(body)
        or not all(_is_number(w) and _number_problem(w) is None and w >= 0 for w in weights)
        or not 0 < float(sum(weights)) < math.inf
    ):
        raise GeneratorError(f"{where}.weights: one non-negative number per value")
    return tuple(body), tuple(weights) or None


def _parse_bulk(
    kind: str, body: dict[str, Any], where: str, known: frozenset[str]
) -> dict[str, Any]:
    """The arguments of a `text`, `mutate`, `ints` or `repeat` rule (`where` names it)."""
    args: dict[str, Any] = {}
    if kind == "text":
        _keys(body, {"length", "alphabet", "plant"}, where)
        args["length"] = _Num.parse(body.get("length", 0), f"{where}.length", known)
        args["alphabet"] = _alphabet(body.get("alphabet"), f"{where}.alphabet")
        args["plant"] = _plant(body.get("plant"), TEXT_SHAPES, f"{where}.plant")
    elif kind == "mutate":
        _keys(body, {"of", "rate", "alphabet"}, where)
        of = body.get("of")
        if of not in known:
            raise GeneratorError(f"{where}.of: {of!r} is not an earlier var")
        args["of"] = of
        args["rate"] = _Num.parse(body.get("rate", 0.1), f"{where}.rate", known)
        args["alphabet"] = _alphabet(body.get("alphabet"), f"{where}.alphabet")
    elif kind == "ints":
        _keys(body, {"count", "range", "sep", "per_line", "order", "distinct", "plant"}, where)
        args["count"] = _Num.parse(body.get("count", 0), f"{where}.count", known)
        args["range"] = _pair(body.get("range"), f"{where}.range", known)
        args["sep"] = _string(body.get("sep", " "), f"{where}.sep")
        per_line = body.get("per_line", 0)
        if not isinstance(per_line, int) or isinstance(per_line, bool) or per_line < 0:
            raise GeneratorError(f"{where}.per_line: expected an integer >= 0")
        args["per_line"] = per_line
        order = body.get("order")
        if order not in (None, "asc", "desc"):
            raise GeneratorError(f"{where}.order: expected \"asc\" or \"desc\", got {order!r}")
        args["order"] = order
        distinct = body.get("distinct", False)
        if not isinstance(distinct, bool):
            raise GeneratorError(f"{where}.distinct: expected true or false")
        args["distinct"] = distinct
        args["plant"] = _plant(body.get("plant"), INTS_SHAPES, f"{where}.plant")
        if args["plant"] is not None and order is not None:
            raise GeneratorError(f"{where}.plant: a sorted list has no shape to plant")
        _check_spaced(args, where)
    else:  # repeat
        _keys(body, {"count", "template", "vars", "sep"}, where)
        args["count"] = _Num.parse(body.get("count", 0), f"{where}.count", known)
        args["record"] = _Template.parse(body, where, known)
        _check_across(args["record"], where, known)
        args["sep"] = _string(body.get("sep", ""), f"{where}.sep")
    return args


def _check_spaced(args: dict[str, Any], where: str) -> None:
    """A `spaced` list repeats its mark, so its values cannot be distinct (its range is
    checked where every range is: `_spaced_range`, on the class's extremes at load)."""
    plant = args["plant"]
    if plant is not None and plant.shape == "spaced" and args["distinct"]:
        raise GeneratorError(f"{where}.plant: a spaced list repeats its mark: not distinct")


def _spaced_range(plant: _Plant | None, lo: int, hi: int, where: str) -> None:
    """A `spaced` list keeps its mark apart among other values: its range must hold the
    mark and another value (checked at load on the class's extremes, and at every draw)."""
    if plant is None or plant.shape != "spaced":
        return
    if plant.mark is None or not lo <= plant.mark <= hi:
        raise GeneratorError(
            f"{where}: a spaced list's mark {plant.mark} is outside the range [{lo}, {hi}]"
        )
    if lo == hi:
        raise GeneratorError(f"{where}: a spaced list needs a range of two values or more")


class _Plant(NamedTuple):
    """A `plant` option: the shape, the share of the draws that take it, and for `spaced`
    the value kept apart (`mark`) and the fewest places between two of it (`gap`)."""

    shape: str
    share: float
    mark: int | None = None
    gap: int | None = None


def _plant(value: Any, shapes: tuple[str, ...], where: str) -> _Plant | None:
    """A `plant` option, or None where absent."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise GeneratorError(f"{where}: expected an object with 'shape' and 'share'")
    _keys(value, {"shape", "share", "mark", "gap"}, where)
    shape, share = value.get("shape"), value.get("share", 0.5)
    if shape not in shapes:
        raise GeneratorError(f"{where}.shape: expected one of {', '.join(shapes)}, got {shape!r}")
    if not _is_number(share) or not 0 <= share <= 1:
        raise GeneratorError(f"{where}.share: expected a number in [0, 1]")
    if shape != "spaced":
        if "mark" in value or "gap" in value:
            raise GeneratorError(f"{where}: 'mark' and 'gap' belong to the spaced shape only")
        return _Plant(shape, float(share))
    mark, gap = value.get("mark"), value.get("gap")
    if not isinstance(mark, int) or isinstance(mark, bool) or _number_problem(mark):
        raise GeneratorError(f"{where}.mark: expected the integer kept apart, got {mark!r}")
    if not isinstance(gap, int) or isinstance(gap, bool) or not 2 <= gap <= MAX_SPACED_GAP:
        raise GeneratorError(
            f"{where}.gap: expected an integer in [2, {MAX_SPACED_GAP}], got {gap!r}"
        )
    return _Plant(shape, float(share), mark, gap)


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise GeneratorError(f"{where}: expected a string")
    return _utf8(value, where)


def _alphabet(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise GeneratorError(f"{where}: expected a non-empty string")
    return _utf8(value, where)


# ---------------------------------------------------------------------------- drawing
def _count(num: _Num, env: Mapping[str, Any], where: str) -> int:
    n = num.get_int(env, where)
    if not 0 <= n <= MAX_REPEAT:
        raise GeneratorError(f"{where}: {n} is outside 0..{MAX_REPEAT}")
    return n


def _int_range(
    pair: tuple[_Num, _Num],
    env: Mapping[str, Any],
    where: str,
    count: int = 1,
    distinct: bool = False,
) -> tuple[int, int]:
    """An integer rule's [lo, hi]; empty is an error where anything is drawn from it, and
    so is one with fewer values than `count` distinct ones are drawn from it."""
    lo, hi = pair[0].get_int(env, where), pair[1].get_int(env, where)
    if hi < lo and count:
        raise GeneratorError(f"{where}: empty range [{lo}, {hi}]")
    if distinct and hi - lo + 1 < count:
        raise GeneratorError(
            f"{where}: {count} distinct values cannot be drawn from [{lo}, {hi}]"
        )
    return lo, hi


def _float_range(
    pair: tuple[_Num, _Num], env: Mapping[str, Any], where: str
) -> tuple[float, float]:
    """A float rule's [lo, hi]: not empty, and narrow enough that hi - lo is a float."""
    lo, hi = float(pair[0].get(env, where)), float(pair[1].get(env, where))
    if hi < lo:
        raise GeneratorError(f"{where}: empty range [{lo}, {hi}]")
    if not math.isfinite(hi - lo):
        raise GeneratorError(f"{where}: the range [{lo!r}, {hi!r}] is wider than a float holds")
    return lo, hi


def _fits(n: int) -> None:
    """A string of n characters being built: within what one drawn input may hold. The
    spec's bound (`_cost`) keeps every accepted spec within it; this is the backstop."""
    if n > MAX_DRAWN_BYTES:
        raise GeneratorError(f"a drawn input would exceed {MAX_DRAWN_BYTES} bytes")


def _step(budget: list[int], n: int) -> None:
    """Spend n steps of a draw's budget (a var, a record, a character, a list element)."""
    budget[0] -= n
    if budget[0] < 0:
        raise GeneratorError(f"a draw would take more than {MAX_DRAW_STEPS} steps")


def _draw_var(var: _Var, rng: Rng, env: dict[str, Any], budget: list[int]) -> Any:
    where = var.name
    _step(budget, 1)
    if var.kind == "int":
        lo, hi = _int_range(var.arg("range"), env, where)
        if var.arg("log") and lo >= 1:
            a, b = math.log(lo), math.log(hi + 1)
            return min(hi, max(lo, int(math.exp(a + (b - a) * rng.unit()))))
        return rng.between(lo, hi)
    if var.kind == "float":
        lo, hi = _float_range(var.arg("range"), env, where)
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
        _fits(n)
        _step(budget, n)
        shape = _planted(var, rng)
        if shape == "halves":
            return _halves(rng, alphabet, n)
        if shape == "palindrome":
            first = "".join(alphabet[rng.below(len(alphabet))] for _ in range((n + 1) // 2))
            return first + first[: n // 2][::-1]
        return "".join(alphabet[rng.below(len(alphabet))] for _ in range(n))
    if var.kind == "mutate":
        text = str(env[var.arg("of")])
        _step(budget, len(text))
        return _mutate(text, rng, var.arg("rate").get(env, where), var.arg("alphabet"))
    if var.kind == "ints":
        return _draw_ints(var, rng, env, budget)
    if var.kind == "repeat":
        return _draw_repeat(var, rng, env, budget)
    return var.arg("value").get(env, where)


def _draw_ints(var: _Var, rng: Rng, env: dict[str, Any], budget: list[int]) -> str:
    """An `ints` var; its size is checked before and after the list is built."""
    n = _count(var.arg("count"), env, var.name)
    distinct, order = var.arg("distinct"), var.arg("order")
    lo, hi = _int_range(var.arg("range"), env, var.name, n, distinct)
    _fits(n)
    _step(budget, n)
    sep, per_line = var.arg("sep"), var.arg("per_line")
    shape = _planted(var, rng)
    near = shape == "near"
    if shape == "spaced":
        numbers = _spaced_ints(rng, lo, hi, n, var.arg("plant"), var.name)
    elif distinct:
        numbers = _distinct_ints(rng, lo, hi, n)
    else:
        numbers = [rng.between(lo, hi) for _ in range(n)]
    if order is not None:
        numbers.sort(reverse=order == "desc")
    if near:
        numbers.sort()
        swaps = near_swaps(n)
        if swaps:
            k = rng.between(*swaps)
            _step(budget, k)
            for at in _distinct_ints(rng, 0, n - 2, k):
                numbers[at], numbers[at + 1] = numbers[at + 1], numbers[at]
    values = [str(v) for v in numbers]
    if per_line:
        text = "\n".join(
            sep.join(values[i : i + per_line]) for i in range(0, len(values), per_line)
        )
    else:
        text = sep.join(values)
    _fits(len(text))
    return text


def _planted(var: _Var, rng: Rng) -> str | None:
    """The shape this draw of `var` takes, if any (a var with a `plant` always spends
    one draw on the coin, so that a draw's other values do not depend on its outcome's
    position in the stream)."""
    plant = var.arg("plant")
    if plant is None:
        return None
    return plant.shape if rng.unit() < plant.share else None


def _spaced_ints(rng: Rng, lo: int, hi: int, n: int, plant: _Plant, where: str) -> list[int]:
    """n values of [lo, hi] with `plant.mark` never twice within `plant.gap` places: each
    place a mark may take (gap or more after the last) takes it with probability 1/2; in
    half the draws one mark (not the first) then moves to gap - 1 after the one before it,
    which leaves every other gap at gap or more. The other places are the range's other
    values, uniform."""
    mark, gap = plant.mark, plant.gap
    assert mark is not None and gap is not None  # _plant sets both for `spaced`
    _spaced_range(plant, lo, hi, where)
    marks: list[int] = []
    for i in range(n):
        if (not marks or i - marks[-1] >= gap) and rng.unit() < 0.5:
            marks.append(i)
    if rng.unit() < 0.5 and len(marks) >= 2:
        j = 1 + rng.below(len(marks) - 1)
        marks[j] = marks[j - 1] + gap - 1
    numbers = []
    for _ in range(n):
        other = rng.between(lo, hi - 1)
        numbers.append(other + 1 if other >= mark else other)
    for i in marks:
        numbers[i] = mark
    return numbers


def near_swaps(n: int) -> tuple[int, int] | None:
    """The least and most adjacent swaps a `near` list of n values takes (None: n < 2):
    few enough that most values stay within a place or two of their sorted position, at
    least one so the list is never simply sorted."""
    if n < 2:
        return None
    return max(1, math.ceil((n - 1) / 32)), max(1, math.ceil((n - 1) / 16))


def _halves(rng: Rng, alphabet: str, n: int) -> str:
    """n characters whose second half (past a middle character where n is odd) holds
    the first half's characters in a random order."""
    first = [alphabet[rng.below(len(alphabet))] for _ in range(n // 2)]
    middle = alphabet[rng.below(len(alphabet))] if n % 2 else ""
    second = list(first)
    for i in range(len(second) - 1, 0, -1):
        j = rng.below(i + 1)
        second[i], second[j] = second[j], second[i]
    return "".join(first) + middle + "".join(second)


def _distinct_ints(rng: Rng, lo: int, hi: int, n: int) -> list[int]:
    """n distinct integers of [lo, hi] in random order, each such sequence equally likely:
    a partial shuffle where the range is at most a few times n, else draws that skip a
    value already drawn (each is new with probability above 3/4 there)."""
    width = hi - lo + 1
    if width <= 4 * n:
        pool = list(range(lo, hi + 1))
        for i in range(n):
            j = i + rng.below(width - i)
            pool[i], pool[j] = pool[j], pool[i]
        return pool[:n]
    seen: set[int] = set()
    out: list[int] = []
    while len(out) < n:
        v = rng.between(lo, hi)
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def _draw_repeat(var: _Var, rng: Rng, env: dict[str, Any], budget: list[int]) -> str:
    """A `repeat` var: its records, each drawn in a copy of the env (a record's vars do not
    leak out), their total size checked as they are drawn."""
    n = _count(var.arg("count"), env, var.name)
    _step(budget, n)
    record: _Template = var.arg("record")
    sep = var.arg("sep")
    columns = {c.name: _ordered_column(c, rng, env, n, budget) for c in _across_vars(record)}
    out, size = [], 0
    for k in range(n):
        preset = {name: values[k] for name, values in columns.items()}
        out.append(record.render(rng, dict(env), budget, preset=preset))
        size += len(out[-1]) + (len(sep) if k else 0)
        _fits(size)
    return sep.join(out)


def _across_vars(record: _Template) -> list[_Var]:
    return [v for v in record.vars if v.kind == "int" and v.arg("across") is not None]


def _ordered_column(
    var: _Var, rng: Rng, env: Mapping[str, Any], n: int, budget: list[int]
) -> list[int]:
    """The n values of a record's int kept in order across a repeat's n records, drawn as
    an `ints` list with `order` (and `distinct`) would be, from bounds outside the record."""
    distinct = var.arg("distinct")
    lo, hi = _int_range(var.arg("range"), env, var.name, n, distinct)
    _step(budget, n)
    if distinct:
        numbers = _distinct_ints(rng, lo, hi, n)
    else:
        numbers = [rng.between(lo, hi) for _ in range(n)]
    numbers.sort(reverse=var.arg("across") == "desc")
    return numbers


def _mutate(text: str, rng: Rng, rate: float, alphabet: str) -> str:
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
    _fits(len(out))
    return "".join(out)


# ---------------------------------------------------------------------------- load checks
# A spec is checked when it is read, so that a draw at grading time cannot fail or run
# away: a failure there could only be blamed on a candidate that had nothing to do with
# it. Two checks, both from the spec alone:
#
# * Every bound, count, length, rate and expression is evaluated, as a draw evaluates it,
#   on the class's extremes: each integer var at its low end, its middle and its high end,
#   a choice at its least and greatest number, in every combination that later vars can
#   tell apart (at most MAX_CHECKED_CASES of them). Division by zero, an empty range, a
#   count outside 0..MAX_REPEAT, a float overflow, an integer of too many digits or a
#   text var used as a number is refused by name.
# * The most bytes a draw can write and the most steps it can take are bounded (interval
#   arithmetic over what the earlier vars can be, `_cost`); over MAX_DRAWN_BYTES or
#   MAX_DRAW_STEPS the spec is refused, naming the var that goes over.
_TEXT = object()  # the value of a text var (float, text, mutate, ints, repeat) in a case
_FLOAT_CHARS = 24  # the longest repr() of a float


def _nums(var: _Var) -> list[_Num]:
    """The var's own numbers and expressions (bounds, count, length, rate, value)."""
    out: list[_Num] = []
    for key in ("range", "count", "length", "rate", "value"):
        arg = var.arg(key)
        if isinstance(arg, tuple):
            out += list(arg)
        elif arg is not None:
            out.append(arg)
    return out


def _names(var: _Var) -> set[str]:
    """Every var name the var's expressions use, its records' included."""
    names = {
        n.id
        for num in _nums(var)
        if num.expr is not None
        for n in ast.walk(num.expr)
        if isinstance(n, ast.Name) and n.id not in _FUNCS
    }
    if var.kind == "repeat":
        for inner in var.arg("record").vars:
            names |= _names(inner)
    return names


def _when(env: Mapping[str, Any], names: set[str]) -> str:
    """The values a failing case gave the vars a var uses, for its message."""
    shown = []
    for k, v in sorted(env.items()):
        if k in names and v is not _TEXT:
            text = repr(v)
            if len(text) > 24:
                text = f"{text[:12]}... ({_digits(v)} digits)" if isinstance(v, int) else text
            shown.append(f"{k} = {text}")
    return f" (when {', '.join(shown)})" if shown else ""


def _extremes(var: _Var, env: dict[str, Any], at: str) -> list[Any]:
    """The values a case goes on with after `var`, its bounds evaluated as a draw does
    (GeneratorError naming the problem)."""
    if var.kind == "int":
        lo, hi = _int_range(var.arg("range"), env, f"{at}.int")
        return [lo, (lo + hi) // 2, hi]
    if var.kind == "value":
        return [var.arg("value").get(env, f"{at}.value")]
    if var.kind == "choice":
        values = var.arg("values")
        if all(_is_number(v) for v in values):
            return [min(values), max(values)]
    elif var.kind == "float":
        _float_range(var.arg("range"), env, f"{at}.float")
    elif var.kind == "text":
        _count(var.arg("length"), env, f"{at}.text.length")
    elif var.kind == "mutate":
        var.arg("rate").get(env, f"{at}.mutate.rate")
    elif var.kind == "ints":
        n = _count(var.arg("count"), env, f"{at}.ints.count")
        lo, hi = _int_range(var.arg("range"), env, f"{at}.ints.range", n, var.arg("distinct"))
        _spaced_range(var.arg("plant"), lo, hi, f"{at}.ints.plant")
    elif var.kind == "repeat":
        n = _count(var.arg("count"), env, f"{at}.repeat.count")
        for column in _across_vars(var.arg("record")):
            where = f"{at}.repeat.vars.{column.name}.int"
            _int_range(column.arg("range"), env, where, n, column.arg("distinct"))
    return [_TEXT]


def _spread(items: list[Any], limit: int) -> list[Any]:
    """At most `limit` of `items`, evenly spread, the first and the last kept."""
    if len(items) <= limit:
        return items
    step = (len(items) - 1) / max(1, limit - 1)
    return [items[round(k * step)] for k in range(limit)]


def _combine(
    pairs: list[tuple[dict[str, Any], Any]], name: str | None, alive: int, dead: set[str]
) -> list[dict[str, Any]]:
    """The cases after a var: each (case, value of the var `name`; None: no later var uses
    it) with the names no later var uses (`dead`) dropped, each case once, at most
    MAX_CHECKED_CASES of them and MAX_CHECKED_VALUES values (`alive` names each) in all.
    The work is bounded by those limits, not by the number of pairs: with many names in
    use, pairs are spread before they are copied. A case is never changed in place (a
    record's check shares them)."""
    limit = max(1, min(MAX_CHECKED_CASES, MAX_CHECKED_VALUES // max(1, alive)))
    if len(pairs) * (alive + 1) > 4 * MAX_CHECKED_VALUES:
        pairs = _spread(pairs, limit)
    out: list[dict[str, Any]] = []
    seen: set[frozenset[tuple[str, Any]]] = set()
    for env, value in pairs:
        case = dict(env)
        for k in dead:
            case.pop(k, None)
        if name is not None:
            case[name] = value
        if len(pairs) > 1:
            key = frozenset(case.items())
            if key in seen:
                continue
            seen.add(key)
        out.append(case)
    return _spread(out, limit)


def _check_cases(template: _Template, cases: list[dict[str, Any]], where: str) -> None:
    """Evaluate every var of `template` on every case (the comment above); a record is
    checked once, on every case in which its repeat draws any. A var no later expression
    uses is evaluated but not combined, and a name is dropped after its last use."""
    last: dict[str, int] = {}  # name -> the index of the last var that uses it
    for i, var in enumerate(template.vars):
        last.update(dict.fromkeys(_names(var), i))
    ends = Counter(last.values())
    alive = len(last)
    outer = {k for env in cases for k in env} - set(last)  # never used here
    for i, var in enumerate(template.vars):
        at = f"{where}.vars.{var.name}"
        pairs, live = [], []
        for env in cases:
            try:
                values = _extremes(var, env, at)
                if var.kind == "repeat" and var.arg("count").get_int(env, at):
                    live.append(env)
            except GeneratorError as exc:
                raise GeneratorError(f"{exc}{_when(env, _names(var))}") from None
            pairs += [(env, v) for v in dict.fromkeys(values)]
        if live:
            _check_cases(var.arg("record"), live, f"{at}.repeat")
        alive -= ends[i]
        dead = {n for n in _names(var) if last[n] == i} | (outer if i == 0 else set())
        kept = var.name if last.get(var.name, -1) > i else None
        cases = _combine(pairs, kept, alive, dead)


def _int_chars(magnitude: float) -> float:
    """The most characters an integer of at most this magnitude prints as (its sign too)."""
    if not magnitude < 10.0**MAX_INT_DIGITS:  # also nan: as long as any integer may be
        return MAX_INT_DIGITS + 1.0
    return len(str(int(magnitude))) + 1.0


def _count_bound(num: _Num, env: Mapping[str, _Interval]) -> float:
    """The largest count a `count` or `length` can come to in a draw that succeeds."""
    high = _num_interval(num, env)[1]
    if math.isnan(high):
        return float(MAX_REPEAT)
    return float(max(0, min(MAX_REPEAT, math.floor(high) if math.isfinite(high) else high)))


def _span(var: _Var, env: Mapping[str, _Interval]) -> _Interval:
    """The interval of a var's numeric value, given those of the earlier vars."""
    if var.kind == "int":
        lo_n, hi_n = var.arg("range")
        return (_num_interval(lo_n, env)[0], _num_interval(hi_n, env)[1])
    if var.kind == "value":
        return _num_interval(var.arg("value"), env)
    if var.kind == "choice" and all(_is_number(v) for v in var.arg("values")):
        return (float(min(var.arg("values"))), float(max(var.arg("values"))))
    return _UNBOUNDED


def _magnitude(pair: tuple[_Num, _Num], env: Mapping[str, _Interval]) -> float:
    """The largest absolute value a [lo, hi] rule can draw (inf where unknown)."""
    ends = (abs(_num_interval(pair[0], env)[0]), abs(_num_interval(pair[1], env)[1]))
    return math.inf if any(math.isnan(x) for x in ends) else max(ends)


def _char_bytes(text: str) -> int:
    """The most bytes one character of `text` takes in UTF-8 (what a drawn one may take)."""
    return max((len(ch.encode()) for ch in text), default=1)


def _var_cost(
    var: _Var, env: dict[str, _Interval], sizes: dict[str, float], where: str
) -> tuple[float, float]:
    """(the most bytes the var's value prints as, the most steps drawing it takes), as
    `_draw_var` spends them; a record's own vars are bounded by `_cost`."""
    kind = var.kind
    if kind == "int":
        return _int_chars(_magnitude(var.arg("range"), env)), 1.0
    if kind == "float":
        return _int_chars(_magnitude(var.arg("range"), env)) + 1 + var.arg("digits"), 1.0
    if kind == "choice":
        return float(max(len(_text(v).encode()) for v in var.arg("values"))), 1.0
    if kind == "value":
        span = _num_interval(var.arg("value"), env)
        return max(_FLOAT_CHARS, _int_chars(max(abs(span[0]), abs(span[1])))), 1.0
    if kind == "text":
        n = _count_bound(var.arg("length"), env)
        return n * _char_bytes(var.arg("alphabet")), 1 + n
    if kind == "mutate":
        of = sizes.get(var.arg("of"), 0.0)
        return of * (1 + _char_bytes(var.arg("alphabet"))), 1 + of
    n = _count_bound(var.arg("count"), env)
    sep = len(var.arg("sep").encode())
    if kind == "ints":
        return n * (_int_chars(_magnitude(var.arg("range"), env)) + max(sep, 1)), 1 + 2 * n
    if n == 0:  # a repeat whose record is never drawn
        return 0.0, 1.0
    out, steps = _cost(var.arg("record"), dict(env), dict(sizes), f"{where}.repeat")
    return n * (out + sep), 1 + n + n * steps


def _too_big(where: str, size: float, steps: float) -> None:
    """Refuse what may draw more than MAX_DRAWN_BYTES or take more than MAX_DRAW_STEPS."""
    if size > MAX_DRAWN_BYTES:
        raise GeneratorError(
            f"{where}: may draw {size:,.0f} bytes, over the {MAX_DRAWN_BYTES:,} a drawn input "
            "may hold"
        )
    if steps > MAX_DRAW_STEPS:
        raise GeneratorError(
            f"{where}: a draw may take {steps:,.0f} steps (values, records, characters), "
            f"over the {MAX_DRAW_STEPS:,} a draw may take"
        )


def _cost(
    template: _Template, env: dict[str, _Interval], sizes: dict[str, float], where: str
) -> tuple[float, float]:
    """(the most bytes the template renders, the most steps a render takes); a var that
    alone may go over either budget is refused by name (every string a draw builds is
    checked against MAX_DRAWN_BYTES, shown or not)."""
    steps = 1.0 + len(template.parts)
    for var in template.vars:
        at = f"{where}.vars.{var.name}"
        size, var_steps = _var_cost(var, env, sizes, at)
        _too_big(at, size, var_steps)
        env[var.name] = _span(var, env)
        sizes[var.name] = size
        steps += var_steps
    out = sum(
        float(len(p.encode())) if isinstance(p, str) else sizes[p[0]] for p in template.parts
    )
    return out, steps


def _check_class(template: _Template, where: str) -> None:
    """Refuse a class whose draw could fail or run away (the comment above)."""
    _check_cases(template, [{}], where)
    _too_big(where, *_cost(template, {}, {}, where))


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


def _ints_bits(n: int, values: int, distinct: bool, order: str | None) -> float:
    """The min-entropy of n integers drawn uniformly from `values` values, in bits: n
    log2(values) for a plain list; for distinct values (every sequence of distinct values
    equally likely) log2 of values! / (values - n)!; sorted, less log2 of the number of
    orders the likeliest sorted outcome comes from (n! where the values can all differ)."""
    if n <= 0 or values <= 1:
        return 0.0
    if distinct:
        bits = _log2_falling(values, min(n, values))
        return bits - (math.lgamma(n + 1) / math.log(2) if order else 0.0)
    bits = n * math.log2(values)
    if order is None:
        return bits
    q, r = divmod(n, values)  # the likeliest sorted list: multiplicities q or q + 1
    same = r * math.lgamma(q + 2) + (values - r) * math.lgamma(q + 1)
    return max(0.0, bits - (math.lgamma(n + 1) - same) / math.log(2))


def _branches(var: _Var) -> tuple[str | None, ...]:
    """The shapes a var's draws can take: None (plain), and its planted shape where
    it has one with a share above 0 (all of them at a share of 1)."""
    plant = var.arg("plant")
    if plant is None or plant[1] == 0:
        return (None,)
    return (plant[0],) if plant[1] == 1 else (None, plant[0])


def _near_bits(n: int, values: int, distinct: bool) -> float:
    """The min-entropy of a `near` list: its sorted values (a sorted list's bits), and for
    distinct values also which adjacent pairs were swapped: a product of distinct adjacent
    swaps, in any order, is a permutation whose set of swaps it can be told from, so a
    list is at most as likely as the likeliest set, 1 / C(n - 1, k) at the fewest swaps k.
    (Equal values may swap into the same list: there the swaps count nothing.)"""
    bits = _ints_bits(n, values, distinct, "asc")
    swaps = near_swaps(n)
    if distinct and swaps:
        bits += _log2_binomial(n - 1, swaps[0])
    return bits


def _spaced_bits(n: int, values: int, gap: int) -> float:
    """The min-entropy of a `spaced` list of n values over `values` values. Unbent, a list
    costs one coin per place a mark may take (at least ceil(n / gap) of them: a mark
    closes the gap - 1 places after it) and log2(values - 1) per other value, and the
    fewest coins come with the most marks, ceil(n / gap), so the likeliest list has
    m = ceil(n / gap) marks: m + (n - m) log2(values - 1) bits. A bent list comes from at
    most n unbent ones (the moved mark's old place), so a list is at most n times as
    likely as the likeliest unbent one: log2(n) bits less."""
    if n <= 0 or values <= 1:
        return 0.0
    marks = math.ceil(n / gap)
    bits = marks + (n - marks) * math.log2(values - 1) - math.log2(n)
    return max(0.0, bits)


def _log2_binomial(n: int, k: int) -> float:
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)) / math.log(2)


def _log2_falling(values: int, n: int) -> float:
    """log2(values * (values - 1) * ... * (values - n + 1)), without the cancellation a
    difference of two log-gammas of huge arguments suffers."""
    if n <= 100_000:
        return math.fsum(math.log2(values - i) for i in range(n))
    return (math.lgamma(values + 1) - math.lgamma(values - n + 1)) / math.log(2)


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
        per_char = _log2_count(len(set(var.arg("alphabet"))))
        # A mixture's likeliest input is at most as likely as its likeliest branch's: the
        # planted branch fixes half the characters (a palindrome's or the halves' second).
        drawn = {None: n, "halves": n // 2, "palindrome": math.ceil(n / 2)}
        return min(drawn[s] for s in _branches(var)) * per_char, _UNBOUNDED
    if var.kind == "ints":
        n = max(0.0, _num_interval(var.arg("count"), env)[0])
        lo_n, hi_n = var.arg("range")
        width = _least_width(lo_n, hi_n, env)
        values = math.floor(width) + 1 if math.isfinite(width) else 0
        distinct = var.arg("distinct")
        bits = _ints_bits(int(n), values, distinct, var.arg("order"))
        if "near" in _branches(var):
            bits = min(bits, _near_bits(int(n), values, distinct))
        if "spaced" in _branches(var):
            bits = min(bits, _spaced_bits(int(n), values, var.arg("plant").gap))
        return bits, _UNBOUNDED
    if var.kind == "repeat":
        n = max(0.0, _num_interval(var.arg("count"), env)[0])
        record: _Template = var.arg("record")
        if not n:
            return 0.0, _UNBOUNDED
        # A column kept in order is one sorted list of n values, shown once per record.
        columns = _across_vars(record)
        shown = {part[0] for part in record.parts if not isinstance(part, str)}
        bits = n * _template_bits(record, dict(env), frozenset(c.name for c in columns))
        for column in columns:
            if column.name in shown:
                width = _least_width(*column.arg("range"), env)
                values = math.floor(width) + 1 if math.isfinite(width) else 0
                bits += _ints_bits(int(n), values, column.arg("distinct"), column.arg("across"))
        return bits, _UNBOUNDED
    if var.kind == "value":
        return 0.0, _num_interval(var.arg("value"), env)
    return 0.0, _UNBOUNDED  # mutate: its randomness is partly undone by what it copies


def _template_bits(
    template: _Template, env: dict[str, _Interval], without: frozenset[str] = frozenset()
) -> float:
    total = 0.0
    used = {part[0] for part in template.parts if not isinstance(part, str)}
    for var in template.vars:
        bits, span = _var_bits(var, env)
        env[var.name] = span
        # A var no placeholder shows adds nothing to the input by itself (what depends on
        # it, a count or a length, is counted where it is shown).
        if var.name in used and var.name not in without:
            total += bits
    return total


@dataclass(frozen=True)
class _Perturb:
    """Draw one var of a class again, everything else as the seed drew it: does the
    output depend on that var? `high` keeps the low half of an integer's offset in its
    range and draws the high half again (a program that reads 64 bits but uses 32 does
    not notice), or keeps a string's first half and draws its second half again (a
    program that reads `%3s` of a 100-character string does not notice)."""

    var: str
    seed: int
    high: bool = False

    def redraw(self, var: _Var, old: Any, env: dict[str, Any]) -> Any:
        """The var drawn again (up to 16 tries for another value), each try with a step
        budget of its own: a try is bounded like the draw it stands in for."""
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
            elif self.high and var.kind == "text":
                kept = (len(old) + 1) // 2
                new = old[:kept] + _draw_var(var, rng, env, [MAX_DRAW_STEPS])[kept:]
            else:
                new = _draw_var(var, rng, env, [MAX_DRAW_STEPS])
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
        version = data.get("version")
        # `true == 1` in Python; in a spec it is no version (as in suite.json).
        if type(version) is not int or version != GENERATOR_VERSION:
            raise GeneratorError(
                f"{where}.version: this asmopt reads input generators of version "
                f"{GENERATOR_VERSION}, got {json.dumps(version)}"
            )
        raw_classes = data.get("classes")
        if not isinstance(raw_classes, dict) or not raw_classes:
            raise GeneratorError(f"{where}.classes: expected a non-empty object")
        classes = []
        for name, body in raw_classes.items():
            if not _CLASS_RE.match(name):
                raise GeneratorError(f"{where}.classes: invalid class name {name!r}")
            template = _Template.parse(body, f"{where}.classes.{name}")
            _check_across(template, f"{where}.classes.{name}", None)
            _check_class(template, f"{where}.classes.{name}")
            classes.append((name, template))
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
        data = self._template(size_class).render(Rng(seed), {}, [MAX_DRAW_STEPS]).encode()
        _fits(len(data))
        return data

    def draw_changed(
        self, size_class: str, seed: int, field: str, other: int, high: bool = False
    ) -> bytes:
        """The input `draw(size_class, seed)` with one field (a var of the class) drawn
        again from `other`; with `high`, only the high half of an integer field or the
        second half of a string (`wide_fields`). What
        depends on the field (a count, a list's length) follows it."""
        template = self._template(size_class)
        if field not in {v.name for v in template.vars}:
            raise GeneratorError(f"class {size_class!r} has no var {field!r}")
        perturb = _Perturb(field, other, high)
        data = template.render(Rng(seed), {}, [MAX_DRAW_STEPS], perturb).encode()
        _fits(len(data))
        return data

    def entropy_bits(self, size_class: str, without: frozenset[str] = frozenset()) -> float:
        """A lower bound on the min-entropy, in bits, of one input of `size_class`,
        computed from the spec alone (`_template_bits`): a table of T answers covers a
        draw with probability at most T / 2^bits. `without`: top-level vars not counted
        (fields the output was measured not to depend on)."""
        return _template_bits(self._template(size_class), {}, without)

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
        """The fields a program could read whole but use only in part, each with a half
        of its own (`draw_changed(high=True)` draws that half again): the integers whose
        range spans at least 2^32 values (a 64-bit seed), and the strings of at least two
        characters of two letters or more (a program may read `%3s` of a long one)."""
        return tuple(self._half_bits(size_class))

    def half_bits(self, size_class: str, field: str) -> float:
        """The least bits the half of a wide field that `draw_changed(high=True)` draws
        again carries: what a class's entropy loses when the output does not depend on
        that half."""
        return self._half_bits(size_class)[field]

    def _half_bits(self, size_class: str) -> dict[str, float]:
        template = self._template(size_class)
        env: dict[str, _Interval] = {}
        out: dict[str, float] = {}
        for v in template.vars:
            _, env[v.name] = _var_bits(v, env)
            if v.kind == "int":
                lo_n, hi_n = v.arg("range")
                if lo_n.expr is None and hi_n.expr is None and hi_n.const - lo_n.const >= 1 << 32:
                    bits = (hi_n.const - lo_n.const).bit_length()
                    out[v.name] = float(bits - bits // 2)  # what `_Perturb` draws again
            elif v.kind == "text":
                least = max(0.0, _num_interval(v.arg("length"), env)[0])
                letters = len(set(v.arg("alphabet")))
                if least >= 2 and letters >= 2 and math.isfinite(least):
                    out[v.name] = math.floor(least) // 2 * math.log2(letters)
        return out
