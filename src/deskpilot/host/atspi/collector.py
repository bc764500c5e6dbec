"""CPython's cyclic garbage collector, paused while a tree is read.

A read of a big tree makes tens of thousands of short-lived containers — replies, tuples,
``RawNode`` children lists — and no reference cycles: reference counting frees them all. The
cyclic collector still runs every 700 new containers and walks the young ones, and every tenth
of those runs walks older ones too; measured in one process reading Chromium's 1,733-node page
in full, interleaved: 135.4 ms median (p90 198.7 ms) with the collector, 117.8 ms (p90 133.4
ms) without it — perf put 18–22 % of the reader's CPU in ``gc_collect_main`` — while Chromium,
answering the same calls, is the other half of the time (docs/benchmarks.md).

So a snapshot pauses the collector and it runs as before once no read is under way (reads
that overlap share one pause: a count, on the one event loop that reads). A read is bounded
(``snapshot.SNAPSHOT_TIMEOUT_S``), so the pause is too.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_reads = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the block; back as it was once the last overlapping block ends."""
    global _reads, _was_enabled
    if _reads == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _reads += 1
    try:
        yield
    finally:
        _reads -= 1
        if _reads == 0 and _was_enabled:
            gc.enable()
