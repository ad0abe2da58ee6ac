"""A small interpreter for the CMake subset llvm-test-suite directories use.

SingleSource directories describe programs with a handful of commands: `set`,
`list(APPEND ...)`, `if/elseif/else/endif`, `set_property(TARGET ... PROPERTY ...)`,
`add_definitions(...)` and `llvm_singlesource(PREFIX ...)`. We evaluate those (with
CMake's truthiness rules and a fixed description of the target: x86-64 Linux, gcc) to
learn the source list, the compiler and linker flags, FP_TOLERANCE / FP_ABSTOLERANCE,
RUN_OPTIONS and STDIN_FILENAME.
Any other command is ignored and named in `ignored`, so a surprising directory shows up in
the import report instead of silently importing wrong flags.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from asmopt.errors import InputError

_FALSE = {"", "0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND"}
_TRUE = {"1", "ON", "YES", "TRUE", "Y"}
_VAR_REF = re.compile(r"\$\{([A-Za-z0-9_]+)\}")

# What the evaluated build looks like: an x86-64 Linux host compiling with gcc.
TARGET_VARIABLES: dict[str, str] = {
    "ARCH": "x86",
    "X86CPU_ARCH": "x86-64",
    "TARGET_OS": "Linux",
    "CMAKE_SYSTEM_NAME": "Linux",
    "CMAKE_SYSTEM_PROCESSOR": "x86_64",
    "CMAKE_C_COMPILER_ID": "GNU",
    "CMAKE_CXX_COMPILER_ID": "GNU",
    "TEST_SUITE_BENCHMARKING_ONLY": "OFF",
}


class CMakeError(InputError):
    """The CMakeLists.txt could not be parsed (unbalanced parentheses or quotes)."""


@dataclass
class CMakeResult:
    variables: dict[str, list[str]] = field(default_factory=dict)
    target_properties: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    prefix: str = ""
    ignored: list[str] = field(default_factory=list)

    def get(self, name: str) -> list[str] | None:
        return self.variables.get(name)


def _strip_comment(line: str) -> str:
    in_quote = False
    for i, c in enumerate(line):
        if c == '"' and (i == 0 or line[i - 1] != "\\"):
            in_quote = not in_quote
        elif c == "#" and not in_quote:
            return line[:i]
    return line


def parse_commands(text: str) -> list[tuple[str, list[tuple[str, bool]]]]:
    """[(command, [(argument, quoted), ...]), ...] in file order."""
    body = "\n".join(_strip_comment(line) for line in text.splitlines())
    commands: list[tuple[str, list[tuple[str, bool]]]] = []
    i, n = 0, len(body)
    name_re = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")
    while i < n:
        m = name_re.match(body, i)
        if not m:
            if body[i:].strip() == "":
                break
            raise CMakeError(f"expected a command near {body[i : i + 30]!r}")
        name = m.group(1).lower()
        i = m.end()
        args: list[tuple[str, bool]] = []
        depth = 0
        token = ""
        quoted = False
        while True:
            if i >= n:
                raise CMakeError(f"unterminated {name}(...)")
            c = body[i]
            if c == '"':
                j = i + 1
                while j < n and body[j] != '"':
                    j += 2 if body[j] == "\\" else 1
                if j >= n:
                    raise CMakeError(f"unterminated string in {name}(...)")
                token += body[i + 1 : j]
                quoted = True
                i = j + 1
                continue
            if c.isspace() or c in "()":
                if token or quoted:
                    args.append((token, quoted))
                token, quoted = "", False
                if c == "(":
                    depth += 1
                    args.append(("(", False))
                elif c == ")":
                    if depth == 0:
                        i += 1
                        break
                    depth -= 1
                    args.append((")", False))
                i += 1
                continue
            token += c
            i += 1
        commands.append((name, args))
    return commands


class _Interpreter:
    def __init__(self, directory: Path, defines: dict[str, str]) -> None:
        self.result = CMakeResult()
        self.scalars: dict[str, str] = dict(TARGET_VARIABLES)
        self.scalars.update(defines)
        self.scalars["CMAKE_CURRENT_SOURCE_DIR"] = str(directory)
        self.scalars["CMAKE_CURRENT_BINARY_DIR"] = str(directory)

    # ------------------------------------------------------------ variables
    def lookup(self, name: str) -> str | None:
        if name in self.result.variables:
            return ";".join(self.result.variables[name])
        return self.scalars.get(name)

    def expand(self, args: list[tuple[str, bool]]) -> list[str]:
        out: list[str] = []
        for text, quoted in args:
            value = _VAR_REF.sub(lambda m: self.lookup(m.group(1)) or "", text)
            if quoted:
                out.append(value)
            else:
                out.extend(v for v in value.split(";") if v != "")
        return out

    # ------------------------------------------------------------ conditions
    def truthy(self, token: str) -> bool:
        upper = token.upper()
        if upper in _TRUE:
            return True
        if upper in _FALSE or upper.endswith("-NOTFOUND"):
            return False
        value = self.lookup(token)
        if value is None:
            return False  # an undefined variable (or unknown constant) is false in CMake
        v = value.upper()
        return not (v in _FALSE or v.endswith("-NOTFOUND"))

    def value_of(self, token: str) -> str:
        value = self.lookup(token)
        return token if value is None else value

    def condition(self, raw: list[tuple[str, bool]]) -> bool:
        # `"${ARCH}" STREQUAL "x86"`: references are expanded first, as CMake does.
        tokens = [_VAR_REF.sub(lambda m: self.lookup(m.group(1)) or "", t) for t, _ in raw]
        pos = 0

        def chain(op: str, operand: Callable[[], bool]) -> list[bool]:
            """`operand` parsed once and again after each `op`: every operand is parsed, none
            skipped as a short-circuit would, so that `pos` ends past the whole chain."""
            nonlocal pos
            values = [operand()]
            while pos < len(tokens) and tokens[pos] == op:
                pos += 1
                values.append(operand())
            return values

        def parse_or() -> bool:
            return any(chain("OR", parse_and))

        def parse_and() -> bool:
            return all(chain("AND", parse_not))

        def parse_not() -> bool:
            nonlocal pos
            if pos < len(tokens) and tokens[pos] == "NOT":
                pos += 1
                return not parse_not()
            return parse_atom()

        def parse_atom() -> bool:
            nonlocal pos
            if pos >= len(tokens):
                return False
            tok = tokens[pos]
            if tok == "(":
                pos += 1
                value = parse_or()
                if pos < len(tokens) and tokens[pos] == ")":
                    pos += 1
                return value
            if tok == "DEFINED" and pos + 1 < len(tokens):
                pos += 2
                return self.lookup(tokens[pos - 1]) is not None
            pos += 1
            if pos < len(tokens):
                op = tokens[pos]
                binary = {
                    "STREQUAL": lambda a, b: a == b,
                    "MATCHES": lambda a, b: re.search(b, a) is not None,
                    "EQUAL": lambda a, b: _num(a) == _num(b),
                    "LESS": lambda a, b: _num(a) < _num(b),
                    "GREATER": lambda a, b: _num(a) > _num(b),
                }
                if op in binary and pos + 1 < len(tokens):
                    pos += 2
                    return bool(binary[op](self.value_of(tok), self.value_of(tokens[pos - 1])))
            return self.truthy(tok)

        return parse_or()

    # ------------------------------------------------------------ commands
    def run(self, commands: list[tuple[str, list[tuple[str, bool]]]]) -> CMakeResult:
        # Stack of (this branch active, some branch of this if already taken).
        stack: list[tuple[bool, bool]] = []
        for name, raw in commands:
            active = all(a for a, _ in stack)
            if name == "if":
                taken = active and self.condition(raw)
                stack.append((taken, taken))
                continue
            if name in ("elseif", "else", "endif"):
                if not stack:
                    raise CMakeError(f"{name}() without if()")
                _, done = stack.pop()
                outer = all(a for a, _ in stack)
                if name == "endif":
                    continue
                taken = outer and not done and (name == "else" or self.condition(raw))
                stack.append((taken, done or taken))
                continue
            if not active:
                continue
            self.command(name, raw)
        return self.result

    def command(self, name: str, raw: list[tuple[str, bool]]) -> None:
        args = self.expand(raw)
        variables = self.result.variables
        if name == "set" and args:
            values = [a for a in args[1:] if a not in ("PARENT_SCOPE",)]
            if "CACHE" in values:
                values = values[: values.index("CACHE")]
            variables[args[0]] = values
        elif name == "unset" and args:
            variables.pop(args[0], None)
        elif name == "list" and len(args) >= 2:
            op, var = args[0].upper(), args[1]
            current = variables.setdefault(var, [])
            if op == "APPEND":
                current.extend(args[2:])
            elif op == "PREPEND":
                variables[var] = args[2:] + current
            elif op == "REMOVE_ITEM":
                variables[var] = [v for v in current if v not in args[2:]]
            else:
                self.result.ignored.append(f"list({op})")
        elif name == "set_property" and args and args[0] == "TARGET" and "PROPERTY" in args:
            k = args.index("PROPERTY")
            targets = args[1:k]
            if k + 1 < len(args):
                prop, values = args[k + 1], args[k + 2 :]
                for target in targets:
                    self.result.target_properties.setdefault(target, {})[prop] = values
        elif name == "llvm_singlesource":
            if "PREFIX" in args and args.index("PREFIX") + 1 < len(args):
                self.result.prefix = args[args.index("PREFIX") + 1]
        elif name == "add_definitions":
            # Directory-wide compile flags (-D...), passed to every program like CPPFLAGS.
            variables.setdefault("ADD_DEFINITIONS", []).extend(args)
        elif name in (
            "llvm_test_data",
            "add_subdirectory",
            "llvm_add_subdirectories",
            "message",
            "include",
        ):
            pass  # no effect on how single-source programs are built and judged
        else:
            self.result.ignored.append(name)


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def evaluate_cmake(path: Path, defines: dict[str, str] | None = None) -> CMakeResult:
    """Evaluate a directory's CMakeLists.txt (CMakeError if it cannot be parsed)."""
    return evaluate_cmake_text(path.read_bytes(), path.parent, defines)


def evaluate_cmake_text(
    data: bytes, directory: Path, defines: dict[str, str] | None = None
) -> CMakeResult:
    """Evaluate the bytes of `directory`'s CMakeLists.txt, read by the caller (an importer
    reads it through its tree, data/paths.py, so a link out of it is never followed)."""
    text = data.decode("utf-8", errors="replace")
    return _Interpreter(directory, defines or {}).run(parse_commands(text))
