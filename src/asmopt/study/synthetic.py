"""A generator of varied, small, compilable C programs, deterministic by seed.

The built-in suite has 45 programs: too few for a language model to learn how C maps to
assembly. The generator fills the gap with programs that exercise the constructs a compiler
treats differently at -O0 .. -O3: integer expressions, loops with conditions, nested loops
over arrays, bit tricks, switch tables, recursion, structs, strings, floating point and
sorting. Every function has external linkage so that gcc emits it even at -O3, and `main`
prints every result so that nothing is dead code.

Only `random.Random(seed)` is used, so `synthetic_program(seed)` returns the same text on
every machine and Python version.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

# Bump when the generated text changes: built corpora record it and are rebuilt on a mismatch.
GENERATOR_VERSION = 1
INT_TYPES = ("int", "unsigned", "long", "unsigned long")
# printf formats of the integer types above.
FORMATS = {"int": "%d", "unsigned": "%u", "long": "%ld", "unsigned long": "%lu", "double": "%.6f"}
VERBS = ("mix", "fold", "scan", "count", "reduce", "step", "walk", "hash", "pick", "blend")
NOUNS = ("vals", "grid", "bits", "keys", "items", "cells", "nodes", "words", "terms", "runs")
LOCALS = ("acc", "sum", "total", "res", "val", "tmp", "cur", "best", "out", "state")


@dataclass(frozen=True)
class Function:
    """One generated function: its C text and how `main` calls it and prints the result."""

    name: str
    text: str
    setup: str  # statements in main before the call (array initialisers)
    call: str  # the expression printed by main
    fmt: str  # printf format of the call's value


class _Gen:
    """Holds the random stream and the counters that keep names unique in one program."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.index = 0

    def name(self) -> str:
        self.index += 1
        return f"{self.rng.choice(VERBS)}_{self.rng.choice(NOUNS)}{self.index}"

    def const(self, low: int = 1, high: int = 97) -> int:
        return self.rng.randint(low, high)

    def local(self) -> str:
        return self.rng.choice(LOCALS)

    def int_type(self) -> str:
        return self.rng.choice(INT_TYPES)

    def array(self, ctype: str, n: int, low: int = -50, high: int = 99) -> str:
        if ctype.startswith("unsigned"):
            low = 0
        return ", ".join(str(self.rng.randint(low, high)) for _ in range(n))

    def expr(self, names: list[str], depth: int) -> str:
        """A random expression tree; shifts use small constants so they stay defined."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            return rng.choice(names) if rng.random() < 0.7 else str(self.const())
        op = rng.choice(("+", "-", "*", "^", "&", "|", "<<", ">>", "+", "*"))
        left = self.expr(names, depth - 1)
        if op in ("<<", ">>"):
            return f"({left} {op} {rng.randint(1, 7)})"
        return f"({left} {op} {self.expr(names, depth - 1)})"


def _arith(g: _Gen) -> Function:
    name, t = g.name(), g.rng.choice(("unsigned", "unsigned long"))
    params = ["a", "b", "c"][: g.rng.randint(2, 3)]
    body = g.expr(params, g.rng.randint(2, 4))
    for p in params:  # every parameter used, so no argument is dead
        if not re.search(rf"\b{p}\b", body):
            body = f"({body} + {p})"
    text = f"{t} {name}({', '.join(f'{t} {p}' for p in params)})\n{{\n    return {body};\n}}\n"
    args = ", ".join(str(g.const(1, 1000)) for _ in params)
    return Function(name, text, "", f"{name}({args})", FORMATS[t])


def _reduce(g: _Gen) -> Function:
    name, t, acc = g.name(), g.int_type(), g.local()
    n = g.rng.randint(5, 16)
    cmp = g.rng.choice(("<", ">", "<=", ">=", "!="))
    op = g.rng.choice(("+=", "^=", "-=", "|="))
    inner = g.expr(["v[i]", "i"], 2)
    text = (
        f"{t} {name}(const {t} *v, int n)\n{{\n    {t} {acc} = {g.const(0, 9)};\n"
        f"    for (int i = 0; i < n; i++) {{\n        if (v[i] {cmp} {g.const(0, 60)})\n"
        f"            {acc} {op} {inner};\n    }}\n    return {acc};\n}}\n"
    )
    arr = f"data{g.index}"
    setup = f"    {t} {arr}[{n}] = {{{g.array(t, n)}}};\n"
    return Function(name, text, setup, f"{name}({arr}, {n})", FORMATS[t])


def _nested(g: _Gen) -> Function:
    name, t = g.name(), g.rng.choice(("int", "long"))
    n = g.rng.randint(3, 6)
    combine = g.rng.choice(
        (
            "a[i * n + j] * a[j * n + i]",
            "a[i * n + j] - a[j * n + i]",
            "a[i * n + j] + i * j",
            "(a[i * n + j] ^ j) + i",
        )
    )
    text = (
        f"{t} {name}(const {t} *a, int n)\n{{\n    {t} s = 0;\n"
        f"    for (int i = 0; i < n; i++)\n        for (int j = 0; j < n; j++)\n"
        f"            s += {combine};\n    return s;\n}}\n"
    )
    arr = f"mat{g.index}"
    setup = f"    {t} {arr}[{n * n}] = {{{g.array(t, n * n, -9, 9)}}};\n"
    return Function(name, text, setup, f"{name}({arr}, {n})", FORMATS[t])


def _bits(g: _Gen) -> Function:
    name = g.name()
    kind = g.rng.choice(("popcount", "reverse", "gcd", "collatz", "digits"))
    if kind == "popcount":
        body = "    int c = 0;\n    while (x) {\n        x &= x - 1;\n        c++;\n    }\n"
        body += "    return c;\n"
        sig, ret = "int", "unsigned x"
    elif kind == "reverse":
        bits = g.rng.choice((8, 16, 32))
        body = (
            f"    unsigned r = 0;\n    for (int i = 0; i < {bits}; i++) {{\n"
            f"        r = (r << 1) | (x & 1u);\n        x >>= 1;\n    }}\n    return r;\n"
        )
        sig, ret = "unsigned", "unsigned x"
    elif kind == "gcd":
        body = (
            f"    unsigned y = {g.const(2, 500)};\n    while (y) {{\n        unsigned t = x % y;\n"
            f"        x = y;\n        y = t;\n    }}\n    return x;\n"
        )
        sig, ret = "unsigned", "unsigned x"
    elif kind == "collatz":
        body = (
            "    int steps = 0;\n    while (x > 1 && steps < 1000) {\n"
            "        x = (x & 1u) ? 3 * x + 1 : x / 2;\n        steps++;\n    }\n"
            "    return steps;\n"
        )
        sig, ret = "int", "unsigned x"
    else:
        base = g.rng.choice((7, 10, 16))
        body = (
            f"    unsigned s = 0;\n    while (x) {{\n        s += x % {base};\n"
            f"        x /= {base};\n    }}\n    return s;\n"
        )
        sig, ret = "unsigned", "unsigned x"
    text = f"{sig} {name}({ret})\n{{\n{body}}}\n"
    fmt = FORMATS["int"] if sig == "int" else FORMATS["unsigned"]
    return Function(name, text, "", f"{name}({g.const(3, 100000)}u)", fmt)


def _switch(g: _Gen) -> Function:
    name, t = g.name(), g.rng.choice(("int", "long"))
    cases = g.rng.randint(3, 8)
    lines = [f"{t} {name}({t} x)\n{{\n    switch (x % {cases + 1}) {{\n"]
    for c in range(cases):
        lines.append(f"    case {c}:\n        return {g.expr(['x'], 2)};\n")
    lines.append(f"    default:\n        return {g.const()};\n    }}\n}}\n")
    arg = g.const(0, 200)
    call = f"{name}({arg}) + {name}({arg + 1}) + {name}({arg + 2})"
    return Function(name, "".join(lines), "", call, FORMATS[t])


def _recursion(g: _Gen) -> Function:
    name, t = g.name(), g.rng.choice(("long", "unsigned long"))
    base = g.const(1, 3)
    op = g.rng.choice(("+", "^", "+", "-"))
    text = (
        f"{t} {name}(int n)\n{{\n    if (n < {base + 1})\n        return {g.const(1, 5)};\n"
        f"    return {name}(n - 1) {op} {name}(n - {g.rng.randint(2, 3)}) * {g.const(1, 4)};\n}}\n"
    )
    return Function(name, text, "", f"{name}({g.rng.randint(8, 18)})", FORMATS[t])


def _struct(g: _Gen) -> Function:
    name = g.name()
    sname = f"rec{g.index}"
    n = g.rng.randint(3, 8)
    field = g.rng.choice(("x * p[i].y", "p[i].x - p[i].y", "p[i].x * p[i].x + p[i].y"))
    field = field if field.startswith("p[") else "p[i]." + field
    text = (
        f"struct {sname} {{\n    int x;\n    int y;\n}};\n\n"
        f"long {name}(const struct {sname} *p, int n)\n{{\n    long s = 0;\n"
        f"    for (int i = 0; i < n; i++)\n        s += {field};\n    return s;\n}}\n"
    )
    pts = ", ".join(f"{{{g.const(-20, 20)}, {g.const(-20, 20)}}}" for _ in range(n))
    arr = f"pts{g.index}"
    setup = f"    struct {sname} {arr}[{n}] = {{{pts}}};\n"
    return Function(name, text, setup, f"{name}({arr}, {n})", FORMATS["long"])


def _string(g: _Gen) -> Function:
    name = g.name()
    kind = g.rng.choice(("hash", "count", "upper"))
    if kind == "hash":
        mul = g.rng.choice((31, 33, 37, 131))
        body = (
            f"    unsigned long h = {g.const(5, 5381)};\n    for (; *s; s++)\n"
            f"        h = h * {mul} + (unsigned char)*s;\n    return h;\n"
        )
        sig, fmt = "unsigned long", FORMATS["unsigned long"]
    elif kind == "count":
        ch = g.rng.choice("aeiost ")
        body = (
            f"    int c = 0;\n    while (*s) {{\n        if (*s == '{ch}')\n            c++;\n"
            f"        s++;\n    }}\n    return c;\n"
        )
        sig, fmt = "int", FORMATS["int"]
    else:
        body = (
            "    int changed = 0;\n    for (int i = 0; s[i]; i++) {\n"
            "        if (s[i] >= 'a' && s[i] <= 'z') {\n            changed++;\n"
            "        }\n    }\n    return changed;\n"
        )
        sig, fmt = "int", FORMATS["int"]
    words = " ".join(
        g.rng.choice(("load", "store", "mov", "add", "loop", "table", "jump", "stack"))
        for _ in range(g.rng.randint(2, 5))
    )
    text = f"{sig} {name}(const char *s)\n{{\n{body}}}\n"
    return Function(name, text, "", f'{name}("{words}")', fmt)


def _float(g: _Gen) -> Function:
    name = g.name()
    n = g.rng.randint(3, 9)
    kind = g.rng.choice(("horner", "dot", "mean"))
    if kind == "horner":
        text = (
            f"double {name}(const double *c, int n, double x)\n{{\n    double r = 0.0;\n"
            f"    for (int i = n - 1; i >= 0; i--)\n        r = r * x + c[i];\n    return r;\n}}\n"
        )
        call_tail = f", {g.const(1, 9) / 4.0}"
    elif kind == "dot":
        text = (
            f"double {name}(const double *c, int n)\n{{\n    double s = 0.0;\n"
            f"    for (int i = 0; i < n; i++)\n        s += c[i] * c[n - 1 - i];\n"
            f"    return s;\n}}\n"
        )
        call_tail = ""
    else:
        text = (
            f"double {name}(const double *c, int n)\n{{\n    double m = 0.0, v = 0.0;\n"
            f"    for (int i = 0; i < n; i++)\n        m += c[i];\n    m /= n;\n"
            f"    for (int i = 0; i < n; i++)\n        v += (c[i] - m) * (c[i] - m);\n"
            f"    return v / n;\n}}\n"
        )
        call_tail = ""
    arr = f"coef{g.index}"
    values = ", ".join(f"{g.rng.randint(-40, 40) / 8.0}" for _ in range(n))
    setup = f"    double {arr}[{n}] = {{{values}}};\n"
    return Function(name, text, setup, f"{name}({arr}, {n}{call_tail})", FORMATS["double"])


def _sort(g: _Gen) -> Function:
    name, t = g.name(), g.rng.choice(("int", "long"))
    n = g.rng.randint(5, 12)
    cmp = g.rng.choice((">", "<"))
    text = (
        f"{t} {name}({t} *v, int n)\n{{\n    for (int i = 1; i < n; i++) {{\n"
        f"        {t} key = v[i];\n        int j = i - 1;\n"
        f"        while (j >= 0 && v[j] {cmp} key) {{\n            v[j + 1] = v[j];\n"
        f"            j--;\n        }}\n        v[j + 1] = key;\n    }}\n"
        f"    return v[0] * {g.const(1, 9)} + v[n - 1];\n}}\n"
    )
    arr = f"buf{g.index}"
    setup = f"    {t} {arr}[{n}] = {{{g.array(t, n)}}};\n"
    return Function(name, text, setup, f"{name}({arr}, {n})", FORMATS[t])


TEMPLATES: tuple[Callable[[_Gen], Function], ...] = (
    _arith,
    _reduce,
    _nested,
    _bits,
    _switch,
    _recursion,
    _struct,
    _string,
    _float,
    _sort,
)


def synthetic_program(seed: int, max_functions: int = 3) -> str:
    """The C source of program `seed`: 1..max_functions functions and a `main` printing them."""
    g = _Gen(seed)
    count = g.rng.randint(1, max(1, max_functions))
    functions = [g.rng.choice(TEMPLATES)(g) for _ in range(count)]
    parts = ["#include <stdio.h>\n"]
    parts += [f.text for f in functions]
    main = ["int main(void)\n{\n"]
    main += [f.setup for f in functions]
    main += [f'    printf("{f.fmt}\\n", {f.call});\n' for f in functions]
    main.append("    return 0;\n}\n")
    parts.append("".join(main))
    return "\n".join(parts)
