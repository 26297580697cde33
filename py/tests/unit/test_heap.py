"""A long-running process settles its start-up heap: what is alive then is frozen out of later full collections."""

from __future__ import annotations

import gc

from ctxasm.interfaces.heap import settle_startup_heap


def test_settling_freezes_what_is_alive_and_a_full_collection_then_walks_only_what_came_after():
    kept = [[i] for i in range(1000)]  # containers the collector tracks
    try:
        frozen = settle_startup_heap()
        assert frozen == gc.get_freeze_count() >= len(kept)
        # the frozen objects are out of the collector's view: a list made before settling is not among the
        # tracked objects a collection walks, one made after it is
        tracked = {id(o) for o in gc.get_objects()}
        assert id(kept[0]) not in tracked
        after = [0]
        assert id(after) in {id(o) for o in gc.get_objects()}
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
