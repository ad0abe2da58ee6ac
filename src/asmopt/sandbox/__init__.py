"""Confinement for untrusted binaries and for the toolchain that builds them."""

from asmopt.sandbox.runner import (
    TOOLCHAIN_LIMITS,
    UNSAFE_ENV,
    Limits,
    RunResult,
    Sandbox,
    SandboxUnavailable,
    default_sandbox,
)

__all__ = [
    "TOOLCHAIN_LIMITS",
    "UNSAFE_ENV",
    "Limits",
    "RunResult",
    "Sandbox",
    "SandboxUnavailable",
    "default_sandbox",
]
