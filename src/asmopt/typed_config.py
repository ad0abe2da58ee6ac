"""Typed configuration values read from YAML, shared by the trainers and the study.

YAML gives loosely typed values (`2e-3` is a string in YAML 1.1, `8.0` may stand for an
integer); every config field is converted to its declared type here, and every problem is a
ValueError that names the key, so a bad config fails at start-up in one line.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

# Builds a nested dataclass section: nested(cls, value, key).
Nested = Callable[[type, Any, str], Any]


def type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def coerce(key: str, value: Any, tp: Any, nested: Nested | None = None) -> Any:
    """`value` converted to the field type `tp`, or ValueError naming the key.

    A dataclass type is a nested section, built by `nested` (configs with sections pass it)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if dataclasses.is_dataclass(tp) and nested is not None:
        return nested(tp, value, key)  # type: ignore[arg-type]
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return coerce(key, value, arg, nested)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError(errors[-1] if errors else f"{key}: bad value {value!r}")
    if origin is Literal:
        if value not in args:
            raise ValueError(f"{key}: {value!r} is not one of {', '.join(map(str, args))}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ValueError(f"{key}: expected a list, got {value!r}")
        return [coerce(f"{key}[{i}]", v, args[0], nested) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ValueError(f"{key}: expected a mapping, got {value!r}")
        return dict(value)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ValueError(f"{key}: expected true or false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ValueError(f"{key}: expected an integer, got {value!r}")
    if tp is float:
        if isinstance(value, bool):
            raise ValueError(f"{key}: expected a number, got {value!r}")
        try:
            number = float(value)  # YAML 1.1 reads `2e-3` as a string
        except (TypeError, ValueError):
            raise ValueError(f"{key}: expected a number, got {value!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"{key}: expected a finite number, got {value!r}")
        return number
    if tp is str:
        if isinstance(value, str):
            return value
        raise ValueError(f"{key}: expected a string, got {value!r}")
    if tp is Any:
        return value
    raise ValueError(f"{key}: unsupported field type {type_name(tp)}")


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
