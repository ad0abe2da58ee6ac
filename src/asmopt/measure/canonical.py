"""Canonical form of GNU-as x86-64 assembly, to recognise answers that copy the baseline.

A model rewarded for "correct" learns that returning its input is always correct (the
reference harness even scores an identical answer as a 1.0x success). Exact text equality
misses copies that differ only in things that change no instruction, so both texts are
reduced to a canonical form first:

* comments (`#` to end of line, `/* ... */`) are removed, string literals are kept as is;
* whitespace is normalised (one space after the mnemonic, none around commas, no blank
  lines) and `;`-separated statements are split;
* bookkeeping directives are dropped: `.file`, `.ident`, `.loc`, `.size`, `.type`, every
  `.cfi_*`, and note sections (`.note.GNU-stack`, `.note.gnu.property`) with their contents;
  alignment, section, symbol-visibility and data directives are kept, because they can
  change what runs or how fast;
* labels that are defined in the file and not exported (`.globl`) are renamed in order of
  first appearance, so `.L3` -> `.Lloop` is still a copy; exported and external names stay;
  local labels nothing refers to are dropped.

Anything else, such as one changed operand or two swapped instructions, is a real edit.
"""

from __future__ import annotations

import hashlib
import re

_DROP_DIRECTIVES = {".file", ".ident", ".loc", ".loc_view", ".size", ".type"}
_SECTION_SWITCH = {
    ".text",
    ".data",
    ".bss",
    ".section",
    ".previous",
    ".pushsection",
    ".popsection",
}
_LABEL_DEF = re.compile(r"^([A-Za-z_.$][\w.$]*):")
_IDENT = re.compile(r"[A-Za-z_.$][\w.$]*")
_SPACE = re.compile(r"[ \t\f\v]+")


def _strip_comments(text: str) -> str:
    """Remove `#` and `/* */` comments outside string literals; keep line structure."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"' or ch == "\n":
                in_string = False
            i += 1
            continue
        if ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        elif ch == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif ch == "/" and i + 1 < n and text[i + 1] == "*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _split_outside_strings(line: str, sep: str) -> list[str]:
    parts, cur, in_string, i = [], [], False, 0
    while i < len(line):
        ch = line[i]
        if in_string and ch == "\\" and i + 1 < len(line):
            cur.append(line[i : i + 2])
            i += 2
            continue
        if ch == '"':
            in_string = not in_string
        if ch == sep and not in_string:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def _normalise_space(stmt: str) -> str:
    """One space between mnemonic and operands, none around commas; strings untouched."""
    pieces = re.split(r'("(?:[^"\\]|\\.)*")', stmt)
    out = []
    for k, piece in enumerate(pieces):
        if k % 2 == 1:
            out.append(piece)
            continue
        piece = _SPACE.sub(" ", piece)
        piece = re.sub(r" ?, ?", ",", piece)
        out.append(piece)
    return "".join(out).strip()


def statements(text: str) -> list[str]:
    """Comment-free, whitespace-normalised statements, labels on their own."""
    result: list[str] = []
    for line in _strip_comments(text).splitlines():
        for raw in _split_outside_strings(line, ";"):
            stmt = _normalise_space(raw)
            while True:
                m = _LABEL_DEF.match(stmt)
                if not m:
                    break
                result.append(m.group(1) + ":")
                stmt = stmt[m.end() :].strip()
            if stmt:
                result.append(stmt)
    return result


def _directive(stmt: str) -> str:
    return stmt.split(" ", 1)[0].split(",", 1)[0] if stmt.startswith(".") else ""


def canonical_statements(text: str) -> list[str]:
    """The canonical form as a list of statements (see the module docstring)."""
    kept: list[str] = []
    in_note = False
    for stmt in statements(text):
        name = _directive(stmt)
        if name in _SECTION_SWITCH:
            target = stmt[len(name) :].strip().split(",", 1)[0].strip()
            in_note = name in (".section", ".pushsection") and target.startswith(".note")
            if in_note:
                continue
            if name == ".section" and target in (".text", ".data", ".bss"):
                stmt = target  # `.section .text` and `.text` are the same thing
        elif in_note:
            continue
        if name in _DROP_DIRECTIVES or name.startswith(".cfi_"):
            continue
        kept.append(stmt)
    exported: set[str] = set()
    defined: set[str] = set()
    for stmt in kept:
        name = _directive(stmt)
        if name in (".globl", ".global"):
            exported.update(s.strip() for s in stmt[len(name) :].split(","))
        m = _LABEL_DEF.match(stmt)
        if m and stmt == m.group(0):
            defined.add(m.group(1))
    local = defined - exported
    # A local label nothing refers to (gcc's .LFB/.LFE, once .cfi and debug directives are
    # gone) changes nothing: its definition is dropped.
    used: set[str] = set()
    for stmt in kept:
        m = _LABEL_DEF.match(stmt)
        if m and stmt == m.group(0):
            continue
        for k, piece in enumerate(re.split(r'("(?:[^"\\]|\\.)*")', stmt)):
            if k % 2 == 0:
                used.update(w for w in _IDENT.findall(piece) if w in local)
    kept = [
        stmt
        for stmt in kept
        if not ((m := _LABEL_DEF.match(stmt)) and stmt == m.group(0) and m.group(1) in local - used)
    ]
    mapping: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        word = m.group(0)
        if word not in local:
            return word
        if word not in mapping:
            mapping[word] = f".Lc{len(mapping)}"
        return mapping[word]

    out = []
    for stmt in kept:
        pieces = re.split(r'("(?:[^"\\]|\\.)*")', stmt)
        out.append("".join(p if k % 2 else _IDENT.sub(rename, p) for k, p in enumerate(pieces)))
    return out


def canonical_text(text: str) -> str:
    return "\n".join(canonical_statements(text)) + "\n"


def canonical_hash(text: str) -> str:
    """sha256 of the canonical form: equal hashes mean the texts are copies of each other."""
    return hashlib.sha256(canonical_text(text).encode("utf-8")).hexdigest()


def content_hash(text: str) -> str:
    """sha256 of the exact text: the key of a candidate in the results store."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_copy(candidate: str, baseline: str) -> bool:
    """True if `candidate` is `baseline` up to comments, whitespace, bookkeeping directives
    and the names of local labels."""
    return canonical_statements(candidate) == canonical_statements(baseline)
