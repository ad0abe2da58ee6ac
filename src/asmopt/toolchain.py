"""gcc as a service: baseline assembly, assembling and linking candidates, a build cache.

Every compiler invocation runs inside the toolchain sandbox profile, because assembler
input is model-written and directives such as `.incbin` or `.include` would otherwise read
any file on the host (the expected outputs included) into the binary.

Results are cached on disk, keyed by the content hash of the inputs, the flags and the
compiler identity, so a candidate seen twice (common in RL) is built once. Failures are
cached too when they are a property of the input (assembling the same broken text again
gives the same message); a build stopped by a time limit, or by our own infrastructure, is
not, because under less load the same input might have built. The cache is bounded in
size with least-recently-used eviction (`asmopt.cache.BoundedCache`).

Candidate builds are capped in size (`max_binary_bytes`): `.fill 200000000,1,0` is sixty
bytes of assembly and a 200 MB binary. The assembler and linker run with a file-size
rlimit just over the cap, so they are stopped before writing much more than it, and the
candidate gets an assemble or link error naming the cap.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from asmopt.cache import BoundedCache, cache_root, env_bytes, format_bytes, require_writable
from asmopt.errors import AsmoptError, InputError
from asmopt.programs.model import Program, encode_source
from asmopt.sandbox.records import TOOLCHAIN_LIMITS, Limits, RunResult, SandboxUnavailable
from asmopt.sandbox.runner import Sandbox, default_sandbox

BuildStage = Literal["compile", "assemble", "link", "infra", "ok"]
MAX_ASM_BYTES = 16 << 20
DEFAULT_O3_FLAGS: tuple[str, ...] = ("-O3",)

# -O3 baselines are tens of KB; 32 MiB leaves room for large tables and still refuses
# the 200 MB binaries a single `.fill` line makes.
MAX_BINARY_BYTES_ENV = "ASMOPT_MAX_BINARY_BYTES"
DEFAULT_MAX_BINARY_BYTES = 32 << 20
# The file-size rlimit of candidate builds is this much over the cap, so an output just
# over the cap is still written whole and reported with its size; anything larger stops
# the assembler or linker mid-write.
_RLIMIT_SLACK = 1 << 20
BUILD_CACHE_MAX_BYTES_ENV = "ASMOPT_BUILD_CACHE_MAX_BYTES"
DEFAULT_BUILD_CACHE_MAX_BYTES = 2 << 30

# How a compiler driver reports a tool it ran (as, ld) being killed by a time limit (gcc:
# "CPU time limit exceeded signal terminated program as", collect2: "ld terminated with
# signal 24"; clang: "unable to execute command: Killed"). The input could print the same
# words itself (`.error`); that only keeps its failure out of the cache.
_TIME_LIMIT_TEXT = re.compile(
    r"CPU time limit exceeded|Killed signal terminated program|terminated with signal (?:9|24)\b"
    r"|unable to execute command: Killed"
)
# The same for the file-size rlimit (SIGXFSZ, signal 25).
_FILE_SIZE_TEXT = re.compile(r"File size limit exceeded|terminated with signal 25\b")
_SIGKILL, _SIGXCPU, _SIGXFSZ = 9, 24, 25


class ToolchainError(AsmoptError, RuntimeError):
    """Our toolchain is broken (compiler missing, sandbox down): an infrastructure failure."""


@dataclass(frozen=True)
class BuildResult:
    """Outcome of turning C or assembly into something runnable.

    `stage` says where it stopped: "ok", or the failing step ("compile", "assemble", "link"),
    or "infra" when the failure is ours, not the input's."""

    stage: BuildStage
    message: str = ""
    output: Path | None = None
    cached: bool = False
    seconds: float = 0.0
    # The outcome depends on this run's circumstances (a time limit under the machine's
    # load, our infrastructure), not only on the input: never cached.
    transient: bool = False

    @property
    def ok(self) -> bool:
        return self.stage == "ok"


def first_messages(stderr: str, limit: int = 6) -> str:
    """The first diagnostics of gcc/as/ld with our temporary paths removed."""
    lines = []
    for raw in stderr.splitlines():
        line = raw.replace("/build/", "")
        if not line.strip():
            continue
        lines.append(line)
        if len(lines) >= limit:
            break
    return "\n".join(lines)


class Toolchain:
    """A C compiler driver used for -S, assembling and linking, with an on-disk cache.

    `limits` are the sandbox limits of every build (default: the sandbox's toolchain
    limits). `max_binary_bytes` caps the object and binary of candidate builds (default
    `$ASMOPT_MAX_BINARY_BYTES`, else 32 MiB). `cache_max_bytes` bounds the build cache
    (default `$ASMOPT_BUILD_CACHE_MAX_BYTES`, else 2 GiB; 0: unbounded). Sizes in the
    environment may carry a unit: `64M`, `4GiB`."""

    def __init__(
        self,
        cc: str = "gcc",
        *,
        sandbox: Sandbox | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        limits: Limits | None = None,
        max_binary_bytes: int | None = None,
        cache_max_bytes: int | None = None,
    ) -> None:
        self.cc = cc
        self._sandbox = sandbox
        self.cache_dir = Path(cache_dir) if cache_dir else cache_root() / "builds"
        require_writable(self.cache_dir, "the build cache")
        self.limits = limits or TOOLCHAIN_LIMITS
        if max_binary_bytes is None:
            max_binary_bytes = env_bytes(MAX_BINARY_BYTES_ENV, DEFAULT_MAX_BINARY_BYTES)
        if max_binary_bytes <= 0:
            raise InputError(f"max_binary_bytes must be positive, got {max_binary_bytes}")
        self.max_binary_bytes = max_binary_bytes
        if cache_max_bytes is None:
            cache_max_bytes = env_bytes(BUILD_CACHE_MAX_BYTES_ENV, DEFAULT_BUILD_CACHE_MAX_BYTES)
        self.build_cache = BoundedCache(self.cache_dir, cache_max_bytes)
        self._identity: str | None = None
        self._lock = threading.Lock()

    @property
    def candidate_limits(self) -> Limits:
        """The build limits with the file-size rlimit just over the candidate size cap."""
        return replace(self.limits, file_size=self.max_binary_bytes + _RLIMIT_SLACK)

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = default_sandbox()
        return self._sandbox

    # ------------------------------------------------------------------ identity
    def identity(self) -> str:
        """Compiler and assembler versions: part of every cache key and every fingerprint."""
        if self._identity is None:
            if shutil.which(self.cc) is None:
                raise ToolchainError(
                    f"C compiler {self.cc!r} not found; install it (apt-get install gcc)"
                )
            try:
                cc_v = subprocess.run(
                    [self.cc, "--version"], capture_output=True, text=True, timeout=30, check=True
                ).stdout.splitlines()[0]
                target = subprocess.run(
                    [self.cc, "-dumpmachine"],
                    capture_output=True,
                    text=True,
                    timeout=30,
                    check=True,
                ).stdout.strip()
                as_v = subprocess.run(
                    [
                        self.cc,
                        "-Wa,--version",
                        "-c",
                        "-x",
                        "assembler",
                        "/dev/null",
                        "-o",
                        "/dev/null",
                    ],
                    capture_output=True,
                    text=True,
                    timeout=30,
                ).stdout.splitlines()
            except (OSError, subprocess.SubprocessError, IndexError) as exc:
                raise ToolchainError(f"cannot query {self.cc!r}: {exc}") from None
            self._identity = f"{cc_v} | {target} | {as_v[0] if as_v else 'as ?'}"
        return self._identity

    # ------------------------------------------------------------------ cache
    def _key(self, kind: str, *parts: bytes | str) -> str:
        h = hashlib.sha256()
        for part in (kind, self.identity(), *parts):
            data = part.encode() if isinstance(part, str) else part
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
        return h.hexdigest()

    def _cache_get(self, key: str) -> BuildResult | None:
        meta_path = self.cache_dir / key[:2] / key / "meta.json"
        if not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, json.JSONDecodeError):
            return None
        output = meta.get("output")
        out_path = meta_path.parent / output if output else None
        if out_path is not None and not out_path.exists():
            return None
        self.build_cache.touch(meta_path.parent)
        return BuildResult(
            stage=meta["stage"],
            message=meta["message"],
            output=out_path,
            cached=True,
            seconds=meta.get("seconds", 0.0),
        )

    def _cache_put(self, key: str, result: BuildResult) -> BuildResult:
        """Store a deterministic outcome; hand back infra failures and timeouts untouched.

        A timeout says how loaded the machine was as much as what the input is, and an
        infra failure is ours: remembering either would fail the input for good."""
        if result.stage == "infra" or result.transient:
            return result
        final = self.cache_dir / key[:2] / key
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=final.parent, prefix=".tmp-"))
        out_name = None
        nbytes = 0
        if result.output is not None:
            out_name = result.output.name
            shutil.copy2(result.output, staging / out_name)
            nbytes += (staging / out_name).stat().st_size
        meta = asdict(result)
        meta.update(output=out_name, cached=False)
        meta_text = json.dumps(meta)
        (staging / "meta.json").write_text(meta_text)
        nbytes += len(meta_text.encode())
        try:
            os.rename(staging, final)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)  # another thread won the race
        else:
            self.build_cache.added(nbytes)
        return BuildResult(
            stage=result.stage,
            message=result.message,
            output=(final / out_name) if out_name else None,
            cached=False,
            seconds=result.seconds,
        )

    # ------------------------------------------------------------------ sandboxed gcc
    def _run(
        self,
        argv: Sequence[str],
        files: dict[str, bytes],
        want: str | None,
        stage: BuildStage,
        *,
        limits: Limits | None = None,
        max_output: int | None = None,
    ) -> BuildResult:
        """One sandboxed compiler command; `max_output` caps the size of `want` (candidates)."""
        work = Path(tempfile.mkdtemp(prefix="asmopt-build-"))
        try:
            for name, data in files.items():
                (work / name).write_bytes(data)
            try:
                cc_path = shutil.which(self.cc)
                if cc_path is None:
                    return BuildResult(
                        stage="infra",
                        message=f"C compiler {self.cc!r} not found; "
                        "install it (apt-get install gcc)",
                    )
                run = self.sandbox.run_toolchain(
                    [cc_path, *argv], work, limits=limits or self.limits
                )
            except SandboxUnavailable as exc:
                return BuildResult(stage="infra", message=str(exc))
            if run.infra_error:
                return BuildResult(stage="infra", message=run.infra_error)
            stderr = run.stderr.decode("utf-8", "replace")
            if hit_time_limit(run):
                return BuildResult(
                    stage=stage,
                    message=f"{stage} step timed out (the input makes the toolchain run too long)",
                    seconds=run.outer_wall_s,
                    transient=True,
                )
            if run.signal == _SIGXFSZ or (run.exit_code != 0 and _FILE_SIZE_TEXT.search(stderr)):
                return BuildResult(
                    stage=stage,
                    message=self._too_large(stage, None, max_output),
                    seconds=run.outer_wall_s,
                )
            if run.exit_code is None and run.signal is None:
                # Neither an exit nor a signal was reported: the launcher was lost.
                return BuildResult(
                    stage=stage,
                    message=f"{stage} step ended without an exit status",
                    seconds=run.outer_wall_s,
                    transient=True,
                )
            if run.exit_code != 0:
                msg = first_messages(stderr) or f"{self.cc} exited with {run.exit_code}"
                return BuildResult(stage=stage, message=msg, seconds=run.outer_wall_s)
            if want is not None:
                produced = work / want
                if not produced.exists():
                    return BuildResult(
                        stage="infra", message=f"{self.cc} reported success but wrote no {want}"
                    )
                size = produced.stat().st_size
                if max_output is not None and size > max_output:
                    return BuildResult(
                        stage=stage,
                        message=self._too_large(stage, size, max_output),
                        seconds=run.outer_wall_s,
                    )
                keep = Path(tempfile.mkdtemp(prefix="asmopt-out-")) / want
                shutil.move(produced, keep)
                return BuildResult(stage="ok", output=keep, seconds=run.outer_wall_s)
            return BuildResult(stage="ok", seconds=run.outer_wall_s)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    @staticmethod
    def _too_large(stage: BuildStage, size: int | None, cap: int | None) -> str:
        """The message for an output over the cap (or over the file-size rlimit)."""
        if cap is None:
            return f"{stage} step output exceeds the file size limit"
        what = "object file" if stage == "assemble" else "binary"
        how = f"is {format_bytes(size)}, larger" if size is not None else "would be larger"
        return (
            f"{stage} step output exceeds the file size limit: the {what} {how} than the "
            f"{format_bytes(cap)} cap on candidate builds ({MAX_BINARY_BYTES_ENV})"
        )

    @staticmethod
    def _program_files(program: Program) -> dict[str, bytes]:
        files = {"main.c": encode_source(program.source)}
        for name, text in program.headers:
            files[name] = encode_source(text)
        return files

    def _cached(self, key: str, build: Callable[[], BuildResult]) -> BuildResult:
        hit = self._cache_get(key)
        if hit is not None:
            return hit
        result = build()
        stored = self._cache_put(key, result)
        if result.output is not None:
            shutil.rmtree(result.output.parent, ignore_errors=True)
        return stored

    # ------------------------------------------------------------------ public API
    def compile_assembly(
        self, program: Program, flags: Sequence[str] = DEFAULT_O3_FLAGS
    ) -> BuildResult:
        """`gcc FLAGS -S main.c`: the baseline assembly (output: a .s file)."""
        argv = [*flags, *program.cflags, "-S", "main.c", "-o", "main.s"]
        files = self._program_files(program)
        key = self._key(
            "asm", json.dumps(argv), *[n.encode() + b"\0" + d for n, d in sorted(files.items())]
        )
        return self._cached(key, lambda: self._run(argv, files, "main.s", "compile"))

    def baseline_assembly(self, program: Program, flags: Sequence[str] = DEFAULT_O3_FLAGS) -> str:
        """The -O3 assembly text, or ToolchainError naming why it could not be made."""
        result = self.compile_assembly(program, flags)
        if not result.ok or result.output is None:
            raise ToolchainError(f"{program.id}: gcc {' '.join(flags)} -S failed: {result.message}")
        return result.output.read_text(encoding="utf-8", errors="replace")

    def compile_assembly_pgo(
        self,
        program: Program,
        profile_inputs: Sequence[bytes],
        flags: Sequence[str] = DEFAULT_O3_FLAGS,
    ) -> BuildResult:
        """Profile-guided `-S`: build instrumented, run it on `profile_inputs`, rebuild.

        The instrumented program is the program's own C source; it runs in the toolchain
        sandbox (so it can write its profile into the work directory) with the program
        sandbox's seccomp filter and limits. Only the inputs given here are profiled, so a
        caller can keep held-out tests out of the profile."""
        if not profile_inputs:
            return BuildResult(stage="compile", message="PGO needs at least one profile input")
        files = self._program_files(program)
        key = self._key(
            "pgo",
            json.dumps([*flags, *program.cflags, *program.ldflags]),
            *[n.encode() + b"\0" + d for n, d in sorted(files.items())],
            *[hashlib.sha256(i).hexdigest() for i in profile_inputs],
        )
        return self._cached(key, lambda: self._pgo(program, files, profile_inputs, flags))

    def _pgo(
        self,
        program: Program,
        files: dict[str, bytes],
        profile_inputs: Sequence[bytes],
        flags: Sequence[str],
    ) -> BuildResult:
        cc_path = shutil.which(self.cc)
        if cc_path is None:
            return BuildResult(stage="infra", message=f"C compiler {self.cc!r} not found")
        work = Path(tempfile.mkdtemp(prefix="asmopt-build-"))
        run_limits = Limits(cpu_seconds=20, wall_seconds=60.0, file_size=64 << 20)
        try:
            for name, data in files.items():
                (work / name).write_bytes(data)
            cflags = [*flags, *program.cflags]
            steps = [
                [cc_path, *cflags, "-fprofile-generate", "-c", "main.c", "-o", "main.o"],
                [cc_path, "-fprofile-generate", "main.o", "-o", "prog", *program.ldflags],
            ]
            for argv in steps:
                run = self.sandbox.run_toolchain(argv, work, limits=self.limits)
                if run.infra_error:
                    return BuildResult(stage="infra", message=f"PGO: {run.infra_error}")
                if run.exit_code != 0:
                    msg = first_messages(run.stderr.decode("utf-8", "replace"))
                    return BuildResult(
                        stage="compile",
                        message=f"PGO instrumented build: {msg}",
                        transient=hit_time_limit(run),
                    )
            for i, data in enumerate(profile_inputs):
                (work / f"profile-{i}.in").write_bytes(data)
                run = self.sandbox.run_toolchain(
                    ["/build/prog"],
                    work,
                    limits=run_limits,
                    stdin_file=f"profile-{i}.in",
                    seccomp=True,
                )
                if run.infra_error:
                    return BuildResult(stage="infra", message=f"PGO: {run.infra_error}")
                if run.exit_code is None:
                    why = "timed out" if run.timed_out else run.signal_name
                    return BuildResult(
                        stage="compile",
                        message=f"PGO profiling run failed: {why}",
                        transient=hit_time_limit(run) or run.signal is None,
                    )
            if not (work / "main.gcda").exists():
                return BuildResult(stage="compile", message="PGO profiling wrote no profile")
            final = [
                cc_path,
                *cflags,
                "-fprofile-use",
                "-fprofile-correction",
                "-Wno-missing-profile",
                "-S",
                "main.c",
                "-o",
                "main.s",
            ]
            run = self.sandbox.run_toolchain(final, work, limits=self.limits)
            if run.infra_error:
                return BuildResult(stage="infra", message=f"PGO: {run.infra_error}")
            if run.exit_code != 0 or not (work / "main.s").exists():
                msg = first_messages(run.stderr.decode("utf-8", "replace"))
                return BuildResult(
                    stage="compile",
                    message=f"PGO final build: {msg}",
                    transient=hit_time_limit(run),
                )
            keep = Path(tempfile.mkdtemp(prefix="asmopt-out-")) / "main.s"
            shutil.move(work / "main.s", keep)
            return BuildResult(stage="ok", output=keep)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def compile_binary(
        self, program: Program, flags: Sequence[str] = DEFAULT_O3_FLAGS
    ) -> BuildResult:
        """Build an executable straight from C (reference builds, verification)."""
        argv = [*flags, *program.cflags, "main.c", "-o", "prog", *program.ldflags]
        files = self._program_files(program)
        key = self._key(
            "cbin", json.dumps(argv), *[n.encode() + b"\0" + d for n, d in sorted(files.items())]
        )
        return self._cached(key, lambda: self._run(argv, files, "prog", "compile"))

    def assemble_and_link(
        self, assembly: str | bytes, ldflags: Sequence[str] = ("-lm",)
    ) -> BuildResult:
        """Assemble then link a candidate, reporting which of the two steps failed."""
        if isinstance(assembly, str):
            data = assembly.encode("utf-8")
        else:
            data = assembly
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                return BuildResult(
                    stage="assemble",
                    message=f"assembly is not UTF-8 text (invalid byte at offset {exc.start})",
                )
        if not data.strip():
            return BuildResult(stage="assemble", message="assembly is empty")
        if b"\x00" in data:
            return BuildResult(
                stage="assemble", message="assembly contains NUL bytes (binary data)"
            )
        if len(data) > MAX_ASM_BYTES:
            return BuildResult(
                stage="assemble",
                message=f"assembly is too large ({len(data)} bytes > {MAX_ASM_BYTES})",
            )
        cap = self.max_binary_bytes
        # The cap is part of the key: a binary built under a larger cap, or a refusal under
        # a smaller one, is not the answer under this one.
        key = self._key("link", json.dumps(list(ldflags)), f"max-binary-bytes={cap}", data)
        limits = self.candidate_limits

        def build() -> BuildResult:
            obj = self._run(
                ["-c", "cand.s", "-o", "cand.o"],
                {"cand.s": data},
                "cand.o",
                "assemble",
                limits=limits,
                max_output=cap,
            )
            if not obj.ok or obj.output is None:
                return obj
            try:
                linked = self._run(
                    ["cand.o", "-o", "prog", *ldflags],
                    {"cand.o": obj.output.read_bytes()},
                    "prog",
                    "link",
                    limits=limits,
                    max_output=cap,
                )
            finally:
                shutil.rmtree(obj.output.parent, ignore_errors=True)
            if linked.stage == "link" and "undefined reference to `main'" in linked.message:
                linked = replace(
                    linked,
                    message=(
                        "the assembly defines no global `main` (add `.globl main` and a `main:` "
                        "label)\n" + linked.message
                    ),
                )
            return linked

        return self._cached(key, build)


def hit_time_limit(run: RunResult) -> bool:
    """Whether a toolchain run was stopped by the wall-clock or CPU limit (its own process or
    a tool the compiler driver ran)."""
    if run.timed_out or run.signal in (_SIGKILL, _SIGXCPU):
        return True
    if run.exit_code in (None, 0):
        return False
    return _TIME_LIMIT_TEXT.search(run.stderr.decode("utf-8", "replace")) is not None


_default: Toolchain | None = None


def default_toolchain() -> Toolchain:
    global _default
    if _default is None:
        _default = Toolchain()
    return _default
