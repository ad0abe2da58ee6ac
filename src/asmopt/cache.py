"""Where asmopt keeps derived files (compiled launcher, build cache).

Everything under the cache root can be deleted at any time; it is rebuilt on demand.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """`$ASMOPT_CACHE_DIR`, else `$XDG_CACHE_HOME/asmopt`, else `~/.cache/asmopt`."""
    explicit = os.environ.get("ASMOPT_CACHE_DIR")
    if explicit:
        root = Path(explicit)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(base) / "asmopt"
    root.mkdir(parents=True, exist_ok=True)
    return root
