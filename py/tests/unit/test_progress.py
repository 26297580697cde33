"""ctxasm.progress: a bar on a terminal, silence elsewhere."""

from __future__ import annotations

import io

import pytest

from ctxasm.progress import Progress, is_terminal, progress


class FakeStream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_silent_when_not_a_terminal():
    stream = FakeStream(tty=False)
    with progress("loading", total=3, stream=stream) as tick:
        for _ in range(3):
            tick()
    assert tick.done == 3
    assert stream.getvalue() == ""


def test_bar_on_a_terminal():
    stream = FakeStream(tty=True)
    clock = Clock()
    with progress("loading", total=4, stream=stream, clock=clock) as tick:
        tick()
        clock.now += 1
        tick(3)
    out = stream.getvalue()
    assert out.startswith("\rloading  [")
    assert out.endswith("\n") and out.count("\n") == 1
    final = out.rstrip("\n").split("\r")[-1]
    assert "[" + "#" * 28 + "]" in final
    assert "4/4" in final and "100%" in final and "1.0s" in final
    assert "1/4" in out and " 25%" in out


def test_redraws_are_throttled_but_the_end_is_always_drawn():
    stream = FakeStream(tty=True)
    clock = Clock()
    with progress("embedding", total=1000, stream=stream, clock=clock, min_interval=0.5) as tick:
        for _ in range(1000):
            tick()  # the clock does not move: only the first tick, the last tick and close draw
    draws = stream.getvalue().count("\r")
    assert draws == 3
    assert stream.getvalue().rstrip("\n").split("\r")[-1].startswith("embedding  [" + "#" * 28 + "]  1000/1000")


def test_without_a_total_it_counts():
    stream = FakeStream(tty=True)
    with progress("rows", stream=stream, clock=Clock()) as tick:
        tick(5)
        tick(7)
    final = stream.getvalue().rstrip("\n").split("\r")[-1]
    assert final.startswith("rows  12  ")
    assert "[" not in final


def test_line_is_ended_when_the_block_raises():
    stream = FakeStream(tty=True)
    with pytest.raises(RuntimeError):
        with progress("loading", total=10, stream=stream, clock=Clock()) as tick:
            tick()
            raise RuntimeError("boom")
    assert stream.getvalue().endswith("\n")
    assert "1/10" in stream.getvalue()


def test_shorter_line_overwrites_a_longer_one():
    stream = FakeStream(tty=True)
    clock = Clock()
    bar = Progress("x", None, stream=stream, clock=clock, min_interval=0)
    bar.done = 123456
    bar._draw(clock.now)  # "x  123456  0.0s" ...
    bar.done = 2
    bar._draw(clock.now)  # ... is longer than "x  2  0.0s", which must blank out the rest
    first, second = stream.getvalue().split("\r")[1:]
    assert len(second) == len(first) and second.rstrip().startswith("x  2  ")


def test_explicit_enabled_and_broken_streams():
    stream = FakeStream(tty=False)
    with progress("forced", total=1, stream=stream, enabled=True, clock=Clock()) as tick:
        tick()
    assert "1/1" in stream.getvalue()

    class Closed:
        def isatty(self):
            raise ValueError("I/O operation on closed file")

    assert is_terminal(Closed()) is False
    assert is_terminal(object()) is False
