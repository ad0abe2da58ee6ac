"""`run_eval(EvalConfig)` is the whole main job: typed, checked, silent, interruptible, and it
ends only the processes it started."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

import asmopt
from asmopt.errors import AsmoptError, InputError
from asmopt.policies.base import Candidate, PolicyRequest
from asmopt.policies.factory import PolicySpec
from asmopt.policies.llm import PolicyError
from asmopt.run import EvalConfig, Interrupt, run_eval
from asmopt.sandbox import live

SPIN = """\t.text
\t.globl main
main:
.Lspin:
\tjmp .Lspin
"""


class SpinningPolicy:
    """Answers with a program that never ends: each check runs until its deadline, so a
    cancelled evaluation has sandboxed work to end."""

    name = "spin"

    def propose(self, request: PolicyRequest) -> list[Candidate]:
        return [Candidate(assembly=SPIN) for _ in range(request.num_samples)]


@pytest.mark.parametrize(
    "kwargs, error, needle",
    [
        ({"samples": 0}, InputError, "samples must be an integer in 1..10000"),
        ({"jobs": 1000}, InputError, "jobs must be an integer in 1..256"),
        ({"measure": "walltime"}, InputError, "measure must be one of"),
    ],
)
def test_a_bad_config_is_refused_when_made(kwargs: dict, error: type, needle: str) -> None:
    with pytest.raises(error, match=needle) as info:
        EvalConfig(**kwargs)
    assert isinstance(info.value, AsmoptError)


def test_a_bad_policy_spec_is_refused_before_anything_loads() -> None:
    # A Python caller is told the spec's fields; the command line, its flags (for_cli).
    with pytest.raises(PolicyError, match="needs base_url") as info:
        PolicySpec(name="openai", model="m")
    assert isinstance(info.value, AsmoptError) and "--" not in str(info.value)
    assert "--policy openai needs --base-url" in info.value.for_cli()  # type: ignore[attr-defined]
    with pytest.raises(PolicyError, match="needs answers"):
        PolicySpec(name="answers")
    with pytest.raises(PolicyError, match=r"^rounds must be at least 1, got 0$"):
        PolicySpec(rounds=0)


def test_an_unknown_policy_and_an_empty_selection_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(AsmoptError, match="unknown policy 'nope'"):
        EvalConfig(policy="nope")
    config = EvalConfig(policy="identity", split="all", only=["no_such_program"],
                        measure="none", run_dir=tmp_path / "run")  # fmt: skip
    with pytest.raises(AsmoptError):
        run_eval(config)
    with pytest.raises(AsmoptError, match="unknown split 'nonesuch'"):
        run_eval(EvalConfig(split="nonesuch", measure="none", run_dir=tmp_path / "run2"))


def test_a_policy_spec_by_name_runs_and_the_library_prints_nothing(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run = run_eval(EvalConfig(policy="identity", split="all", only=["gcd_pairs"],
                              measure="none", run_dir=tmp_path / "run"))  # fmt: skip
    assert run.summary["pass_rate"] == 1.0 and not run.interrupted
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_cancel_ends_its_own_sandboxed_runs_and_no_other_process(tmp_path: Path) -> None:
    host_child = subprocess.Popen(["sleep", "60"])  # the host's own work: not ours to end
    interrupt = Interrupt()
    config = EvalConfig(policy=SpinningPolicy(), split="all", only=["gcd_pairs"],
                        measure="none", run_dir=tmp_path / "run")  # fmt: skip
    done: list[asmopt.EvalRun] = []
    worker = threading.Thread(target=lambda: done.append(run_eval(config, interrupt=interrupt)))
    start = time.monotonic()
    worker.start()
    deadline = start + 60
    while live.count() == 0 and time.monotonic() < deadline:  # a spinning check is running
        time.sleep(0.05)
    assert live.count() > 0, "no sandboxed run started"
    interrupt.request_cancel()
    worker.join(timeout=60)
    assert not worker.is_alive()
    elapsed = time.monotonic() - start
    try:
        assert host_child.poll() is None, "the host's own child process was killed"
    finally:
        host_child.kill()
        host_child.wait()
    assert done and done[0].interrupted
    assert live.count() == 0
    # Cancelled work is not stored as the answer's verdict: a rerun judges it.
    assert done[0].outcomes == []
    assert elapsed < 30, f"cancel took {elapsed:.1f} s: the spinning runs were not ended"
