"""Deterministic mode: instruction counts repeat exactly; unsupported code is unmeasurable."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from asmopt.measure.speedup import MeasureStatus
from asmopt.measure.valgrind import Valgrind, count_instructions, instruction_speedup
from asmopt.programs.model import Program, TestCase
from asmopt.sandbox import Sandbox
from asmopt.toolchain import Toolchain

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind missing")

LOOP_C = r"""
#include <stdio.h>
int main(void) {
    long n; if (scanf("%ld", &n) != 1) return 1;
    unsigned long s = 0;
    for (long i = 0; i < n; i++) s += (unsigned long)i * i % 7;
    printf("%lu\n", s);
    return 0;
}
"""

AVX512_S = """\t.text
\t.globl main
main:
\tvpxord %zmm0, %zmm0, %zmm0
\txorl %eax, %eax
\tret
\t.section .note.GNU-stack,"",@progbits
"""


@pytest.fixture(scope="module")
def loop_binary(toolchain: Toolchain) -> Path:
    build = toolchain.compile_binary(Program(id="loop", source=LOOP_C, tests=()), ("-O2",))
    assert build.ok and build.output is not None
    return build.output


def test_counts_are_deterministic(sandbox: Sandbox, loop_binary: Path) -> None:
    test = TestCase("t1", b"20000\n", b"39998\n")
    vg = Valgrind.locate()
    counts = [count_instructions(sandbox, loop_binary, test, valgrind=vg) for _ in range(3)]
    assert all(c.status == MeasureStatus.MEASURED for c in counts), counts[0].message
    assert len({c.count for c in counts}) == 1
    sp = instruction_speedup("t1", counts[0], counts[1])
    assert sp.ratio == 1.0 and sp.low == sp.high == 1.0


def test_more_work_means_more_instructions(sandbox: Sandbox, loop_binary: Path) -> None:
    small = count_instructions(sandbox, loop_binary, TestCase("a", b"1000\n", b"2001\n"))
    large = count_instructions(sandbox, loop_binary, TestCase("b", b"20000\n", b"39998\n"))
    assert small.count and large.count and large.count > small.count + 100_000


def test_wrong_output_under_valgrind_is_reported(sandbox: Sandbox, loop_binary: Path) -> None:
    res = count_instructions(sandbox, loop_binary, TestCase("t", b"10\n", b"wrong\n"))
    assert res.status == MeasureStatus.INFRA_ERROR and res.candidate_fault
    assert "wrong_output" in res.message


def test_instructions_valgrind_cannot_run_are_unmeasurable(
    toolchain: Toolchain, sandbox: Sandbox
) -> None:
    build = toolchain.assemble_and_link(AVX512_S)
    assert build.ok and build.output is not None, build.message
    res = count_instructions(sandbox, build.output, TestCase("t", b"", b""))
    assert res.status == MeasureStatus.UNMEASURABLE
    assert "0x62" in res.message and "--measure time" in res.message


# A candidate counted under cachegrind runs with a /proc of the sandbox's own (valgrind
# needs /proc/self/maps). It looks through every process that /proc shows for one of the
# host's (the grader's Python, the test runner): it must see none, and only the few
# processes of its own sandbox (bubblewrap's init inside the pid namespace, the launcher,
# valgrind running it).
PROC_SPY_C = r"""
#include <dirent.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    DIR *d = opendir("/proc");
    if (!d) { puts("sealed"); return 0; }
    struct dirent *e;
    int seen = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        seen++;
        char path[300], buf[4096];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i++) if (buf[i] == 0) buf[i] = ' ';
        buf[n] = 0;
        if (strstr(buf, "python") || strstr(buf, "pytest")) {
            printf("leak %s\n", buf);
            return 0;
        }
    }
    closedir(d);
    if (seen > 6) { printf("leak %d processes\n", seen); return 0; }
    puts("sealed");
    return 0;
}
"""


def test_a_candidate_under_cachegrind_sees_no_process_of_the_host(
    toolchain: Toolchain, sandbox: Sandbox
) -> None:
    build = toolchain.compile_binary(Program(id="spy", source=PROC_SPY_C, tests=()), ("-O2",))
    assert build.ok and build.output is not None
    res = count_instructions(sandbox, build.output, TestCase("t", b"", b"sealed\n"))
    assert res.status == MeasureStatus.MEASURED, res.message


def test_a_run_marker_is_refused_where_the_sandbox_mounts_its_own_proc(
    sandbox: Sandbox, loop_binary: Path
) -> None:
    """The /proc a tool run mounts shows bubblewrap's and the launcher's command lines,
    and with them a run marker: a candidate that read it could write it and forge where
    another run's output begins. Such a run is refused before anything starts, unless the
    binaries are the suite's own (`trusted`)."""
    from asmopt.sandbox.records import ToolRun

    with pytest.raises(ValueError, match="own /proc"):
        sandbox.run_binaries([loop_binary], [0], marker="secret1", tool=ToolRun(mount_proc=True))
    trusted = sandbox.run_binaries(
        [loop_binary], [0], marker="secret1", tool=ToolRun(mount_proc=True, trusted=True)
    )
    assert trusted.infra_error is None and len(trusted.segments or ()) == 1
