"""Shared fixtures: one sandbox and one toolchain per test session, with a private cache.

Markers (registered in pyproject.toml): `slow` tests run only under `make test-slow`
(`pytest -m slow`); `ml` tests need torch and transformers and are skipped when either is
missing; `fast` marks the modules of FAST_MODULES, sandbox-free, which `make test-fast` runs
alone in under a minute (a `fast` test that starts a sandboxed process fails). Heavy modules
(torch, transformers, the PLT model) are imported when a test first
uses them (`lazy`), so collecting the suite does not import them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

_CACHE = tempfile.mkdtemp(prefix="asmopt-test-cache-")
os.environ.setdefault("ASMOPT_CACHE_DIR", _CACHE)
# The PLT multi-row float32 kernel is built at first use (~30-60 s); only the tests that are
# about it switch it on (tests/test_plt_native.py), so no other test's timing includes a build.
os.environ.setdefault("ASMOPT_PLT_NATIVE", "off")
# A private temporary directory for this test session: sandbox run directories are created
# here, so leftovers are attributed to these tests and not to other work on the machine.
_TMP = tempfile.mkdtemp(prefix="asmopt-test-tmp-")
os.chmod(_TMP, 0o755)
os.environ["TMPDIR"] = _TMP
tempfile.tempdir = _TMP

from asmopt.sandbox import Sandbox  # noqa: E402
from asmopt.toolchain import Toolchain  # noqa: E402

ML_PACKAGES = ("torch", "transformers")


# Test modules that start no sandbox, compiler or subprocess of ours: what a contributor runs
# first (`make test-fast`, under a minute). The guard below keeps them honest.
FAST_MODULES = frozenset(
    {
        "test_architecture",
        "test_bench_few_row_products",
        "test_bench_plt_decode",
        "test_bench_reward_throughput",
        "test_canonical",
        "test_compare",
        "test_fault_spread_cache",
        "test_generators",
        "test_measure_stats",
        "test_metrics",
        "test_plt_generate",
        "test_plt_kernels",
        "test_plt_model",
        "test_ppo_core",
        "test_programs",
        "test_reward_functions",
        "test_selection",
        "test_study_diagnostics",
        "test_study_layering",
        "test_timing_rounds",
        "test_timing_spread",
    }
)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this session's private cache and temporary directory: every run made two new
    ones, and a developer's /tmp filled with them. ASMOPT_KEEP_TEST_TMP=1 keeps them, to look
    at what a failing test left."""
    if os.environ.get("ASMOPT_KEEP_TEST_TMP"):
        return
    for made in (_CACHE, _TMP):
        shutil.rmtree(made, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the fast modules' tests (not those that ask for the sandbox or toolchain
    fixture); `ml` tests skip (rather than fail) on an install without the
    `train` extra."""
    for item in items:
        uses_sandbox = {"sandbox", "toolchain"} & set(getattr(item, "fixturenames", ()))
        if item.path.stem in FAST_MODULES and not uses_sandbox:
            item.add_marker(pytest.mark.fast)
    missing = [name for name in ML_PACKAGES if importlib.util.find_spec(name) is None]
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"needs {' and '.join(missing)}: pip install -e '.[train]'")
    for item in items:
        if item.get_closest_marker("ml") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fast_tests_start_no_sandbox(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test marked `fast` that reaches the sandbox fails at once: the fast group's promise
    (no sandbox, under a minute) is checked, not hoped for."""
    if request.node.get_closest_marker("fast") is None:
        return

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(
            f"{request.node.nodeid} is in FAST_MODULES but starts a sandboxed process; "
            "take its module out of FAST_MODULES (tests/conftest.py)"
        )

    monkeypatch.setattr("asmopt.sandbox.runner.Sandbox._execute", refuse)


class LazyModule:
    """A module imported when one of its attributes is first used, not when the test file is
    collected; the test that first uses it is skipped when the module is not installed.
    Patch the module by its dotted path (`monkeypatch.setattr("pkg.mod.name", ...)`)."""

    FORWARDED = frozenset({"__version__", "__file__"})
    _name: str
    _module: ModuleType | None

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_module", None)

    def _load(self) -> ModuleType:
        if self._module is None:
            module = sys.modules.get(self._name) or pytest.importorskip(self._name)
            object.__setattr__(self, "_module", module)
        return self._module

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_") and attr not in self.FORWARDED:
            # pytest's collection, copy, pickle and inspect probe private names; they must
            # neither import the module nor find anything.
            raise AttributeError(attr)
        return getattr(self._load(), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        raise TypeError(
            f"set attributes on the module itself, e.g. monkeypatch.setattr('{self._name}.{attr}', "
            "...), not on its lazy stand-in"
        )

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy(name: str) -> Any:
    """`torch = lazy("torch")`: the module, imported on first use (see `LazyModule`)."""
    return LazyModule(name)


@pytest.fixture()
def one_thread() -> Iterator[None]:
    """One torch thread: on a loaded machine, two threads of tiny matrix products spend most
    of their time waiting for each other (a 20-step run went from 13 s to 2 min)."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trainers' tiny Llama (`tiny:llama`: byte-level tokenizer), built once; read only."""
    from asmopt.train.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("llama"), "llama", init_seed=0)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama with a trained BPE tokenizer and a chat template (tests/tiny_model.py),
    built once; read only."""
    from tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-llama")


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    box = Sandbox()
    box.check()
    return box


@pytest.fixture(scope="session")
def toolchain(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Toolchain:
    return Toolchain(sandbox=sandbox, cache_dir=tmp_path_factory.mktemp("builds"))


@pytest.fixture()
def no_leftovers() -> Iterator[None]:
    """Fail if a test leaves sandbox run directories or sandboxed processes behind."""
    tmp = Path(tempfile.gettempdir())
    before = {p.name for p in tmp.glob("asmopt-run-*")} | {
        p.name for p in tmp.glob("asmopt-build-*")
    }
    yield
    after = {p.name for p in tmp.glob("asmopt-run-*")} | {
        p.name for p in tmp.glob("asmopt-build-*")
    }
    assert after <= before, f"left behind: {sorted(after - before)}"
    assert sandboxed_processes() == [], f"processes left running: {sandboxed_processes()}"


def _live_threads(proc: Path) -> bool:
    """Whether a zombie thread group leader still has running threads (a leader that
    ended itself alone with SYS_exit stays a zombie while its threads run)."""
    try:
        tasks = list((proc / "task").iterdir())
    except OSError:
        return False
    for task in tasks:
        try:
            if "\nState:\tZ" not in (task / "status").read_text():
                return True
        except OSError:
            continue
    return False


def sandboxed_processes() -> list[str]:
    """Live processes of this test session's sandboxes.

    Every sandbox's bwrap command line names its run directory under the session's private
    temporary directory, and when bwrap is gone its pid namespace (with everything the
    program started) is gone too."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            status = (proc / "status").read_text()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "\nState:\tZ" in status and not _live_threads(proc):
            continue  # already dead, waiting for the host's init to reap it
        if _TMP in cmdline:
            found.append(f"{proc.name}: {cmdline[:100]}")
    return found
