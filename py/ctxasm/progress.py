"""Progress on long work: a bar on stderr when stderr is a terminal, nothing at all otherwise.

    with progress("loading corpus", total=len(files)) as tick:
        for path in files:
            load(path)
            tick()

`tick(n)` counts n more units of work. Without a total it shows a running count instead of a bar. Output is
redrawn in place with a carriage return, at most every `min_interval` seconds (and always at the end), so a
tight loop of ticks costs almost nothing; the finished line is left on screen. When the stream is not a
terminal (a pipe, a log file, CI) nothing is written, so logs stay clean.

Code that may or may not run under a bar takes an optional `ProgressCallback` (for example
`on_progress: ProgressCallback | None = None`) and calls it once per unit of work.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

ProgressCallback = Callable[[int], None]

BAR_WIDTH = 28


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed or detached stream
        return False


def _elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"


class Progress:
    """One progress line. Call it to count work; `close()` draws the final state and ends the line."""

    def __init__(self, label: str, total: int | None = None, *, stream: TextIO | None = None,
                 enabled: bool | None = None, min_interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic):
        self.label = label
        self.total = total if total is None or total >= 0 else 0
        self.stream = sys.stderr if stream is None else stream
        self.enabled = is_terminal(self.stream) if enabled is None else enabled
        self.min_interval = min_interval
        self.clock = clock
        self.done = 0
        self.started = clock()
        self._last_draw: float | None = None
        self._last_width = 0
        self._closed = False

    def __call__(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled or self._closed:
            return
        now = self.clock()
        finished = self.total is not None and self.done >= self.total
        if finished or self._last_draw is None or now - self._last_draw >= self.min_interval:
            self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The text of the progress line (without the carriage return)."""
        elapsed = _elapsed((self.clock() if now is None else now) - self.started)
        if not self.total:
            return f"{self.label}  {self.done}  {elapsed}"
        fraction = min(1.0, self.done / self.total)
        filled = int(round(fraction * BAR_WIDTH))
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        return f"{self.label}  [{bar}]  {self.done}/{self.total}  {fraction:4.0%}  {elapsed}"

    def _draw(self, now: float) -> None:
        text = self.line(now)
        padding = " " * max(0, self._last_width - len(text))
        self.stream.write("\r" + text + padding)
        self.stream.flush()
        self._last_draw = now
        self._last_width = len(text)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.enabled:
            self._draw(self.clock())
            self.stream.write("\n")
            self.stream.flush()


@contextmanager
def progress(label: str, total: int | None = None, *, stream: TextIO | None = None,
             enabled: bool | None = None, min_interval: float = 0.1,
             clock: Callable[[], float] = time.monotonic) -> Iterator[Progress]:
    """A `Progress` for the duration of the block; the line is ended even when the block raises, so an error
    message that follows starts on a line of its own."""
    bar = Progress(label, total, stream=stream, enabled=enabled, min_interval=min_interval, clock=clock)
    try:
        yield bar
    finally:
        bar.close()
