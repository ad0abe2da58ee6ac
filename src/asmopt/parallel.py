"""The one parallel map over programs: threads, results in input order, an optional bar.

Work per program (builds, sandboxed runs) waits on child processes, so threads are enough;
`jobs` bounds how many run at once. The main thread wakes every `poll_s` while it waits, so
a signal handler installed by the caller (Ctrl-C) runs at once instead of after the longest
item (Python runs handlers in the main thread only, and only when it runs again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from tqdm import tqdm

T = TypeVar("T")
R = TypeVar("R")

POLL_S = 0.2


def completed(futures: Iterable[Future[Any]], poll_s: float = POLL_S) -> Iterator[Future[Any]]:
    """`as_completed`, but the waiting thread wakes every `poll_s` (see the module)."""
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=poll_s, return_when=FIRST_COMPLETED)
        yield from done


def parallel_map(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    jobs: int,
    desc: str = "",
    unit: str = "prog",
    progress: bool = False,
) -> list[R]:
    """`[fn(x) for x in items]`, `jobs` at a time. The first exception any call raises is
    raised once the running calls are done; queued ones are not started."""
    results: dict[int, R] = {}
    bar = tqdm(total=len(items), desc=desc, unit=unit, disable=not progress, leave=False)
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        for future in completed(futures):
            results[futures[future]] = future.result()
            bar.update(1)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        bar.close()
    return [results[i] for i in range(len(items))]
