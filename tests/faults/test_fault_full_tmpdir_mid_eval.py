"""A $TMPDIR with room for a small run but not for a test's large input: the run that cannot
be staged is our failure (infra_error, retried by a rerun), never the answer's, although a
known-good probe still runs fine in the room that is left (docs/faults.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from faultkit import env, host_view, write_program, write_suite

COUNT_C = """#include <stdio.h>
int main(void) {
    long n = 0;
    while (getchar() != EOF) n++;
    printf("%ld\\n", n);
    return 0;
}
"""

SCRIPT = """
TMPDIR="$DISK" "$PY" -m asmopt.cli eval --suite "$SUITE" --policy identity --measure none \
    --run-dir "$RUN" --json
echo "rc=$?"
"""


def test_a_run_that_cannot_be_staged_is_never_charged_to_the_answer(tmp_path: Path) -> None:
    big = "x" * 600_000 + "\n"
    suite = tmp_path / "suite"
    write_program(
        suite,
        "count",
        source=COUNT_C,
        tests={"small": ("abc\n", "4\n"), "big": (big, f"{len(big)}\n")},
    )
    write_suite(suite, ["count"])
    disk = Path(tempfile.mkdtemp(prefix="small-tmpdir-"))
    child_env = env()
    child_env.update(PY=sys.executable, DISK=str(disk), RUN=str(tmp_path / "run"),
                     SUITE=str(suite))  # fmt: skip
    proc = subprocess.run(
        [*host_view("--size", "400000", "--tmpfs", str(disk)), "sh", "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        env=child_env,
    )
    assert "rc=0" in proc.stdout.splitlines(), (proc.stdout, proc.stderr)
    report = json.loads(proc.stdout[: proc.stdout.rindex("rc=")])
    (sample,) = report["results"]
    assert sample["verdict"] == "infra_error", sample
    assert "no space left" in json.dumps(sample), sample
    assert "Traceback" not in proc.stderr, proc.stderr
