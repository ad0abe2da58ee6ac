"""Ctrl-C and SIGTERM during a long command, mapped onto the library's `Interrupt`.

The library installs no signal handler (a host program owns its signals); the command line
does, for the duration of the job: the first signal stops starting new samples and lets the
running ones finish and be stored, cancelling those still running after a grace period; a
second one cancels at once. SIGTERM is what a job scheduler, `timeout` or a container stop
sends, so it is treated like Ctrl-C: what finished is kept and no temporary directory is
left.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from asmopt.run import Interrupt

# After the first Ctrl-C, running samples have this long to finish before they are cancelled
# (a sample being timed can otherwise run for its whole timing budget).
INTERRUPT_GRACE_S = 10.0


@contextlib.contextmanager
def interrupted_by_signals(
    interrupt: Interrupt, received: list[int], grace_s: float = INTERRUPT_GRACE_S
) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM drive `interrupt`; the first signal's number
    is appended to `received` (for the conventional exit status 128 + N)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may install handlers; the caller keeps control
        return
    timer = threading.Timer(grace_s, interrupt.request_cancel)
    timer.daemon = True

    def handler(signum: int, frame: Any) -> None:
        if not interrupt.stop.is_set():
            received.append(signum)
            interrupt.stop.set()
            timer.start()
            print(
                f"\nasmopt: interrupted ({signal.Signals(signum).name}): finishing the running "
                f"samples, starting no more; those still running in {grace_s:.0f} s are "
                "cancelled (Ctrl-C again to stop at once)",
                file=sys.stderr,
                flush=True,
            )
            return
        interrupt.request_cancel()
        raise KeyboardInterrupt

    try:
        with _handling(handler):
            yield
    finally:
        timer.cancel()


def interrupted_exit(signum: int | None = None) -> int:
    """After a Ctrl-C or SIGTERM the summary of what is stored has been printed; say how to
    go on, and exit as a shell reports that signal (130 for SIGINT, 143 for SIGTERM)."""
    print("asmopt: interrupted; rerun the same command to resume", file=sys.stderr)
    return 128 + (signum or signal.SIGINT)


class Stopped(KeyboardInterrupt):
    """A job without a resumable store stopped by a signal (`stopped_by_signals`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def stopped_by_signals(what: str) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM stop the job at once: one line on stderr,
    every sandboxed process of ours ended (so the worker threads finish fast and remove
    their temporary directories), and `Stopped` raised in the main thread, which the
    command line turns into exit status 128 + N. For jobs whose output is written only
    at the end (`data import`, `data build`): nothing partial is left behind."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    from asmopt.sandbox import live

    def handler(signum: int, frame: Any) -> None:
        print(
            f"\nasmopt: interrupted ({signal.Signals(signum).name}): stopping {what}; "
            "nothing is written",
            file=sys.stderr,
            flush=True,
        )
        for sig in (signal.SIGINT, signal.SIGTERM):  # one message, however many signals
            signal.signal(sig, signal.SIG_IGN)
        live.stop_all()  # what runs ends now, so the threads wind down before we exit
        raise Stopped(signum)

    try:
        with _handling(handler):
            yield
    finally:
        live.resume()


@contextlib.contextmanager
def _handling(handler: Any) -> Iterator[None]:
    """`handler` for SIGINT and SIGTERM while the block runs; the previous ones after."""
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
