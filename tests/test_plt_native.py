"""The multi-row float32 product kernel (`models/plt/native.py`, `rows_product.cpp`).

These tests build the real extension once per test session (~30-60 s with a C++ compiler,
ninja and the Python headers; without a compiler or the headers they skip and say so; the
rest of the suite runs with it switched off). Checked: its
products equal a float64 reference for every row-count path (1-8 rows, and more in chunks of
8), odd widths and strided inputs; they do not depend on the thread count; bad input is
refused by name; it is a timed candidate for float32 only; products that need a gradient
never use it; a choice cached without it is timed again once it is available, and a choice
of it falls back by the rule when it is switched off; a build that fails is reported and
leaves the other kernels; and greedy decoding of a PLT model with it forced gives the same
tokens as with `F.linear`.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import lazy
from kernel_choices import write_choice
from tiny_model import tiny_plt_model

if TYPE_CHECKING:
    import torch

    from asmopt.models.plt import kernels, modeling_plt, native
else:
    torch = lazy("torch")
    kernels = lazy("asmopt.models.plt.kernels")
    modeling_plt = lazy("asmopt.models.plt.modeling_plt")
    native = lazy("asmopt.models.plt.native")

# Builds the C++ extension once (30-60 s): `make test-slow` runs the module.
pytestmark = [pytest.mark.ml, pytest.mark.slow]


def _missing_build_tools() -> str:
    """What a machine lacks to build any C++ extension (then these tests skip, saying so; a
    build that fails with the tools present fails them)."""
    include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if shutil.which("c++") is None and shutil.which("g++") is None:
        return "no C++ compiler (apt-get install g++)"
    if not include.exists():
        return f"no Python headers ({include}; apt-get install python3-dev)"
    return ""


@pytest.fixture
def on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The kernel switched on (built on first use in this process), auto kernel choice, no
    choices in memory; choices go to the session's cache directory. The load average reads
    as calm (the test machine is shared; the contention rule is tested in
    test_plt_kernels.py)."""
    missing = _missing_build_tools()
    if missing:
        pytest.skip(f"cannot build C++ extensions here: {missing}")
    monkeypatch.setenv(native.ENV_VAR, "auto")
    monkeypatch.delenv(kernels.ENV_VAR, raising=False)
    kernels.forget_choices()
    kernels.set_linear_kernel(None)
    assert native.load() is not None, native.status()
    with kernels.timing_hooks(load=lambda: 0.0):
        yield
    kernels.forget_choices()
    kernels.set_linear_kernel(None)


@pytest.fixture
def unloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switched on, as if nothing had been built or tried in this process yet."""
    monkeypatch.setenv(native.ENV_VAR, "auto")
    monkeypatch.setattr("asmopt.models.plt.native._module", None)
    monkeypatch.setattr("asmopt.models.plt.native._failure", None)


def _reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return x.double() @ weight.double().T


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 6, 7, 8, 11, 17])
def test_products_equal_a_float64_reference(on: None, rows: int) -> None:
    gen = torch.Generator().manual_seed(rows)
    # 53 inputs: three 16-wide vectors and a scalar tail; 37 outputs: no block size divides it.
    for out_features, in_features in ((37, 53), (64, 48), (300, 2048)):
        x = torch.randn(rows, in_features, generator=gen)
        weight = torch.randn(out_features, in_features, generator=gen)
        y = native.rows_product(x, weight)
        assert y.shape == (rows, out_features) and y.dtype == torch.float32
        assert torch.allclose(y.double(), _reference(x, weight), rtol=1e-4, atol=1e-3)
    strided = torch.randn(53, rows, generator=gen).t()  # a transposed view, not contiguous
    weight = torch.randn(37, 53, generator=gen)
    assert torch.allclose(
        native.rows_product(strided, weight).double(), _reference(strided, weight), atol=1e-3
    )


def test_products_do_not_depend_on_the_thread_count(on: None) -> None:
    """Every output is summed by one thread in one order: bit-identical at 1 and 2 threads."""
    x, weight = torch.randn(3, 512), torch.randn(1000, 512)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = native.rows_product(x, weight)
        torch.set_num_threads(2)
        two = native.rows_product(x, weight)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, two)


def test_bad_input_is_refused_by_name(on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match="float32 only"):
        native.rows_product(torch.randn(2, 8).bfloat16(), torch.randn(4, 8).bfloat16())
    with pytest.raises(RuntimeError, match=r"x \[rows, in\] and weight \[out, in\]"):
        native.rows_product(torch.randn(2, 8), torch.randn(4, 9))
    monkeypatch.setenv(native.ENV_VAR, "fast")
    with pytest.raises(ValueError, match=native.ENV_VAR):
        native.load()


def test_a_candidate_for_float32_only_and_timed_in_use(on: None, tmp_path: Path) -> None:
    assert kernels.candidates(2, torch.float32) == ("linear", "few_row", "rows")
    assert kernels.candidates(1, torch.float32) == ("linear", "few_row", "mv", "rows")
    assert "rows" not in kernels.candidates(2, torch.bfloat16)
    layer = modeling_plt.PLTLinear(64, 96, bias=True)
    x = torch.randn(3, 64)
    expected = torch.nn.functional.linear(x, layer.weight, layer.bias)
    ticks = iter(range(1 << 20))  # every timed call lasts 20 us: the same on a busy machine

    def steady() -> tuple[float, float]:
        t = next(ticks) * 10e-6
        return t, t

    with torch.no_grad(), kernels.timing_hooks(clock=steady):
        for _ in range(400):  # up to 3 rounds of 3 x SAMPLES calls per attempt, 3 attempts
            assert torch.allclose(layer(x), expected, atol=1e-5)
            if not kernels.calibrating():
                break
    (choice,) = kernels.kernel_report()
    assert set(choice.timings_us) == {"linear", "few_row", "rows"}
    assert choice.kernel == kernels.decide(choice.timings_us)[0]


def test_products_that_need_a_gradient_never_use_it(
    on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = native.rows_product

    def counting(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        calls.append(x.shape[0])
        return real(x, weight)

    monkeypatch.setattr("asmopt.models.plt.native.rows_product", counting)
    kernels.set_linear_kernel("rows")
    layer = modeling_plt.PLTLinear(16, 8, bias=True)
    x = torch.randn(2, 16, requires_grad=True)
    out = layer(x)
    out.sum().backward()
    assert calls == [] and x.grad is not None and layer.weight.grad is not None
    expected = torch.nn.functional.linear(x, layer.weight, layer.bias)
    assert torch.allclose(out, expected)
    with torch.no_grad():
        assert torch.allclose(layer(x), expected, atol=1e-5)
    assert calls == [2]
    assert kernels.kernel_report() == []  # neither call was timed


def test_cached_choices_follow_what_is_available(
    on: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASMOPT_CACHE_DIR", str(tmp_path))
    weight = torch.randn(8, 16)
    # Timed before the kernel was available: timed again now.
    write_choice(kernel="few_row", timings_us={"linear": 10.0, "few_row": 5.0})
    assert kernels.chosen_kernel(weight, 2) is None
    # Chosen with it, then switched off: the rule over the other timings decides.
    kernels.forget_choices()
    write_choice(kernel="rows", timings_us={"linear": 10.0, "few_row": 9.8, "rows": 2.0})
    assert kernels.chosen_kernel(weight, 2) == "rows"
    monkeypatch.setenv(native.ENV_VAR, "off")
    assert kernels.chosen_kernel(weight, 2) == "linear"  # few_row is not 5% faster
    kernels.forget_choices()
    write_choice(kernel="rows", timings_us={"linear": 10.0, "few_row": 5.0, "rows": 2.0})
    assert kernels.chosen_kernel(weight, 2) == "few_row"
    assert native.status() == "off" and "rows" not in kernels.candidates(2, torch.float32)


def test_a_failed_build_is_reported_and_leaves_the_other_kernels(
    unloaded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_compiler() -> None:
        raise RuntimeError("Error building extension 'asmopt_plt_rows'\nc++: not found")

    monkeypatch.setattr("asmopt.models.plt.native._build", no_compiler)
    assert native.load() is None
    assert native.status() == "unavailable: RuntimeError: c++: not found"
    assert kernels.candidates(2, torch.float32) == ("linear", "few_row")
    with pytest.raises(RuntimeError, match="not available: unavailable"):
        native.rows_product(torch.randn(2, 4), torch.randn(3, 4))


def test_greedy_decoding_with_it_forced_matches_f_linear(on: None) -> None:
    """A PLT-2 model in float32: the same greedy tokens with every few-row product on the
    multi-row kernel as with F.linear, and logits equal to float32 rounding."""
    model = tiny_plt_model(seed=3).float().eval()
    ids = torch.randint(
        2, model.config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(0)
    )
    runs = {}
    for kernel in ("linear", "rows"):
        kernels.set_linear_kernel(kernel)  # type: ignore[arg-type]
        with torch.no_grad():
            out = model.generate(
                ids,
                max_new_tokens=6,
                do_sample=False,
                output_logits=True,
                return_dict_in_generate=True,
            )
        runs[kernel] = out
    assert torch.equal(runs["linear"].sequences, runs["rows"].sequences)
    for a, b in zip(runs["linear"].logits, runs["rows"].logits, strict=True):
        assert torch.allclose(a, b, atol=1e-4, rtol=1e-4)


def test_a_lock_left_by_a_killed_build_does_not_hang_the_next_load(on: None) -> None:
    """torch's loader waits while its lock file exists; one older than a build can take is
    removed first, so a build that was killed midway does not block every later process."""
    lock = native.build_dir() / "lock"
    lock.write_text("")
    old = time.time() - native.STALE_LOCK_S - 60
    os.utime(lock, (old, old))
    from asmopt.models.plt.native import _build

    worker = threading.Thread(target=_build, daemon=True)
    worker.start()
    worker.join(timeout=300)
    assert not worker.is_alive(), "the load waited on a stale lock"
    assert not lock.exists()


def test_forcing_another_kernel_never_builds_it(
    unloaded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def must_not_build() -> None:
        raise AssertionError("built although another kernel was forced")

    monkeypatch.setattr("asmopt.models.plt.native._build", must_not_build)
    weight = torch.randn(8, 16)
    try:
        for forced in ("linear", "few_row", "mv"):
            kernels.set_linear_kernel(forced)  # type: ignore[arg-type]
            for rows in (1, 2):
                want = forced if forced in kernels.applicable(rows, torch.float32) else "linear"
                assert kernels.chosen_kernel(weight, rows) == want
        assert native.status() == "not loaded yet"
    finally:
        kernels.set_linear_kernel(None)


def test_the_build_directory_depends_on_the_cpu_features(monkeypatch: pytest.MonkeyPatch) -> None:
    """Code built with -march=native on a CPU with AVX-512 must not be loaded on one of the
    same model name whose features a virtual machine hides."""
    here = native.build_dir()
    assert native.cpu_flags(), "no CPU flags read from /proc/cpuinfo"
    monkeypatch.setattr("asmopt.models.plt.native.cpu_flags", lambda: "fpu sse sse2 avx avx2")
    assert native.build_dir() != here and native.build_dir().parent == here.parent
