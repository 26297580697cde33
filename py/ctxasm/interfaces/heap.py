"""The heap of a long-running ctxasm process (the MCP server, `summarize-threads --every`).

Python's cyclic collector now and then runs a full collection, which walks every tracked object of the process:
after start-up that is about 120,000 of them (modules, classes, schemas, the clients' and models' objects), and one
full collection took 85 to 95 ms on the test host. It runs whenever enough objects have outlived the younger
collections, so in a served process it lands in the middle of some window and adds its pause to that window's
latency. What start-up made lives as long as the process, so it is moved out of the collector's view once, after
start-up: later full collections walk only what was made since.
"""

from __future__ import annotations

import gc


def settle_startup_heap() -> int:
    """Collect once, then freeze what is left (gc.freeze): the objects start-up made are never walked, nor freed,
    again. Call it once the process has imported and built what it serves with. Returns how many objects are
    frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
