"""Speedup measurement: timing, instruction counts, statistics and copy detection.

`speedup` defines what a speedup is (per test, per program); `timing` measures it with
interleaved CPU-time runs, `valgrind` with instruction counts; `stats` holds the interval
arithmetic and `canonical` recognises answers that copy the baseline.
"""

from asmopt.measure.speedup import (
    MeasureMode,
    MeasureStatus,
    ProgramSpeedup,
    TestSpeedup,
    TimingWarning,
)

__all__ = ["MeasureMode", "MeasureStatus", "ProgramSpeedup", "TestSpeedup", "TimingWarning"]
