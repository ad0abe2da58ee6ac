"""Programs, their tests and how outputs are compared.

A `Program` is everything needed to build and judge one C program: its source, the headers
that live beside it, the flags it is compiled and linked with, and the tests that define
correct behaviour. The objects are immutable so that a content hash of a program is stable
and can key caches and result stores.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from asmopt.errors import InputError
from asmopt.programs.generators import InputGenerator

CompareMode = Literal["exact", "whitespace", "numeric", "md5"]
COMPARE_MODES: tuple[str, ...] = ("exact", "whitespace", "numeric", "md5")

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")


class ProgramError(InputError):
    """A program or test description is malformed; the message names the problem."""


def decode_source(data: bytes) -> str:
    """C source bytes as text, byte for byte.

    gcc reads sources as bytes, and real programs carry the odd Latin-1 byte in a comment or
    string; undecodable bytes are kept as lone surrogates (Python's `surrogateescape`) so
    that `encode_source` gives back exactly the file that was read."""
    return data.decode("utf-8", "surrogateescape")


def encode_source(text: str) -> bytes:
    """The exact bytes of a source decoded with `decode_source` (UTF-8 for other text)."""
    return text.encode("utf-8", "surrogateescape")


def nul_offset(text: str) -> int | None:
    """Where the first NUL character is, or None. A NUL cannot cross into the sandbox (an
    argv string ends at it, gcc reads a source with one as garbage), so a program or test
    carrying one is refused where it is built, naming the field."""
    at = text.find("\x00")
    return None if at < 0 else at


def check_program_id(program_id: str) -> str:
    """Ids become directory names and database keys, so they are restricted to a safe set."""
    if not isinstance(program_id, str) or not _ID_RE.match(program_id):
        raise ProgramError(
            f"invalid program id {program_id!r}: use 1-128 letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return program_id


@dataclass(frozen=True)
class Comparison:
    """How a test's actual stdout is compared with the expected stdout.

    `numeric` follows llvm-test-suite's fpcmp: the outputs are split into numbers and
    non-number text; text must match exactly (modulo whitespace) and each pair of numbers must
    agree within `abs_tol` OR within `rel_tol` relative to the expected value.

    `md5` follows llvm-test-suite's HASH_PROGRAM_OUTPUT: the expected output is the hex MD5
    digest of what the suite's harness records, i.e. the program's output followed by the
    line `exit N` (N the exit status), so a hash-checked reference stays a few bytes however
    much the program prints (docs/suite_format.md).
    """

    mode: CompareMode = "exact"
    abs_tol: float = 0.0
    rel_tol: float = 0.0

    def __post_init__(self) -> None:
        if self.mode not in COMPARE_MODES:
            raise ProgramError(
                f"unknown comparison mode {self.mode!r}; expected one of {', '.join(COMPARE_MODES)}"
            )
        for name in ("abs_tol", "rel_tol"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or math.isnan(value) or value < 0:
                raise ProgramError(
                    f"comparison {name} must be a non-negative number, got {value!r}"
                )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode}
        if self.mode == "numeric":
            out["abs_tol"] = self.abs_tol
            out["rel_tol"] = self.rel_tol
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Comparison:
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise ProgramError(f"'compare' must be an object, got {type(data).__name__}")
        unknown = set(data) - {"mode", "abs_tol", "rel_tol"}
        if unknown:
            raise ProgramError(f"unknown keys in 'compare': {', '.join(sorted(unknown))}")
        return cls(
            mode=data.get("mode", "exact"),
            abs_tol=float(data.get("abs_tol", 0.0)),
            rel_tol=float(data.get("rel_tol", 0.0)),
        )


@dataclass(frozen=True)
class TestCase:
    """One run of a program: argv, stdin, and what it must print and return."""

    __test__ = False  # not a pytest class

    name: str
    stdin: bytes
    expected_stdout: bytes
    argv: tuple[str, ...] = ()
    expected_exit: int = 0
    compare: Comparison = field(default_factory=Comparison)

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise ProgramError(f"invalid test name {self.name!r}")
        if not isinstance(self.stdin, bytes) or not isinstance(self.expected_stdout, bytes):
            raise ProgramError(f"test {self.name!r}: stdin and expected stdout must be bytes")
        if not all(isinstance(a, str) for a in self.argv):
            raise ProgramError(f"test {self.name!r}: argv must be a list of strings")
        for i, arg in enumerate(self.argv):
            if nul_offset(arg) is not None:
                raise ProgramError(f"test {self.name!r}: field 'argv[{i}]' contains a NUL byte")
        if not isinstance(self.expected_exit, int) or not 0 <= self.expected_exit <= 255:
            raise ProgramError(
                f"test {self.name!r}: expected exit code must be 0..255, got {self.expected_exit!r}"
            )


@dataclass(frozen=True)
class Program:
    """A C program with its tests.

    `headers` maps file names to contents for headers that sit next to the source and are
    included with quotes; they are written beside the source when it is compiled.
    """

    id: str
    source: str
    tests: tuple[TestCase, ...]
    headers: tuple[tuple[str, str], ...] = ()
    cflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ("-lm",)
    metadata: tuple[tuple[str, Any], ...] = ()
    # How to draw fresh inputs of each size class (programs/generators.py); None: the
    # program has fixed inputs only, which a candidate could memorise (`fixed_inputs`).
    inputs: InputGenerator | None = None
    # Names of tests that may be shown to a model; no other test's bytes reach a policy.
    examples: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_program_id(self.id)
        if not self.source.strip():
            raise ProgramError(f"program {self.id!r}: C source is empty")
        self._check_no_nul()
        # Counted once (a test-by-test count grew with the square of the number of tests).
        dupes = [n for n, k in Counter(t.name for t in self.tests).items() if k > 1]
        if dupes:
            raise ProgramError(f"program {self.id!r}: duplicate test names {sorted(dupes)}")
        for hname, _ in self.headers:
            if "/" in hname or hname.startswith(".") or not hname:
                raise ProgramError(f"program {self.id!r}: invalid header file name {hname!r}")

    def _check_no_nul(self) -> None:
        """Refuse a NUL in the source, a header or a flag, naming the field (importers
        build programs from rows and files that a suite's loader never saw)."""
        fields = [("source", self.source)]
        fields += [(f"headers[{name!r}]", text) for name, text in self.headers]
        fields += [(f"cflags[{i}]", f) for i, f in enumerate(self.cflags)]
        fields += [(f"ldflags[{i}]", f) for i, f in enumerate(self.ldflags)]
        for name, text in fields:
            at = nul_offset(text)
            if at is not None:
                raise ProgramError(
                    f"program {self.id!r}: field {name!r} contains a NUL byte (offset {at})"
                )

    def unknown_test_names(self) -> list[str]:
        """Tests named by `examples` or by the generator's mapping that the program does
        not have (refused where a suite is read; a program built with fewer tests, say by
        `dataclasses.replace`, simply has fewer examples and mapped tests)."""
        names = {t.name for t in self.tests}
        mapped = [t for t, _ in self.inputs.tests] if self.inputs is not None else []
        return sorted({n for n in (*self.examples, *mapped) if n not in names})

    def with_tests(self, tests: tuple[TestCase, ...]) -> Program:
        """This program with other tests; the generator's mapping and the examples keep
        only the tests that are still there."""
        from dataclasses import replace

        names = {t.name for t in tests}
        return replace(
            self,
            tests=tests,
            inputs=self.inputs.for_tests(names) if self.inputs is not None else None,
            examples=tuple(e for e in self.examples if e in names),
        )

    @property
    def fixed_inputs(self) -> bool:
        """True when no fresh input can be drawn: every run's input is one a candidate
        could know in advance."""
        return self.inputs is None

    def size_class(self, test_name: str) -> str | None:
        """The size class a fixed test stands for, or None (fixed input only)."""
        return self.inputs.class_of(test_name) if self.inputs is not None else None

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self.metadata)

    @property
    def header_files(self) -> dict[str, str]:
        return dict(self.headers)

    def content_hash(self) -> str:
        """Hash of everything that affects building and judging the program."""
        h = hashlib.sha256()
        payload = {
            "source": self.source,
            "headers": list(self.headers),
            "cflags": list(self.cflags),
            "ldflags": list(self.ldflags),
            "tests": [
                {
                    "name": t.name,
                    "argv": list(t.argv),
                    "stdin": hashlib.sha256(t.stdin).hexdigest(),
                    "stdout": hashlib.sha256(t.expected_stdout).hexdigest(),
                    "exit": t.expected_exit,
                    "compare": t.compare.to_dict(),
                }
                for t in self.tests
            ],
        }
        # Only when present, so the hash of a program without them is unchanged.
        if self.inputs is not None:
            payload["inputs"] = self.inputs.spec
        if self.examples:
            payload["examples"] = list(self.examples)
        h.update(json.dumps(payload, sort_keys=True).encode())
        return h.hexdigest()


SPLITS: tuple[str, ...] = ("train", "validation", "test")


@dataclass
class Suite:
    """Named programs with split labels (train / validation / test)."""

    name: str
    programs: dict[str, Program]
    splits: dict[str, str]
    description: str = ""

    def __post_init__(self) -> None:
        for pid, split in self.splits.items():
            if split not in SPLITS:
                raise ProgramError(
                    f"program {pid!r}: unknown split {split!r}; expected one of {', '.join(SPLITS)}"
                )
        missing = set(self.programs) - set(self.splits)
        for pid in missing:
            self.splits[pid] = "test"

    def __len__(self) -> int:
        return len(self.programs)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.programs.values())

    def get(self, program_id: str) -> Program:
        try:
            return self.programs[program_id]
        except KeyError:
            close = [p for p in self.programs if program_id.lower() in p.lower()][:5]
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ProgramError(
                f"no program {program_id!r} in suite {self.name!r}{hint} "
                f"(`asmopt suite list` shows all {len(self.programs)})"
            ) from None

    def select(self, split: str | None = None, ids: list[str] | None = None) -> list[Program]:
        """Programs in a split and/or with given ids, in a stable (sorted) order. An id given
        twice selects its program once: each program is judged once per evaluation, and a
        summary that counted it twice would count samples the store holds once."""
        if split is not None and split not in SPLITS and split != "all":
            raise ProgramError(f"unknown split {split!r}; expected one of all, {', '.join(SPLITS)}")
        chosen = (
            [self.get(i) for i in dict.fromkeys(ids)]
            if ids
            else [self.programs[k] for k in sorted(self.programs)]
        )
        if split and split != "all":
            chosen = [p for p in chosen if self.splits.get(p.id) == split]
        return chosen
