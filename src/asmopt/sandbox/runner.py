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

The records a run is asked with and returns are in records.py; what the sandbox takes from
the host and the staging of a run in host.py; the launcher's plan of the runs in plan.py;
reading the sandbox's output in streams.py; finding and killing its processes in
reaping.py. This module starts the sandbox, watches its deadline and ends it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from asmopt.sandbox import live as live_processes
from asmopt.sandbox.host import NO_SPACE, runtime_libraries, staged, system_tree_binds
from asmopt.sandbox.launcher import LauncherBuildError, launcher_path, parse_report, probe_path
from asmopt.sandbox.placement import Priority, leave_realtime_all, thread_placement
from asmopt.sandbox.plan import (
    RunPlan,
    program_args,
    toolchain_stdin,
    whole_sandbox_limits,
    with_run_context,
)
from asmopt.sandbox.reaping import (
    Process,
    exits_by_itself,
    is_running,
    process_table,
    process_tree,
    processes_naming,
    sigkill,
)
from asmopt.sandbox.records import (
    PLAIN_RUN,
    TOOLCHAIN_LIMITS,
    Limits,
    RunResult,
    RunStagingFailed,
    SandboxUnavailable,
    ToolRun,
)
from asmopt.sandbox.streams import Streams, explain_failure, result_of

log = logging.getLogger(__name__)

NOBODY_UID = 65534
# A padding variable of random length (below ENV_PAD_MAX bytes) is in every program's
# environment, so its stack starts at a different offset in each sandbox (Mytkowicz et al.
# 2009: environment size alone can shift run time by several percent).
ENV_PAD_NAME = "PAD"
ENV_PAD_MAX = 4096
MAX_INPUTS = 256  # inputs one sandbox takes (launcher.c MAX_INPUTS): a fresh one per timed pair
MAX_BINARIES = 9  # its --order names a binary with one digit (launcher.c MAX_PROGS)
NOBODY_GID = 65534
UNSAFE_ENV = "ASMOPT_UNSAFE_NO_SANDBOX"
_REPORT_FD = "{report_fd}"  # replaced by the real descriptor number when the pipe exists
# A sandbox whose output has all been read exits by itself within this (bubblewrap exits
# once its pid namespace is empty); otherwise it is ended (`Sandbox._end`).
SELF_EXIT_S = 5.0
# How long the grader keeps ending a sandbox (SIGKILL to every process of it, each thread
# demoted to SCHED_OTHER) before it says which processes are left.
END_TIMEOUT_S = 30.0

FIX_HINT = (
    "install bubblewrap (as root: apt-get install bubblewrap) and make sure unprivileged "
    "user namespaces are enabled (sysctl kernel.unprivileged_userns_clone=1 and "
    "user.max_user_namespaces > 0). Trusted baselines only: set "
    f"{UNSAFE_ENV}=1 to run WITHOUT isolation (never for model-written code)."
)


def _check_run_request(
    n_binaries: int,
    order: Sequence[int],
    stdin: bytes | Sequence[bytes],
    feed: Sequence[int] | None,
    marker: str | None,
    limits: Limits,
    run_wall_s: float | Sequence[float] | None,
) -> tuple[list[bytes], list[int], list[float]]:
    """The arguments of `Sandbox.run_binaries`, checked before anything is started (the
    launcher's own limits: MAX_BINARIES binaries, MAX_INPUTS inputs). Returns (inputs, the
    input index of each run, each binary's per-run deadline, or one for all)."""
    if not n_binaries or n_binaries > MAX_BINARIES:
        raise ValueError(f"between 1 and {MAX_BINARIES} binaries, got {n_binaries}")
    if not order or any(not 0 <= k < n_binaries for k in order):
        raise ValueError(f"order must be a non-empty list of indexes below {n_binaries}")
    if marker is not None and (not marker or not marker.isalnum()):
        raise ValueError("marker must be a non-empty alphanumeric string")
    inputs = [stdin] if isinstance(stdin, bytes | bytearray) else list(stdin)
    if not 1 <= len(inputs) <= MAX_INPUTS:
        raise ValueError(f"between 1 and {MAX_INPUTS} inputs, got {len(inputs)}")
    feed = list(feed) if feed is not None else [0] * len(order)
    if len(feed) != len(order) or any(not 0 <= k < len(inputs) for k in feed):
        raise ValueError("feed must give an input index below len(stdin) for every run")
    walls = (
        [limits.wall_seconds]
        if run_wall_s is None
        else [float(run_wall_s)]
        if isinstance(run_wall_s, int | float)
        else [float(w) for w in run_wall_s]
    )
    if not walls or len(walls) > n_binaries or any(w <= 0 for w in walls):
        raise ValueError(
            f"run_wall_s must be positive, one value or one per binary, got {run_wall_s}"
        )
    return inputs, feed, walls


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
        self._libs: list[tuple[str, str]] | None = None
        self._probe: Path | None = None
        self._checked = False

    # ---------------------------------------------------------------- availability
    def check(self) -> None:
        """Raise SandboxUnavailable unless an isolated run of a trusted probe works.

        The probe goes through the same path as every untrusted program (bubblewrap, the
        launcher's pid and mount namespace and fresh /tmp per run), so a machine where any
        of that is refused is found here, not in the middle of an evaluation."""
        if self.unsafe or self._checked:
            return
        if self.bwrap is None:
            raise SandboxUnavailable(
                "bubblewrap ('bwrap') is not installed, so untrusted binaries cannot be run "
                "safely. Fix: " + FIX_HINT
            )
        self._libs = runtime_libraries()
        try:
            self._probe = probe_path()
        except LauncherBuildError as exc:
            raise SandboxUnavailable(str(exc)) from None
        self._checked = True  # run_binaries calls check() itself
        why = self._probe_failure(Limits(wall_seconds=30.0))
        if why is not None and why.startswith(NO_SPACE):
            self._checked = False  # a full disk is not a missing sandbox: say which
            raise SandboxUnavailable(why)
        if why is not None:
            self._checked = False
            raise SandboxUnavailable(
                f"bubblewrap cannot create an isolated sandbox here: {why}. The launcher "
                "needs CAP_SYS_ADMIN inside bubblewrap's user namespace (bwrap --cap-add) to "
                "give each run its own pid and mount namespace (user.max_user_namespaces > 0, "
                f"no AppArmor/SELinux rule against it). Fix: {FIX_HINT}"
            )

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
        return self._probe_failure(limits or self.limits)

    def _probe_failure(self, limits: Limits) -> str | None:
        """None when the probe runs and answers as it should, else what went wrong."""
        assert self._probe is not None
        try:
            result = self.run_binaries([self._probe], [0], stdin=b"probe\n", limits=limits)
        except RunStagingFailed as exc:
            return str(exc)
        except OSError as exc:
            return f"bubblewrap could not be started: {exc}"
        if result.infra_error:
            return result.infra_error
        if result.exit_code != 0 or not result.stdout.startswith(b"probe "):
            return (
                f"the probe program failed (exit {result.exit_code}, {result.signal_name}, "
                f"stderr {result.stderr.decode('utf-8', 'replace').strip()[:300]!r})"
            )
        return None

    def describe(self) -> str:
        if self.unsafe:
            return "UNSAFE: no sandbox (trusted code only)"
        version = "bwrap"
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            version = subprocess.run(
                [self.bwrap or "bwrap", "--version"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
        return (
            f"{version}, uid {NOBODY_UID if self.as_root else os.getuid()}, per-run pid/mount "
            "namespaces and /tmp, seccomp allowlist, rlimits"
        )

    # ---------------------------------------------------------------- helpers
    def _user_kwargs(self) -> dict[str, object]:
        if self.as_root and not self.unsafe:
            return {"user": NOBODY_UID, "group": NOBODY_GID, "extra_groups": []}
        return {}

    def _bwrap_base(self, tmp_size: int) -> list[str]:
        assert self.bwrap is not None
        return [
            self.bwrap,
            "--unshare-all",
            # Kept by the launcher only, to give each run its own pid and mount namespace
            # (a capability within the sandbox's own user namespace; programs drop it).
            "--cap-add",
            "CAP_SYS_ADMIN",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "sandbox",
            "--dev",
            "/dev",
            "--size",
            str(tmp_size),
            "--tmpfs",
            "/tmp",
        ]

    def _launcher_args(
        self,
        limits: Limits,
        stdin_path: str,
        runs: int,
        seccomp: bool,
        *,
        isolate: bool,
        fresh_tmp: bool,
        walls: Sequence[float] | None = None,
    ) -> list[str]:
        """Per-run limits for the launcher; it enforces them on each run separately.

        `walls` is one deadline for every run or one per program (by index), as
        `_check_run_request` returns them; default: the limits' wall time."""
        walls = walls or [limits.wall_seconds]
        return [
            "--report-fd",
            _REPORT_FD,
            "--cpu",
            str(limits.cpu_seconds),
            "--as",
            str(limits.address_space),
            "--fsize",
            str(limits.file_size),
            "--nproc",
            str(limits.max_processes),
            "--nofile",
            str(limits.max_open_files),
            "--stdin",
            stdin_path,
            "--runs",
            str(runs),
            "--seccomp",
            "1" if seccomp else "0",
            "--isolate",
            "1" if isolate else "0",
            "--fresh-tmp",
            str(limits.tmp_size if fresh_tmp else 0),
            "--run-wall-ms",
            ",".join(str(max(1, int(w * 1000))) for w in walls),
            "--stdout-cap",
            str(limits.stdout_cap),
            "--stderr-cap",
            str(limits.stderr_cap),
        ]

    def _make_run_dir(self) -> Path:
        run_dir = Path(tempfile.mkdtemp(prefix="asmopt-run-"))
        os.chmod(run_dir, 0o755)
        return run_dir

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
        inputs, feed, walls = _check_run_request(
            len(binaries), order, stdin, feed, marker, limits, run_wall_s
        )
        if marker is not None and tool.mount_proc and not tool.trusted:
            raise ValueError(
                "a run marker cannot be secret in a sandbox with its own /proc (the launcher's "
                "command line shows it): run a candidate under such a tool without a marker"
            )
        if env_pad is None:
            env_pad = random.randrange(ENV_PAD_MAX)
        self.check()
        outer = whole_sandbox_limits(limits, len(order), max(walls), max_total_output)
        fds: list[int] = []
        run_dir = staged(self._make_run_dir)
        try:
            input_fds, launch = staged(lambda: self._stage_run(run_dir, binaries, inputs, fds))
            what = RunPlan(fds[: len(binaries)], input_fds, order, feed, marker, tool.log_fd)
            tail = self._launch_tail(limits, walls, what, [tool.argv0, *argv])
            cmd, env, cwd = self._program_command(launch, tail, run_dir, env_pad, tool)
            result = self._execute(
                cmd,
                outer,
                cwd=cwd,
                pass_fds=fds,
                cpus=cpus,
                env=env,
                priority=priority,
                marker=str(run_dir),
            )
            return with_run_context(result, env_pad, cpus, marker)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            shutil.rmtree(run_dir, ignore_errors=True)

    def _launch_tail(
        self, limits: Limits, walls: Sequence[float], what: RunPlan, program_argv: list[str]
    ) -> list[str]:
        """The launcher's arguments: per-run limits, what each run executes on which input,
        then the program's argv."""
        # Per-run namespaces and a fresh /tmp need the capability bubblewrap's user
        # namespace gives the launcher: without bubblewrap (unsafe mode) they are off.
        launcher_args = self._launcher_args(
            limits,
            "/dev/null",
            len(what.order),
            True,
            isolate=not self.unsafe,
            fresh_tmp=not self.unsafe,
            walls=walls,
        )
        prog_args = program_args(
            what.exec_fds, what.input_fds, what.order, what.feed, what.marker, what.log_fd
        )
        return [*launcher_args, *prog_args, "--", *program_argv]

    def _program_command(
        self,
        launch: Path,
        tail: list[str],
        run_dir: Path,
        env_pad: int,
        tool: ToolRun,
    ) -> tuple[list[str], dict[str, str] | None, str | None]:
        """(command, environment, working directory) that start the launcher: inside the
        program profile of bubblewrap, or, unsafe, directly in the run directory."""
        if self.unsafe:
            env = {**os.environ, ENV_PAD_NAME: "x" * env_pad, **dict(tool.env)}
            return [str(launch), *tail], env, str(run_dir)
        cmd = self._program_bwrap(launch, env_pad, tool)
        cmd += ["/sandbox/launch", *tail]
        return cmd, None, None

    def _stage_run(
        self,
        run_dir: Path,
        binaries: Sequence[str | os.PathLike[str]],
        inputs: Sequence[bytes],
        fds: list[int],
    ) -> tuple[list[int], Path]:
        """Copies of the binaries, the inputs and the launcher in the run directory.

        Binaries and inputs are opened read-only and their descriptors appended to `fds`
        as they are opened (binaries first, by index), so the caller closes every one even
        when staging fails halfway; the programs reach the launcher only as descriptors.
        Returns (the inputs' descriptors, the launcher's copy)."""
        for k, binary in enumerate(binaries):
            prog = run_dir / f"prog{k}"
            shutil.copyfile(binary, prog)
            os.chmod(prog, 0o755)
            fds.append(os.open(prog, os.O_RDONLY))
        input_fds: list[int] = []
        for k, data in enumerate(inputs):
            path = run_dir / f"stdin{k}"
            path.write_bytes(data)
            input_fds.append(os.open(path, os.O_RDONLY))
        fds += input_fds
        launch = run_dir / "launch"
        shutil.copyfile(self._launcher, launch)
        os.chmod(launch, 0o755)
        return input_fds, launch

    def _program_bwrap(
        self,
        launch: Path,
        env_pad: int,
        tool: ToolRun,
    ) -> list[str]:
        """The bubblewrap command of the untrusted-program profile, up to the launcher:
        only the runtime libraries (and a tool's `ro_binds`) and the launcher are visible,
        everything read-only, a cleared environment with fixed values and the padding."""
        assert self._libs is not None
        cmd = self._bwrap_base(1 << 20)
        if tool.mount_proc:
            cmd += ["--proc", "/proc"]
        for inside, real in self._libs:
            cmd += ["--ro-bind", real, inside]
        for real, inside in tool.ro_binds:
            cmd += ["--ro-bind", real, inside]
        cmd += [
            "--ro-bind",
            str(launch),
            "/sandbox/launch",
            "--remount-ro",
            "/dev",
            "--remount-ro",
            "/",
            "--chdir",
            "/tmp",
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/bin:/bin",
            "--setenv",
            "HOME",
            "/tmp",
            "--setenv",
            "LANG",
            "C",
            "--setenv",
            ENV_PAD_NAME,
            "x" * env_pad,
        ]
        for name, value in tool.env:
            cmd += ["--setenv", name, value]
        return cmd

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
        work = Path(work_dir).resolve()
        stdin_inside = toolchain_stdin(work, stdin_file)
        outer = replace(limits, wall_seconds=limits.wall_seconds + 30.0)
        if self.unsafe:
            stdin_path = str(work / stdin_file) if stdin_file else "/dev/null"
            launcher_args = self._launcher_args(
                limits, stdin_path, 1, seccomp, isolate=False, fresh_tmp=False
            )
            cmd = [str(self._launcher), *launcher_args, "--", *argv]
            return self._execute(cmd, outer, cwd=str(work))
        if self.as_root:
            for path in [work, *work.rglob("*")]:
                os.chown(path, NOBODY_UID, NOBODY_GID)
        launch_dir = self._make_run_dir()
        try:
            launch = launch_dir / "launch"
            shutil.copyfile(self._launcher, launch)
            os.chmod(launch, 0o755)
            cmd = self._toolchain_bwrap(work, launch, limits.tmp_size)
            cmd += [
                "/sandbox/launch",
                # The compiler's own process tree runs in a pid namespace of its own; /tmp is
                # the sandbox's (one run, nothing to keep apart).
                *self._launcher_args(
                    limits, stdin_inside, 1, seccomp, isolate=True, fresh_tmp=False
                ),
                "--",
                *argv,
            ]
            return self._execute(cmd, outer, marker=str(launch_dir))
        finally:
            shutil.rmtree(launch_dir, ignore_errors=True)

    def _toolchain_bwrap(self, work: Path, launch: Path, tmp_size: int) -> list[str]:
        """The bubblewrap command of the toolchain profile, up to the launcher: the system's
        programs and libraries read-only (with this package and the suites masked), the
        work directory writable at /build, a cleared environment with fixed values."""
        cmd = self._bwrap_base(tmp_size) + ["--proc", "/proc"]
        cmd += system_tree_binds()
        for hidden in self._hide:
            if any(str(hidden).startswith(t + "/") for t in ("/usr", "/lib", "/lib64", "/bin")):
                cmd += ["--tmpfs", str(hidden)]
        if Path("/usr/local").is_dir():
            cmd += ["--tmpfs", "/usr/local"]
        return cmd + [
            "--bind",
            str(work),
            "/build",
            "--ro-bind",
            str(launch),
            "/sandbox/launch",
            "--chdir",
            "/build",
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/bin:/bin",
            "--setenv",
            "LANG",
            "C",
            "--setenv",
            "TMPDIR",
            "/tmp",
            "--setenv",
            "HOME",
            "/tmp",
        ]

    # ---------------------------------------------------------------- the run itself
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
        """Start the sandbox, collect its output and report, enforce the overall deadline.

        `limits` here are the WHOLE sandbox's (wall deadline, total output caps); the
        launcher enforces each run's own. This process never runs candidate code and sits
        on another core than a timed run, so it always gets to kill a runaway sandbox.

        It returns only once every process of the sandbox is gone (or says, in the
        result's `infra_error` and a log warning, which are not): a caller holding a timing
        core's lock releases it afterwards, so nothing of this sandbox is left on the core.
        `marker` is a path that every bubblewrap process of this sandbox has on its command
        line (its run directory), to find them once their parent is gone."""
        report_r, report_w = os.pipe()
        cmd = [str(report_w) if part == _REPORT_FD else part for part in cmd]
        start = time.monotonic()
        try:
            # Affinity is inherited at fork: pin this thread around the spawn only, so the
            # sandbox (and everything in it) runs on `cpus` and this process does not.
            with thread_placement(cpus, priority) as achieved:
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    pass_fds=(report_w, *pass_fds),
                    start_new_session=True,
                    cwd=cwd,
                    env=env,
                    **self._user_kwargs(),  # type: ignore[arg-type]
                )
        except OSError as exc:
            os.close(report_r)
            os.close(report_w)
            return RunResult(infra_error=f"could not start the sandbox: {exc}")
        os.close(report_w)
        streams = Streams(limits)

        def cancel() -> None:  # a cancelled evaluation ends it (sandbox/live.py)
            if proc.returncode is None:
                self._kill(proc)

        with live_processes.registered(proc.pid, cancel):
            stuck = self._collect_until_gone(
                proc, report_r, streams, start + limits.wall_seconds, cmd[0] == self.bwrap, marker
            )
        report = parse_report(streams.buffers["rep"].decode("utf-8", "replace"))
        result = result_of(streams, report, achieved, time.monotonic() - start)
        explain_failure(result, report, streams, stuck, proc.returncode)
        return result

    def _collect_until_gone(
        self,
        proc: subprocess.Popen[bytes],
        report_r: int,
        streams: Streams,
        deadline: float,
        bwrapped: bool,
        marker: str | None,
    ) -> str | None:
        """Read the sandbox's stdout, stderr and report until they end, the deadline passes
        or an output cap is reached; then see that every process of it is gone. Returns
        None then, else one line naming those left (`_end`)."""
        assert proc.stdout is not None and proc.stderr is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ, "out")
        sel.register(proc.stderr, selectors.EVENT_READ, "err")
        rep_file = os.fdopen(report_r, "rb", buffering=0)
        sel.register(rep_file, selectors.EVENT_READ, "rep")
        try:
            streams.read(sel, proc, deadline, bwrapped)
        finally:
            ended = streams.read_all and not (streams.timed_out or streams.output_over)
            if ended:
                # Every output has ended, so the launcher has exited, after reaping each
                # run's init (which is reapable only once its pid namespace is empty).
                # bubblewrap exits by itself then, and its namespace's init soon after.
                ended = exits_by_itself(proc, streams.inner, SELF_EXIT_S)
            stuck = None if ended else self._end(proc, marker, streams.inner)
            streams.drain_report(report_r)
            sel.close()
            rep_file.close()
            proc.stdout.close()
            proc.stderr.close()
        return stuck

    def _end(
        self, proc: subprocess.Popen[bytes], marker: str | None, known: set[Process]
    ) -> str | None:
        """End every process of the sandbox with no cooperation from any of them, and wait
        until they are gone. Returns None then, else one line naming those left.

        The sandbox's processes are bubblewrap (`proc`, and its child, the pid
        namespace's init) and every descendant of them: the launcher, each run's init, the
        program and its threads. Killing bubblewrap alone is not enough: its init then
        kills the namespace from the timing core, where a real-time task may keep it off
        the CPU, and its exit does not wait for that. So each process is found (from
        /proc: the tree under `proc` and `known`, and the processes naming `marker`, which
        are still found once their parent is gone), every thread of it is demoted to
        SCHED_OTHER (whatever reaps the others while they die must not be real-time:
        placement.py) and it gets SIGKILL, from this process on another core; then again,
        until none is left or END_TIMEOUT_S has passed."""
        start = time.monotonic()
        table = process_table()
        roots = set(known)
        if proc.returncode is None and proc.pid in table:  # not reaped: still our child
            roots.add(Process(proc.pid, table[proc.pid][1], table[proc.pid][2]))
        tracked = process_tree(roots, table)
        if marker is not None:
            tracked |= processes_naming(marker, table)
        left: list[Process] = []
        pause = 0.002
        while True:
            tracked |= process_tree(tracked, table)
            left = sorted((p for p in tracked if is_running(p)), key=lambda p: p.pid)
            if not left or time.monotonic() - start > END_TIMEOUT_S:
                break
            for p in left:
                leave_realtime_all(p.pid)
                sigkill(p)
            time.sleep(pause)
            pause = min(0.1, pause * 2)
            table = process_table()
        if left and proc.returncode is None:
            self._kill(proc)  # our own child at least, so that the caller does not hang
        stuck = self._reap(proc)
        if left:
            names = ", ".join(f"{p.pid} ({p.name})" for p in left)
            message = (
                f"the sandbox's processes {names} were still running {END_TIMEOUT_S:.0f} s "
                "after SIGKILL and demotion to SCHED_OTHER; the cores they run on are not free"
            )
            log.warning("%s", message)
            return message
        return stuck

    def _kill(self, proc: subprocess.Popen[bytes]) -> None:
        """Kill bwrap's process group (`_end` ends every process of the sandbox)."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    def _reap(self, proc: subprocess.Popen[bytes]) -> str | None:
        """Wait for the sandbox to be gone, killing it again while it is not.

        Returns None once it is gone, else a message (it would not die within a minute:
        ours to report, never a hang of the caller)."""
        for attempt in range(12):
            try:
                proc.wait(timeout=5 if attempt else 10)
                return None
            except subprocess.TimeoutExpired:
                self._kill(proc)
        return f"the sandbox (pid {proc.pid}) did not exit within a minute of being killed"


_default: Sandbox | None = None


def default_sandbox() -> Sandbox:
    global _default
    if _default is None:
        _default = Sandbox()
    return _default
