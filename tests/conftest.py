"""Shared fixtures: one sandbox and one toolchain per test session, with a private cache."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_CACHE = tempfile.mkdtemp(prefix="asmopt-test-cache-")
os.environ.setdefault("ASMOPT_CACHE_DIR", _CACHE)
# A private temporary directory for this test session: sandbox run directories are created
# here, so leftovers are attributed to these tests and not to other work on the machine.
_TMP = tempfile.mkdtemp(prefix="asmopt-test-tmp-")
os.chmod(_TMP, 0o755)
os.environ["TMPDIR"] = _TMP
tempfile.tempdir = _TMP

from asmopt.sandbox import Sandbox  # noqa: E402
from asmopt.toolchain import Toolchain  # noqa: E402


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    box = Sandbox()
    box.check()
    return box


@pytest.fixture(scope="session")
def toolchain(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Toolchain:
    return Toolchain(sandbox=sandbox, cache_dir=tmp_path_factory.mktemp("builds"))


@pytest.fixture()
def no_leftovers() -> Iterator[None]:
    """Fail if a test leaves sandbox run directories or sandboxed processes behind."""
    tmp = Path(tempfile.gettempdir())
    before = {p.name for p in tmp.glob("asmopt-run-*")} | {
        p.name for p in tmp.glob("asmopt-build-*")
    }
    yield
    after = {p.name for p in tmp.glob("asmopt-run-*")} | {
        p.name for p in tmp.glob("asmopt-build-*")
    }
    assert after <= before, f"left behind: {sorted(after - before)}"
    assert sandboxed_processes() == [], f"processes left running: {sandboxed_processes()}"


def sandboxed_processes() -> list[str]:
    """Live processes of this test session's sandboxes.

    Every sandbox's bwrap command line names its run directory under the session's private
    temporary directory, and when bwrap is gone its pid namespace (with everything the
    program started) is gone too."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            status = (proc / "status").read_text()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "\nState:\tZ" in status:
            continue  # already dead, waiting for the host's init to reap it
        if _TMP in cmdline:
            found.append(f"{proc.name}: {cmdline[:100]}")
    return found
