"""Run untrusted binaries (and the toolchain) inside bubblewrap with hard limits.

Two profiles:

* `run_program`: the candidate binary sees almost nothing. Its root is an empty tmpfs with
  only the dynamic loader, libc and libm bound read-only, a private size-limited /tmp, a
  minimal /dev, no /proc, no network, new pid/ipc/uts/user namespaces. It runs as an
  unprivileged uid under the launcher's rlimits and seccomp filter. It never sees the
  project, the suite, the expected outputs or any home directory.
* `run_toolchain`: gcc/as/ld need the system's /usr, so the compiler runs with /usr and the
  library directories read-only, a private /tmp, and a writable work directory holding
  only the file being built; directories that hold suites or this package are masked
  even when they sit under /usr. This stops `.incbin "/path/to/expected.out"` and
  `#include "/etc/shadow"` from smuggling data into a binary.

A wall-clock deadline kills the whole sandbox (pid namespace included), so no process it
started survives. Failures of our own side are reported as `infra_error`, never as a
verdict on the candidate.

This module is the `Sandbox` the callers hold: what it was given and found, and each public
method handing its work to the module whose job it is. Whether the host can isolate a
program is in availability.py; a batch of program runs in batch.py and a toolchain command
in toolchain_run.py; the command lines (bubblewrap's mounts and environment, the launcher's
limits) in commands.py; a run staged on the host's disk in staging.py; starting a sandbox,
watching its deadline and collecting its result in execution.py, and ending it in ending.py.
Below those: the records a run is asked with and returns (records.py), what the sandbox
takes from the host (host.py), the launcher's plan of the runs (plan.py), reading the
sandbox's output (streams.py), and finding and killing its processes (reaping.py).
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

from asmopt.sandbox.availability import UNSAFE_ENV, HostSupport, description
from asmopt.sandbox.batch import (
    ENV_PAD_MAX,
    MAX_BINARIES,
    MAX_INPUTS,
    Batch,
    check_run_request,
    run_batch,
)
from asmopt.sandbox.commands import Setup
from asmopt.sandbox.execution import execute
from asmopt.sandbox.launcher import LauncherBuildError, launcher_path
from asmopt.sandbox.placement import Priority
from asmopt.sandbox.records import (
    PLAIN_RUN,
    TOOLCHAIN_LIMITS,
    Limits,
    RunResult,
    SandboxUnavailable,
    ToolRun,
)
from asmopt.sandbox.toolchain_run import run_toolchain

__all__ = ["MAX_BINARIES", "MAX_INPUTS", "UNSAFE_ENV", "Sandbox", "default_sandbox"]


class Sandbox:
    """A bubblewrap sandbox. Create one per process and reuse it; it is thread-safe."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        unsafe_no_sandbox: bool | None = None,
        hide_paths: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        self.limits = limits or Limits()
        if unsafe_no_sandbox is None:
            unsafe_no_sandbox = os.environ.get(UNSAFE_ENV, "") not in ("", "0")
        self.unsafe = unsafe_no_sandbox
        self.bwrap = shutil.which("bwrap")
        self.as_root = os.geteuid() == 0
        self._hide = [Path(p).resolve() for p in hide_paths]
        self._hide.append(Path(__file__).resolve().parents[1])  # the asmopt package itself
        try:
            self._launcher = launcher_path()
        except LauncherBuildError as exc:
            raise SandboxUnavailable(str(exc)) from None
        self._host = HostSupport()

    # ---------------------------------------------------------------- availability
    def check(self) -> None:
        """Raise SandboxUnavailable unless an isolated run of a trusted probe works.

        The probe goes through the same path as every untrusted program (bubblewrap, the
        launcher's pid and mount namespace and fresh /tmp per run), so a machine where any
        of that is refused is found here, not in the middle of an evaluation."""
        if self.unsafe:
            return
        self._host.check(self.bwrap, self.run_binaries)

    def self_test(self, limits: Limits | None = None) -> str | None:
        """Run the known-good probe through the program path in a fresh sandbox.

        Returns None when it behaves, else what went wrong. Used to decide blame: a failure
        that a candidate could have caused is the candidate's unless this fails too."""
        if self.unsafe:
            return None
        try:
            self.check()
        except SandboxUnavailable as exc:
            return str(exc)
        return self._host.probe_failure(self.run_binaries, limits or self.limits)

    def describe(self) -> str:
        return description(self.bwrap, self.as_root, self.unsafe)

    # ---------------------------------------------------------------- public API
    def run_program(
        self,
        binary: str | os.PathLike[str],
        *,
        argv: Sequence[str] = (),
        stdin: bytes = b"",
        limits: Limits | None = None,
        runs: int = 1,
        env_pad: int | None = None,
        cpus: Sequence[int] | None = None,
    ) -> RunResult:
        """Run an untrusted binary `runs` times back to back in one sandbox.

        The result's exit status and times are those of the last run; `records` holds all.
        Output (stdout/stderr) is the concatenation over runs."""
        if runs < 1:
            raise ValueError(f"runs must be at least 1, got {runs}")
        return self.run_binaries(
            [binary],
            [0] * runs,
            argv=argv,
            stdin=stdin,
            limits=limits,
            env_pad=env_pad,
            cpus=cpus,
        )

    def run_binaries(
        self,
        binaries: Sequence[str | os.PathLike[str]],
        order: Sequence[int],
        *,
        argv: Sequence[str] = (),
        stdin: bytes | Sequence[bytes] = b"",
        feed: Sequence[int] | None = None,
        limits: Limits | None = None,
        marker: str | None = None,
        env_pad: int | None = None,
        cpus: Sequence[int] | None = None,
        tool: ToolRun = PLAIN_RUN,
        priority: Priority = "normal",
        run_wall_s: float | Sequence[float] | None = None,
        max_total_output: int = 256 << 20,
    ) -> RunResult:
        """Run several binaries in one sandbox, one run per entry of `order`.

        `limits` are PER RUN: the launcher gives every run its own wall deadline
        (`run_wall_s`, default `limits.wall_seconds`), CPU limit and output caps, and every
        run starts from nothing (its own pid and mount namespace, a fresh /tmp, a fresh
        stdin, fresh output pipes; see launcher.c). Every binary is executed from the same
        descriptor number with the same argv (`argv0` first), environment and working
        directory, so a program cannot tell which run it is in (a trusted tool that runs the
        program, valgrind, says what it needs in `tool`). `order` lists binary
        indexes, e.g. [0, 1, 0, 1]. `stdin` is one input for every run, or a list of inputs
        (at most MAX_INPUTS) with `feed` giving the input index of each run. Inputs reach the
        launcher as descriptors: no input file is visible in the sandbox.

        `marker` (a secret the program cannot see) is written to stdout after every run;
        `RunResult.segments` then holds each run's own output. `env_pad` is the length of a
        padding variable in the environment (random when None; hyperfine's measure against
        memory-layout bias); `cpus` pins the sandbox to those cores and `priority` raises
        its scheduling priority (placement.py; programs always run below the launcher).

        All runs together may write at most `max_total_output` bytes of stdout.

        Wide because every keyword is an independent setting of one sandbox (inputs, limits,
        marker, placement, tool, deadlines, output cap), and the timing executor, valgrind,
        the fresh-input checks, the input learner, the entropy estimate and the tests each
        pass a different few by name."""
        limits = limits or self.limits
        inputs, feed, walls = check_run_request(
            len(binaries), order, stdin, feed, marker, limits, run_wall_s, tool
        )
        if env_pad is None:
            env_pad = random.randrange(ENV_PAD_MAX)
        self.check()
        batch = Batch(
            binaries=binaries,
            order=order,
            argv=argv,
            inputs=inputs,
            feed=feed,
            walls=walls,
            limits=limits,
            marker=marker,
            env_pad=env_pad,
            tool=tool,
            cpus=cpus,
            priority=priority,
            max_total_output=max_total_output,
        )
        return run_batch(batch, self._setup(), self._launcher, self._execute)

    def run_toolchain(
        self,
        argv: Sequence[str],
        work_dir: str | os.PathLike[str],
        limits: Limits = TOOLCHAIN_LIMITS,
        stdin_file: str | None = None,
        seccomp: bool = False,
    ) -> RunResult:
        """Run a compiler command with `work_dir` (and nothing else of ours) writable at /build.

        Also runs profile-collecting builds of a program's own C source (PGO): then
        `stdin_file` names a file inside `work_dir` and `seccomp` applies the program
        sandbox's system-call filter."""
        self.check()
        setup = self._setup()
        return run_toolchain(
            setup, self._launcher, self._execute, argv, work_dir, limits, stdin_file, seccomp
        )

    # ---------------------------------------------------------------- the run itself
    def _setup(self) -> Setup:
        """What every command of this sandbox is built with (commands.py)."""
        return Setup(self.bwrap, self.unsafe, self.as_root, self._host.libs, self._hide)

    def _execute(
        self,
        cmd: list[str],
        limits: Limits,
        cwd: str | None = None,
        pass_fds: Sequence[int] = (),
        cpus: Sequence[int] | None = None,
        env: dict[str, str] | None = None,
        priority: Priority = "normal",
        marker: str | None = None,
    ) -> RunResult:
        """Start one sandbox and return its result (execution.py). Every sandbox this
        object starts, a program's or the toolchain's, is started here."""
        return execute(
            cmd,
            limits,
            self._setup(),
            cwd=cwd,
            pass_fds=pass_fds,
            cpus=cpus,
            env=env,
            priority=priority,
            marker=marker,
        )


_default: Sandbox | None = None


def default_sandbox() -> Sandbox:
    global _default
    if _default is None:
        _default = Sandbox()
    return _default
