"""Confinement for untrusted binaries and for the toolchain that builds them."""

from asmopt.sandbox.records import TOOLCHAIN_LIMITS, Limits, RunResult, SandboxUnavailable
from asmopt.sandbox.runner import UNSAFE_ENV, Sandbox, default_sandbox

__all__ = [
    "TOOLCHAIN_LIMITS",
    "UNSAFE_ENV",
    "Limits",
    "RunResult",
    "Sandbox",
    "SandboxUnavailable",
    "default_sandbox",
]
