"""Find the assembly in a model's answer.

Rule (as in the reference harness): the text after the LAST opening fence tagged as
assembly, up to the closing fence. We also accept `asm`, `s`, `x86asm`, `gas`, `nasm`-less
GNU tags, a missing closing fence (truncated generation) and prose around the block. When
no tagged fence exists, an untagged fence whose body looks like assembly is accepted.
"""

from __future__ import annotations

import re

ASM_TAGS = ("assembly", "asm", "s", "x86asm", "x86", "gas", "x86-64", "x86_64", "nasm")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+\-]*)[^\n]*$", re.M)


def _blocks(text: str) -> list[tuple[str, str, bool]]:
    """(tag, body, closed) for each fenced block, in order."""
    out = []
    pos = 0
    while True:
        m = _FENCE.search(text, pos)
        if m is None:
            return out
        fence, tag = m.group(1), m.group(2).lower()
        body_start = m.end() + 1
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)
        c = close.search(text, body_start)
        if c is None:
            out.append((tag, text[body_start:], False))
            return out
        out.append((tag, text[body_start : c.start()], True))
        pos = c.end()


def _writable(body: str) -> str | None:
    """`body`, or None when it holds a lone surrogate (a str that decoded JSON or Python
    code can hold, but no UTF-8 file can): such an answer has no file to assemble or
    patch, so it is the model's extraction_error, never a failure of the build behind it."""
    try:
        body.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return body


def _looks_like_assembly(body: str) -> bool:
    return bool(re.search(r"^\s*(main:|\.globl|\.text|\.section)", body, re.M))


def extract_fenced(text: str, tags: tuple[str, ...]) -> str | None:
    blocks = [b for b in _blocks(text) if b[0] in tags]
    if not blocks:
        return None
    body = blocks[-1][1]
    return _writable(body) if body.strip() else None


def extract_assembly(text: str) -> str | None:
    """The candidate assembly in `text`, or None (an extraction_error)."""
    if not text or not text.strip():
        return None
    found = extract_fenced(text, ASM_TAGS)
    if found is not None:
        return found if found.endswith("\n") else found + "\n"
    untagged = [b for b in _blocks(text) if b[0] == "" and _looks_like_assembly(b[1])]
    if untagged:
        body = untagged[-1][1]
        return _writable(body if body.endswith("\n") else body + "\n")
    if "```" not in text and _looks_like_assembly(text) and "main:" in text:
        return _writable(text if text.endswith("\n") else text + "\n")
    return None


def extract_diff(text: str) -> str | None:
    """The unified diff in a `diff`/`patch` fence (or a bare diff), else None."""
    found = extract_fenced(text, ("diff", "patch", "udiff"))
    if found is not None:
        return found
    if re.search(r"^@@ ", text, re.M):
        return _writable(text)
    return None
