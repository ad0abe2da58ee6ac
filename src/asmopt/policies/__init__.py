"""Policies: anything that turns a program and its baseline assembly into candidates."""

from __future__ import annotations

from collections.abc import Callable

from asmopt.errors import InputError, did_you_mean
from asmopt.policies.base import Candidate, IdentityPolicy, Policy, PolicyRequest


def _compiler_search(**options: object) -> Policy:
    from asmopt.policies.compiler_search import CompilerSearchPolicy

    return CompilerSearchPolicy(**options)  # type: ignore[arg-type]


_REGISTRY: dict[str, Callable[..., Policy]] = {
    "identity": IdentityPolicy,
    "compiler-search": _compiler_search,
}


def register_policy(name: str, factory: Callable[..., Policy]) -> None:
    _REGISTRY[name] = factory


def available_policies() -> list[str]:
    return sorted(_REGISTRY)


def get_policy(name: str, **options: object) -> Policy:
    """Build a policy by name; an unknown name lists the known ones."""
    if name not in _REGISTRY:
        hint = did_you_mean(name, _REGISTRY, most=3)
        raise InputError(
            f"unknown policy {name!r}{hint} (available: {', '.join(available_policies())})"
        )
    return _REGISTRY[name](**options)


__all__ = [
    "Candidate",
    "IdentityPolicy",
    "Policy",
    "PolicyRequest",
    "available_policies",
    "get_policy",
    "register_policy",
]
