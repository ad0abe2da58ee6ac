"""Mutants of a program's -O3 baseline, as text: the mutation operators (`MUTATIONS`: one
arithmetic or branch instruction changed), the sites of a .s where they apply and the
order they are tried in, and the assembly with one site mutated. check.py builds and
judges them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from asmopt.adequacy.report import Mutation

_SIZE = "bwlq"
_ARITH: dict[str, str] = {
    "add": "sub",
    "sub": "add",
    "imul": "add",
    "xor": "or",
    "and": "or",
    "or": "and",
    "inc": "dec",
    "dec": "inc",
    "shl": "shr",
    "sal": "shr",
    "shr": "shl",
    "sar": "shr",
}
# SSE / AVX forms have no size suffix; a leading `v` (AVX) is kept.
_VECTOR: dict[str, str] = {
    "addsd": "subsd",
    "subsd": "addsd",
    "addss": "subss",
    "subss": "addss",
    "mulsd": "addsd",
    "mulss": "addss",
    "divsd": "mulsd",
    "divss": "mulss",
    "addpd": "subpd",
    "subpd": "addpd",
    "addps": "subps",
    "subps": "addps",
    "mulpd": "addpd",
    "mulps": "addps",
    "paddb": "psubb",
    "paddw": "psubw",
    "paddd": "psubd",
    "paddq": "psubq",
    "psubb": "paddb",
    "psubw": "paddw",
    "psubd": "paddd",
    "psubq": "paddq",
    "pmulld": "paddd",
    "pmullw": "paddw",
    "pxor": "por",
    "pand": "por",
}
_COND: dict[str, str] = {
    "e": "ne",
    "ne": "e",
    "z": "nz",
    "nz": "z",
    "l": "ge",
    "ge": "l",
    "g": "le",
    "le": "g",
    "b": "ae",
    "ae": "b",
    "a": "be",
    "be": "a",
    "s": "ns",
    "ns": "s",
    "nb": "b",
    "nae": "ae",
    "c": "nc",
    "nc": "c",
}
# Documented set of mutation operators (mnemonic family -> replacement).
MUTATIONS: dict[str, str] = {
    **{f"{k}[bwlq]": f"{v}[bwlq]" for k, v in _ARITH.items()},
    **{f"[v]{k}": f"[v]{v}" for k, v in _VECTOR.items()},
    **{f"j{k}": f"j{v}" for k, v in _COND.items()},
    **{f"set{k}": f"set{v}" for k, v in _COND.items()},
    **{f"cmov{k}": f"cmov{v}" for k, v in _COND.items()},
}
# With the same register twice these are idioms, not arithmetic: `xor %eax, %eax` zeroes
# (before a variadic call it only sets %al, which `or` leaves as harmlessly large),
# `pxor %xmm0, %xmm0` breaks a dependency before a conversion, `and`/`or` of a register with
# itself only sets flags. Mutating them gives equivalent mutants, so they are no sites.
_SELF_IDIOMS = {"xor", "sub", "and", "or", "pxor", "pand", "psubb", "psubw", "psubd", "psubq"}
_PREFIXES = {"lock", "rep", "repe", "repz", "repne", "repnz", "notrack", "bnd", "data16"}
_TYPE_RE = re.compile(r"^\s*\.type\s+([^,\s]+)\s*,\s*[@%]function")
_SIZE_RE = re.compile(r"^\s*\.size\s+([^,\s]+)\s*,")
_LABEL_RE = re.compile(r"^\s*([A-Za-z_.$][\w.$@]*):\s*$")


def mutate_mnemonic(mnemonic: str) -> str | None:
    """The mutated mnemonic, or None when `mnemonic` is not a mutation site."""
    m = mnemonic.lower()
    if m.startswith("j") and m[1:] in _COND:
        return "j" + _COND[m[1:]]
    if m.startswith("set") and m[3:] in _COND:
        return "set" + _COND[m[3:]]
    if m.startswith("cmov"):
        rest = m[4:]
        if rest in _COND:
            return "cmov" + _COND[rest]
        if rest[:-1] in _COND and rest[-1:] in _SIZE:
            return "cmov" + _COND[rest[:-1]] + rest[-1]
        return None
    if m in _VECTOR:
        return _VECTOR[m]
    if m.startswith("v") and m[1:] in _VECTOR:
        return "v" + _VECTOR[m[1:]]
    if m in _ARITH:
        return _ARITH[m]
    if m[:-1] in _ARITH and m[-1:] in _SIZE:
        return _ARITH[m[:-1]] + m[-1]
    return None


@dataclass(frozen=True)
class MutationSite:
    """A line inside a function body whose instruction has a mutation."""

    function: str
    index: int  # 0-based line index in the assembly text
    original: str
    mutated_line: str

    @property
    def mutation(self) -> Mutation:
        return Mutation(self.function, self.index + 1, self.original, self.mutated_line.strip())


def _instruction(line: str) -> str:
    """The instruction text of a line: comments removed, stripped."""
    return line.split("#", 1)[0].strip()


def function_bodies(assembly: str) -> list[tuple[str, int, int]]:
    """(name, first body line index, end index) for every function the .s defines.

    A function is a symbol declared `.type NAME, @function`; its body runs from the line
    after `NAME:` to its `.size NAME, ...` directive (gcc's layout, also for clones such
    as `main.cold` or `f.constprop.0`)."""
    lines = assembly.splitlines()
    declared: set[str] = set()
    open_fn: dict[str, int] = {}
    out: list[tuple[str, int, int]] = []
    for i, line in enumerate(lines):
        m = _TYPE_RE.match(line)
        if m:
            declared.add(m.group(1))
            continue
        m = _LABEL_RE.match(line)
        if m and m.group(1) in declared and m.group(1) not in open_fn:
            open_fn[m.group(1)] = i + 1
            continue
        m = _SIZE_RE.match(line)
        if m and m.group(1) in open_fn:
            out.append((m.group(1), open_fn.pop(m.group(1)), i))
    return out


def mutation_sites(assembly: str) -> list[MutationSite]:
    """Every mutable instruction inside a function body, in file order.

    Directives (lines starting with `.`), labels and prefixed instructions are never sites,
    and neither is anything that touches %rsp (stack adjustments crash at once, which says
    nothing about the tests) nor a register-with-itself idiom (`_SELF_IDIOMS`)."""
    lines = assembly.splitlines()
    sites: list[MutationSite] = []
    for name, start, end in function_bodies(assembly):
        for i in range(start, end):
            text = _instruction(lines[i])
            if not text or text.startswith(".") or _LABEL_RE.match(lines[i]):
                continue
            parts = text.split(None, 1)
            mnemonic = parts[0]
            if mnemonic.lower() in _PREFIXES or mnemonic.endswith(":"):
                continue
            if "%rsp" in text or "%esp" in text:
                continue
            new = mutate_mnemonic(mnemonic)
            if new is None or _self_idiom(mnemonic, parts[1] if len(parts) > 1 else ""):
                continue
            pos = lines[i].index(mnemonic)
            mutated = lines[i][:pos] + new + lines[i][pos + len(mnemonic) :]
            sites.append(MutationSite(name, i, text, mutated))
    return sites


def _self_idiom(mnemonic: str, operands: str) -> bool:
    ops = [o.strip() for o in operands.split(",")]
    if len(ops) != 2 or ops[0] != ops[1] or not ops[0].startswith("%"):
        return False
    m = mnemonic.lower().removeprefix("v")
    return m in _SELF_IDIOMS or (m[:-1] in _SELF_IDIOMS and m[-1:] in _SIZE)


def _site_key(site: MutationSite) -> str:
    return hashlib.sha256(f"{site.function}\0{site.index}\0{site.original}".encode()).hexdigest()


def ordered_sites(assembly: str) -> list[MutationSite]:
    """Mutation sites in the order they are tried: spread over the functions.

    Functions with more sites come first (that is where the work is); within a function the
    order is a hash of (function, line, text), so it is fixed for a given assembly yet not
    bunched at the top of a function; then one site per function in turn."""
    by_fn: dict[str, list[MutationSite]] = {}
    for site in mutation_sites(assembly):
        by_fn.setdefault(site.function, []).append(site)
    order = sorted(by_fn, key=lambda f: -len(by_fn[f]))  # stable: file order on ties
    queues = [sorted(by_fn[f], key=_site_key) for f in order]
    out: list[MutationSite] = []
    depth = 0
    while any(depth < len(q) for q in queues):
        out.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return out


def apply_mutation(assembly: str, site: MutationSite) -> str:
    """`assembly` with exactly the line of `site` replaced."""
    lines = assembly.splitlines(keepends=True)
    ending = lines[site.index][len(lines[site.index].rstrip("\r\n")) :]
    lines[site.index] = site.mutated_line + ending
    return "".join(lines)
