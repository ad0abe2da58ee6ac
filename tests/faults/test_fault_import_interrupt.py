"""`data import` stopped by SIGTERM or Ctrl-C (twice), and a disk that fills as it writes:
one line, the conventional exit status, nothing written to the output, no temporary
directory left, and a rerun of the same command works (docs/faults.md)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from faultkit import asmopt_cmd, env, host_view

SLOW_C = """#include <stdio.h>
int main(void) {
    long n = 0, s = 0;
    if (scanf("%ld", &n) != 1) return 1;
    for (long i = 0; i < n * 40000000L; i++) s += i ^ (s >> 3);
    printf("%ld\\n", s & 1023);
    return 0;
}
"""


def _pool(root: Path, programs: int = 4) -> Path:
    for k in range(programs):
        pdir = root / f"slow{k}"
        (pdir / "tests").mkdir(parents=True)
        (pdir / f"slow{k}.c").write_text(SLOW_C)
        (pdir / "tests" / "1.in").write_text(f"{k + 1}\n")
    return root


def _private_tmp() -> Path:
    tmp = Path(tempfile.mkdtemp(prefix="import-stop-"))
    tmp.chmod(0o755)
    return tmp


@pytest.mark.parametrize(
    ("signals", "status"),
    [((signal.SIGTERM,), 143), ((signal.SIGINT, signal.SIGINT), 130)],
    ids=["sigterm", "two_ctrl_c"],
)
def test_an_interrupted_import_stops_cleanly(
    tmp_path: Path, signals: tuple[int, ...], status: int
) -> None:
    pool, out, tmp = _pool(tmp_path / "pool"), tmp_path / "out", _private_tmp()
    child_env = env()
    child_env["TMPDIR"] = str(tmp)
    cmd = asmopt_cmd("data", "import", "dir", str(pool), "-o", str(out))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env)
    deadline = time.monotonic() + 120
    while not any(p.name.startswith("asmopt-run-") for p in tmp.iterdir()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no sandboxed run started"
        time.sleep(0.05)
    for sig in signals:
        proc.send_signal(sig)
    started = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - started < 30  # the running work was ended, not waited for
    assert proc.returncode == status, err
    assert "Traceback" not in err, err
    stops = [ln for ln in err.splitlines() if ln.startswith("asmopt: interrupted")]
    assert len(stops) == 1 and "nothing is written" in stops[0], err
    assert not out.exists()
    assert list(tmp.iterdir()) == []
    shutil.rmtree(tmp)


def test_a_disk_that_fills_while_the_suite_is_written_leaves_the_output_as_it_was(
    tmp_path: Path,
) -> None:
    """The suite is written beside the output and moved into place when whole: a full disk
    names the output, leaves it as it was, and the same command works once there is room."""
    pool = tmp_path / "pool"
    pdir = pool / "big"
    (pdir / "tests").mkdir(parents=True)
    (pdir / "big.c").write_text(
        "#include <stdio.h>\nint main(void){int c; long n=0; while((c=getchar())!=EOF) n+=c;"
        ' printf("%ld\\n", n); return 0;}\n'
    )
    (pdir / "tests" / "1.in").write_text("x" * 300_000 + "\n")
    disk = Path(tempfile.mkdtemp(prefix="small-disk-"))
    script = (
        f'"{sys.executable}" -m asmopt.cli data import dir "{pool}" -o "$DISK/out" '
        "--no-mutator --no-adequacy; echo rc=$?; ls -A \"$DISK\""
    )
    proc = subprocess.run(
        [*host_view("--size", "200000", "--tmpfs", str(disk)), "sh", "-c", script],
        capture_output=True, text=True, timeout=300, env={**env(), "DISK": str(disk)},
    )
    lines = proc.stdout.splitlines()
    assert "rc=2" in lines, (proc.stdout, proc.stderr)
    assert lines[lines.index("rc=2") + 1 :] == []  # neither the output nor a partial copy
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("asmopt: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{disk}/out" in errors[0] and "free disk space and rerun" in errors[0], errors
    # With room again, the same command writes the suite.
    again = subprocess.run(
        asmopt_cmd("data", "import", "dir", str(pool), "-o", str(tmp_path / "out"),
                   "--no-mutator", "--no-adequacy"),
        capture_output=True, text=True, timeout=300, env=env(),
    )
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "out" / "suite.json").exists()
