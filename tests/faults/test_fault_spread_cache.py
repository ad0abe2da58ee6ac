"""A damaged or foreign timing_spread.json is data, never trusted: a JSON list, a string,
null, an object of the wrong shape, a FIFO, a directory or a link loop in its place is
ignored with a warning and the spread measured again (here: the measurement is replaced by
a stand-in, so the test runs in no time; say so in its name), never an internal error or
a hang; where the file cannot be replaced (a directory in the way) the measurement is kept
in memory only."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from asmopt.measure.timing import calibration as spread_mod

STAND_IN = spread_mod.SandboxSpread(((1e-3, 0.01), (1e-2, 0.005)), 8.0, "stand-in")


class _Layout:
    timing = (1,)


class _Lock:
    layout = _Layout()


def _damage(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path)
    else:
        path.write_text({"list": "[1, 2]", "string": '"x"', "null": "null",
                         "object": '{"key": 1, "cores": [], "measured_at": "soon"}',
                         "garbage": "{not json"}[kind])


@pytest.mark.parametrize(
    "kind", ["list", "string", "null", "object", "garbage", "fifo", "directory", "loop"]
)
def test_a_damaged_spread_file_is_ignored_and_measured_again_with_a_stand_in_measurement(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    monkeypatch.setenv("ASMOPT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ASMOPT_TIMING_SPREAD", raising=False)
    monkeypatch.setattr(spread_mod, "_MEMO", {})
    calls = []

    def calibrate(sandbox: Any, lock: Any, toolchain: Any = None, rounds: Any = None) -> dict:
        calls.append(1)
        return {1: STAND_IN}

    monkeypatch.setattr(spread_mod, "calibrate", calibrate)
    path = spread_mod.spread_path()
    _damage(path, kind)
    with caplog.at_level(logging.WARNING, logger=spread_mod.log.name):
        assert spread_mod.stored_spread(_Lock()) is None
        got = spread_mod.machine_spread(None, _Lock())
    assert calls == [1] and got.points == STAND_IN.points
    assert any(str(path) in r.getMessage() for r in caplog.records), caplog.records
    if kind == "directory":  # cannot be replaced: kept in memory, measured again next time
        assert path.is_dir()
    else:  # replaced by a good file, which is read back
        assert json.loads(path.read_text())["cores"]["1"]["df"] == 8.0
        monkeypatch.setattr(spread_mod, "_MEMO", {})
        assert spread_mod.machine_spread(None, _Lock()).points == STAND_IN.points
        assert calls == [1]
