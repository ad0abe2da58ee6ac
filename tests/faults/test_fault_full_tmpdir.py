"""A full $TMPDIR when the sandbox starts: one line naming the directory, no traceback, nothing
left behind (docs/faults.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from faultkit import env

BWRAP = shutil.which("bwrap")

SCRIPT = """
dd if=/dev/zero of="$DISK/fill" bs=1k count=4000 2>/dev/null
TMPDIR="$DISK" "$PY" -m asmopt.cli eval --only gcd_pairs --measure none --run-dir "$RUN"
echo "rc=$?"
ls -A "$DISK"
"""


def test_a_full_tmpdir_is_named_when_the_sandbox_starts(tmp_path: Path) -> None:
    disk = Path(tempfile.mkdtemp(prefix="full-tmpdir-"))
    assert BWRAP is not None
    child_env = env()
    child_env.update(PY=sys.executable, DISK=str(disk), RUN=str(tmp_path / "run"))
    bind = [BWRAP, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    proc = subprocess.run(
        [*bind, "--size", "200000", "--tmpfs", str(disk), "sh", "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        env=child_env,
    )
    out = proc.stdout.splitlines()
    assert "rc=2" in out, (proc.stdout, proc.stderr)
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("asmopt: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"the temporary directory ({disk}) is full" in errors[0]
    assert out[out.index("rc=2") + 1 :] == ["fill"]  # nothing of ours left in it
