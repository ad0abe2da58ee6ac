"""The library prints nothing: every notice goes to the caller's `notify` or to logging, so
a program that imports asmopt owns its stdout and stderr (and `--json` output is JSON).

What used to print: the wait for a timing core (`CoreLock.hold` without `notify`, from
`run_eval` and every reward worker), the trainers' default echo, and `PolicySpec`'s errors
named `asmopt eval`'s flags to Python callers."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from asmopt.measure.timing import CoreLayout, CoreLock
from asmopt.policies.factory import PolicySpec, SpecError

REPO = Path(__file__).resolve().parents[1]

# Another process holds the one timing core of a private lock directory for a while.
HOLDER = """
import sys, time
from pathlib import Path
from asmopt.measure.timing import CoreLayout, CoreLock
lock = CoreLock(CoreLayout(timing=(0,), general=(0,), isolated=False), Path(sys.argv[1]))
with lock.hold():
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold_elsewhere(lock_dir: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_dir), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert proc.stdout is not None and proc.stdout.readline().startswith("held")
    return proc


def _wait_for_core(lock: CoreLock, **kwargs: object) -> None:
    with lock.hold(notice_after_s=0.05, **kwargs):  # type: ignore[arg-type]
        pass


def test_a_wait_for_a_timing_core_is_logged_or_notified_never_printed(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    layout = CoreLayout(timing=(0,), general=(0,), isolated=False)
    holder = _hold_elsewhere(tmp_path, 0.6)
    with caplog.at_level(logging.INFO, logger="asmopt.measure.timing.cores"):
        _wait_for_core(CoreLock(layout, tmp_path))
    holder.wait(timeout=30)
    assert capfd.readouterr() == ("", "")  # nothing on stdout or stderr
    (record,) = [r for r in caplog.records if "for a timing core" in r.getMessage()]
    assert record.levelno == logging.INFO and f"pid {holder.pid}" in record.getMessage()

    # A caller's channel gets it instead: given to `hold`, or to the lock (how `run_eval`
    # passes its `notify`).
    for given_to_lock in (False, True):
        heard: list[str] = []
        holder = _hold_elsewhere(tmp_path, 0.6)
        if given_to_lock:
            _wait_for_core(CoreLock(layout, tmp_path, notify=heard.append))
        else:
            _wait_for_core(CoreLock(layout, tmp_path), notify=heard.append)
        holder.wait(timeout=30)
        assert heard and heard[0].startswith("waiting") and "for a timing core" in heard[0]
    assert capfd.readouterr() == ("", "")


def test_policy_spec_errors_name_fields_and_the_cli_names_flags() -> None:
    with pytest.raises(SpecError) as info:
        PolicySpec(rounds=0)
    assert str(info.value) == "rounds must be at least 1, got 0"
    assert info.value.for_cli() == "--rounds must be at least 1, got 0"
    with pytest.raises(SpecError) as info:
        PolicySpec(name="identity", search_budget=-1.0)
    assert str(info.value).startswith("search_budget must be positive")
    assert info.value.for_cli().startswith("--search-budget must be positive")
    with pytest.raises(SpecError) as info:
        PolicySpec(name="hf", model="m", device="tpu{9}")
    assert "device 'tpu{9}'" in str(info.value) and "--device 'tpu{9}'" in info.value.for_cli()
    # The command line shows the flags.
    proc = subprocess.run(
        [sys.executable, "-m", "asmopt.cli", "eval", "--policy", "openai", "--model", "m"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "asmopt: error: --policy openai needs --base-url (e.g. http://host:8000/v1)"
    )


def test_trainers_echo_through_logging_by_default() -> None:
    import inspect

    pytest.importorskip("torch")
    from asmopt.train import ppo, sft

    for trainer in (ppo.train_ppo, sft.train_sft):
        assert inspect.signature(trainer).parameters["echo"].default is ppo.echo_log


def test_the_command_shows_the_librarys_notices_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The PLT kernel build and the study's progress are INFO records (nothing a library
    caller sees unless it configures logging); `asmopt` shows them on stderr."""
    from asmopt.cli.main import show_notices

    logging.getLogger("asmopt.models.plt.kernels").info("a kernel choice")  # no notice
    assert capsys.readouterr() == ("", "")
    show_notices()
    show_notices()  # once per logger, however often main runs in one process
    logging.getLogger("asmopt.models.plt.native").info("building it")
    logging.getLogger("asmopt.study.data").info("tokenizer: training BPE")
    assert capsys.readouterr() == ("", "asmopt: building it\ntokenizer: training BPE\n")
