"""Typed configuration values read from YAML, shared by the trainers and the study.

YAML gives loosely typed values (`2e-3` is a string in YAML 1.1, `8.0` may stand for an
integer); every config field is converted to its declared type here, by pydantic in strict
mode with those two allowances, and every problem is a ValueError that names the key, so a
bad config fails at start-up in one line.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import sys
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic
from pydantic_core import PydanticCustomError

from asmopt.errors import InputError, did_you_mean

# Builds a nested dataclass section: nested(cls, value, key).
Nested = Callable[[type, Any, str], Any]
# Device types the trainers and the study run on (`auto` picks one of the first two).
DEVICE_TYPES = ("cpu", "cuda", "mps")
# Longest shown value in a message: a pasted blob must not become a screenful of error.
SHOWN_CHARS = 60


def type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def show(value: Any) -> str:
    """`repr(value)` cut to SHOWN_CHARS, for messages. An integer past Python's digit limit
    has no repr at all, so it is shown by its length instead."""
    if isinstance(value, int) and not isinstance(value, bool) and _too_many_digits(value):
        return f"an integer of about {value.bit_length() * 0.30103:.0f} digits"
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def _too_many_digits(value: int) -> bool:
    limit = sys.get_int_max_str_digits()
    return bool(limit) and value.bit_length() * 0.30103 > limit - 1


def one_line(text: str) -> str:
    """Messages of YAML and JSON parsers span several lines; an error is one line."""
    return " ".join(str(text).split())


def check_device(name: str, key: str = "device") -> str:
    """`name` if it can name a device the trainers run on, else ValueError naming `key`.

    Checked when the config is read, so that `device: tpu9` is refused in one line before
    anything is built; whether the device exists here is checked when the run starts
    (asmopt.train.run.resolve_device), still before any model loads."""
    kind, sep, index = name.partition(":")
    if name == "auto" or (
        kind in DEVICE_TYPES and (not sep or (index.isascii() and index.isdigit()))
    ):
        return name
    raise InputError(f"{key} {show(name)} is not one of auto, cpu, cuda, cuda:N, mps")


def unknown_key(
    key: Any, names: collections.abc.Iterable[str], what: str, where: str = "", see: str = ""
) -> InputError:
    """The error for a setting that names nothing: the key as written (under `where.`),
    the nearest known name spelt the same way, and where the fields are listed. One
    message shape for every config a user writes."""
    prefix = f"{where}." if where else ""
    hint = did_you_mean(str(key), names, prefix=prefix)
    tail = f" ({see})" if see else ""
    return InputError(f"unknown {what} {prefix + str(key)!r}{hint}{tail}")


# Settings that were renamed: old spelling -> (new spelling, what it is). The old spelling
# is refused by name, never read with its old meaning (a bare `seed` could be taken for
# another of the seeds), in one message shape for every config and keyword a user writes.
Renamed = dict[str, tuple[str, str]]


def refuse_renamed(key: Any, renamed: Renamed, what: str = "key", where: str = "") -> None:
    """An InputError if `key` (under `where.`) is the old spelling of a renamed setting,
    naming the new one: "the key 'seed' is now train_seed (the trainer's seed; ...)"."""
    if key in renamed:
        prefix = f"{where}." if where else ""
        new, meaning = renamed[key]
        raise InputError(f"the {what} {prefix + str(key)!r} is now {prefix + new} ({meaning})")


_Entry = typing.TypeVar("_Entry", bound=Callable[..., Any])


def renamed_keywords(renamed: Renamed) -> Callable[[_Entry], _Entry]:
    """A decorator for a public function, or a class (its `__init__`), that refuses the old
    spelling of a renamed keyword argument as `refuse_renamed` refuses a config's key:
    `check_adequacy(seed=3)` is told that the keyword is now input_seed, not only that
    there is no such keyword."""

    def decorate(entry: _Entry) -> _Entry:
        name = entry.__name__
        func = entry.__init__ if isinstance(entry, type) else entry  # type: ignore[misc]

        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> Any:
            for key in kwargs:
                try:
                    refuse_renamed(key, renamed, "keyword argument")
                except InputError as exc:
                    raise InputError(f"{name}(): {exc}") from None
            return func(*args, **kwargs)

        if isinstance(entry, type):
            entry.__init__ = checked  # type: ignore[misc]
            return entry
        return checked  # type: ignore[return-value]

    return decorate


def coerce(key: str, value: Any, tp: Any, nested: Nested | None = None) -> Any:
    """`value` converted to the field type `tp`, or ValueError naming the key.

    pydantic converts (`TypeAdapter`, strict: "yes" is no bool, 1.5 no integer, a bool no
    number; see `_strict_view` for the two YAML allowances). A dataclass type is a nested
    section, built by `nested` (configs with sections pass it), so that a section's unknown
    keys are refused by the config's own rule."""
    if dataclasses.is_dataclass(tp) and nested is not None:
        return nested(tp, value, key)  # type: ignore[arg-type]
    view = _strict_view(key, tp)
    try:
        return _adapter(view).validate_python(value)
    except pydantic.ValidationError as exc:
        raise InputError(_message(key, view, exc.errors())) from None


def _accepting(kinds: tuple[type, ...], error: str, expected: str) -> Any:
    """A pydantic validator that lets only inputs of `kinds` (never a bool) reach the lax
    conversion after it: YAML's `8.0` may be an integer and `2e-3` (a string in YAML 1.1) a
    float, but `true` is neither and `"8"` no integer."""

    def gate(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise PydanticCustomError(error, expected)
        return value

    return pydantic.BeforeValidator(gate)


# The leaves that are lax in one YAML-shaped way each (every other type is strict).
_LAX_LEAVES: dict[Any, Any] = {
    int: Annotated[int, pydantic.Strict(False), _accepting((int, float), "int_type", "an integer")],
    float: Annotated[
        float, pydantic.Strict(False), _accepting((int, float, str), "float_type", "a number")
    ],
}
# Strict throughout; a non-finite float (`.inf`, `1e400`) is refused.
_STRICT = pydantic.ConfigDict(strict=True, allow_inf_nan=False)


def _strict_view(key: str, tp: Any) -> Any:
    """`tp` as pydantic validates it here: `int` and `float` leaves made lax in their YAML
    way (`_LAX_LEAVES`), a `tuple[X, ...]` read from a YAML list, the rest as declared.
    A dataclass outside a section (in a list or a union) is refused: pydantic would build
    it ignoring unknown keys, which no config here may do."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp in _LAX_LEAVES:
        return _LAX_LEAVES[tp]
    if dataclasses.is_dataclass(tp):
        raise InputError(f"{key}: unsupported field type {type_name(tp)}")
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_strict_view(key, a) for a in args)]  # noqa: UP007
    if origin is list:
        return list[_strict_view(key, args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[_strict_view(key, args[0]), _strict_view(key, args[1])]  # type: ignore[misc]
    if origin is tuple:
        items = tuple(a if a is Ellipsis else _strict_view(key, a) for a in args)
        return Annotated[tuple[items], pydantic.Strict(False)]  # type: ignore[valid-type]
    if origin is Literal or tp in (bool, str, type(None), Any):
        return tp
    raise InputError(f"{key}: unsupported field type {type_name(tp)}")


@functools.lru_cache(maxsize=256)
def _adapter(view: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(view, config=_STRICT)


# What each pydantic error type says a value should have been.
_EXPECTED = {
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping",
    "none_type": "null",
}


def _message(key: str, view: Any, errors: list[Any]) -> str:
    """One line for pydantic's errors, in this module's words: the dotted key of the bad
    value (`lora_target_modules[1]`, `model_overrides.x`), what it should be, and what it
    is. Of a union's alternatives the last one's complaint is shown, as for one type."""
    tp, depth = _bare(view), 0
    while True:
        arms = [_bare(a) for a in typing.get_args(tp) if a is not type(None)]
        if typing.get_origin(tp) in (typing.Union, types.UnionType):
            if len(arms) > 1:  # pydantic names the alternative at this depth of `loc`
                tag = errors[-1]["loc"][depth]
                errors = [e for e in errors if e["loc"][depth : depth + 1] == (tag,)]
                depth += 1
            tp = arms[-1]
            continue
        loc = errors[0]["loc"]
        if depth == len(loc):
            return _leaf_message(key, tp, errors[0])
        part, depth = loc[depth], depth + 1
        if loc[depth : depth + 1] == ("[key]",):
            return f"{key}: expected string keys, got {show(part)}"
        key += f"[{part}]" if isinstance(part, int) else f".{part}"
        tp = _item_type(tp, part)


def _leaf_message(key: str, tp: Any, error: Any) -> str:
    value = error["input"]
    if typing.get_origin(tp) is Literal:
        return f"{key}: {show(value)} is not one of {', '.join(map(str, typing.get_args(tp)))}"
    expected = _EXPECTED.get(error["type"])
    if expected is None:
        return f"{key}: {one_line(error['msg'])}, got {show(value)}"
    return f"{key}: expected {expected}, got {show(value)}"


def _item_type(tp: Any, part: Any) -> Any:
    """The declared type of item `part` (an index or a key) of the container type `tp`."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) is dict:
        return _bare(args[1])
    if typing.get_origin(tp) is tuple and Ellipsis not in args and isinstance(part, int):
        return _bare(args[part])
    return _bare(args[0])


def _bare(tp: Any) -> Any:
    """`tp` without its Annotated metadata (the lax leaves' validators)."""
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def builtin_configs(config_dir: Path) -> list[str]:
    return sorted(p.stem for p in config_dir.glob("*.yaml"))


def config_path(name: str, config_dir: Path, what: str = "config") -> Path:
    """A YAML file, or a built-in config of `config_dir` by name (with or without `.yaml`)."""
    path = Path(name)
    if path.is_file():
        return path
    builtin = config_dir / (name if name.endswith(".yaml") else f"{name}.yaml")
    if builtin.is_file() and path.parent == Path("."):
        return builtin
    raise FileNotFoundError(
        f"{what} {name!r}: no such file and not a built-in {what} "
        f"({', '.join(builtin_configs(config_dir))})"
    )


# --------------------------------------------------------------------------- files and text

# Config and results files are small; a bigger one is a wrong path, not a config.
MAX_FILE_BYTES = 64 * 1024 * 1024


def read_text(path: Path, what: str = "config") -> str:
    """The UTF-8 text of a config or results file, or ValueError naming the file: which
    byte on which line is not UTF-8 says more than the codec's position in the stream."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(f"{path}: over {MAX_FILE_BYTES >> 20} MiB, too large for a {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); "
            "save it as UTF-8"
        ) from None


def read_yaml(path: Path, what: str = "config") -> Any:
    """The YAML document of the file `path`; every problem is one ValueError line naming it."""
    return parse_yaml(read_text(path, what), str(path))


def parse_yaml(text: str, source: str) -> Any:
    """`text` read as YAML. A value YAML reads but Python cannot convert (an integer past
    Python's digit limit, a date that does not exist) is named by its line and key: Python's
    own message names neither, and suggests a remedy for a different problem."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputError(
            f"{source}: not valid YAML ({one_line(exc.problem or exc)}{where})"
        ) from None
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML ({one_line(exc)})") from None
    except ValueError as exc:
        raise InputError(f"{source}: {bad_scalar(text) or one_line(exc)}") from None


def parse_override(raw: str, label: str) -> Any:
    """A command-line value read as YAML (numbers, lists, null); text that is not YAML is
    kept as the string typed, for the field's type to accept or refuse."""
    import yaml

    if not raw.strip():
        return ""
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    except ValueError as exc:
        raise InputError(f"{label}: {bad_scalar(raw) or one_line(exc)}") from None


def bad_scalar(text: str) -> str | None:
    """Where and why the first value of a YAML text that Python cannot convert fails
    ('line 3, train.init_seed: an integer of 5000 digits ...'), or None if none does."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        for key, node in _scalars(root, "", set()):
            try:
                loader.construct_object(node)
            except ValueError as exc:
                where = f"line {node.start_mark.line + 1}, {key}: " if key else ""
                return where + _scalar_problem(node, exc)
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    return None


def _scalars(node: Any, key: str, seen: set[int]) -> Iterator[tuple[str, Any]]:
    """Every scalar node under `node` with its dotted key (`seen` stops alias cycles)."""
    import yaml

    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            name = k.value if isinstance(k, yaml.ScalarNode) else "?"
            yield from _scalars(k, key, seen)
            yield from _scalars(v, f"{key}.{name}" if key else str(name), seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield from _scalars(item, f"{key}[{i}]", seen)
    elif isinstance(node, yaml.ScalarNode):
        yield key, node


def _scalar_problem(node: Any, exc: ValueError) -> str:
    digits = sum(c.isdigit() for c in node.value)
    if node.tag.endswith(":int") and digits >= sys.get_int_max_str_digits() > 0:
        return long_integer(digits)
    return one_line(exc)


def long_integer(digits: int) -> str:
    """The message for an integer too long to read: no setting comes anywhere near it."""
    return f"an integer of {digits} digits, far beyond the range of any setting"


# --------------------------------------------------------------------------- attribution


def culprits(error: str, without: Callable[[int], object], count: int) -> list[int]:
    """Which of `count` command-line overrides a config error comes from: those without
    which the config is built with another error or none (`without(i)` builds it leaving
    override i out). So `--set total_steps=-5` over a good file is reported as the command
    line's mistake, and a file's own mistake as the file's, whatever else `--set` changes."""
    blamed = []
    for i in range(count):
        try:
            without(i)
        except ValueError as exc:
            if str(exc) == error:
                continue
        blamed.append(i)
    return blamed


# ------------------------------------------------------------- configs made in Python
# Field name -> (lowest, highest) allowed value; None leaves that side open.
Ranges = dict[str, tuple[float | None, float | None]]


def check_fields(obj: Any, ranges: Ranges | None = None) -> None:
    """Every field of the dataclass instance `obj` checked against its declared type, and
    the numeric ones in `ranges` against (low, high) bounds (None: open), so a config made
    in Python fails when it is made, as a YAML or command-line one does: an InputError
    naming `Class.field`, what it should be and what it is. Unlike `coerce` nothing is
    converted: a caller in Python means the type it passes (`rounds="3"` is a mistake, not
    YAML), so a bool is no number and a str no Path."""
    cls = type(obj)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(obj):
        value, tp = getattr(obj, f.name), hints.get(f.name, Any)
        if not _conforms(value, tp):
            raise InputError(
                f"{cls.__name__}.{f.name}: expected {_describe(tp)}, got {show(value)}"
            )
    for name, (low, high) in (ranges or {}).items():
        value = getattr(obj, name)
        if value is None:
            continue
        if (low is not None and not value >= low) or (high is not None and not value <= high):
            raise InputError(
                f"{cls.__name__}.{name}: must be {_bounds(low, high)}, got {show(value)}"
            )


def _bounds(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"in {low}..{high}"
    return f"at least {low}" if low is not None else f"at most {high}"


def _conforms(value: Any, tp: Any) -> bool:
    """Whether `value` is of the declared type `tp`, recursively through unions, literals
    and containers; a type this cannot test (a Protocol, a type variable) accepts."""
    tp = _bare(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or isinstance(tp, typing.TypeVar):
        return True
    if tp is None or tp is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, arm) for arm in args)
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool) and _finite(value)
    if origin is not None and origin in (collections.abc.Callable,):
        return callable(value)
    if origin is not None:
        return _conforms_container(value, origin, args)
    if isinstance(tp, type):
        try:
            return isinstance(value, tp)
        except TypeError:  # a Protocol that is not runtime-checkable
            return True
    return True


def _conforms_container(value: Any, origin: Any, args: tuple[Any, ...]) -> bool:
    if origin in (list, tuple, collections.abc.Sequence):
        if isinstance(value, str | bytes) or not isinstance(value, origin):
            return False
        if origin is tuple and args and Ellipsis not in args:
            return len(value) == len(args) and all(map(_conforms, value, args))
        return not args or all(_conforms(v, args[0]) for v in value)
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, collections.abc.Mapping):
            return False
        return not args or all(
            _conforms(k, args[0]) and _conforms(v, args[1]) for k, v in value.items()
        )
    try:
        return isinstance(value, origin)
    except TypeError:
        return True


def _finite(value: float) -> bool:
    return value == value and value not in (float("inf"), float("-inf"))


def _describe(tp: Any) -> str:
    """A declared type in words: `an integer`, `a Path, a string or None`."""
    tp = _bare(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        words = [_describe(a) for a in args]
        return ", ".join(words[:-1]) + " or " + words[-1]
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    named = {int: "an integer", float: "a finite number", bool: "True or False",
             str: "a string", type(None): "None"}  # fmt: skip
    if tp in named:
        return named[tp]
    if origin in (list, tuple, collections.abc.Sequence):
        return f"a list (each item {_describe(args[0])})" if args else "a list"
    if origin in (dict, collections.abc.Mapping):
        return "a mapping"
    if origin is collections.abc.Callable:
        return "a callable"
    return f"a {type_name(origin or tp)}"


def check_arguments(func: Callable[..., Any], arguments: dict[str, Any]) -> None:
    """The arguments of a public entry point checked against its annotations when it is
    entered (`check_arguments(score, locals())` as its first line): `score(program, 5)` is
    an InputError naming the parameter, not a grading that ends as `infra_error`."""
    hints = typing.get_type_hints(func)
    for name, value in arguments.items():
        tp = hints.get(name)
        if tp is not None and name != "return" and not _conforms(value, tp):
            raise InputError(
                f"{func.__name__}(): {name} must be {_describe(tp)}, got {show(value)}"
            )
