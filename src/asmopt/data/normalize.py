"""Source normalisation for deduplication: comments and whitespace removed.

Two submissions that differ only in comments, indentation or blank lines are the same
program for benchmarking purposes; keeping both would put one problem's near-identical
copies in the data twice (and possibly across splits before problem grouping).
"""

from __future__ import annotations

import hashlib


def strip_comments(source: str) -> str:
    """Remove // and /* */ comments, leaving string and character literals intact."""
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        nxt = source[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = source.find("\n", i)
            i = n if j < 0 else j  # keep the newline itself
        elif c == "/" and nxt == "*":
            j = source.find("*/", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            out.append(source[i : j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def normalize_source(source: str) -> str:
    """Comments removed, then every whitespace character removed."""
    return "".join(strip_comments(source).split())


def source_key(source: str) -> str:
    return hashlib.sha256(normalize_source(source).encode()).hexdigest()
