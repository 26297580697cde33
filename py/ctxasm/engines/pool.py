"""A small connection pool over any engine: connections are opened on demand up to `size`, handed out one per
caller, and given back clean (rolled back: a tenant set in a transaction never outlives it). A connection the
server dropped is closed and replaced. The same pool serves threads and asyncio tasks (they borrow through a
worker thread).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any, Iterator

from ctxasm.errors import DatabaseUnavailable


class ConnectionPool:
    def __init__(self, connect: Callable[[], Any], size: int = 4, timeout: float = 30.0):
        if size < 1:
            raise ValueError("size must be at least 1")
        self._connect, self.size, self.timeout = connect, size, timeout
        self._idle: queue.LifoQueue[Any] = queue.LifoQueue()
        self._opened = 0
        self._lock = threading.Lock()
        self._closed = False

    def _take(self) -> Any:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            if self._opened < self.size:
                self._opened += 1
                try:
                    return self._connect()
                except BaseException:
                    self._opened -= 1
                    raise
        try:
            return self._idle.get(timeout=self.timeout)
        except queue.Empty:
            raise DatabaseUnavailable(f"no pooled connection came free within {self.timeout:.0f} s "
                                      f"({self.size} in use)") from None

    def _discard(self, connection: Any) -> None:
        with self._lock:
            self._opened -= 1
        try:
            connection.close()
        except Exception:  # already gone: nothing to release
            pass

    @contextmanager
    def connection(self) -> Iterator[Any]:
        if self._closed:
            raise DatabaseUnavailable("the connection pool is closed")
        connection = self._take()
        try:
            yield connection
        except BaseException:
            self._give_back(connection)
            raise
        self._give_back(connection)

    def _give_back(self, connection: Any) -> None:
        if self._closed or _is_closed(connection):
            self._discard(connection)
            return
        try:
            connection.rollback()
        except Exception:  # a broken connection is not reused
            self._discard(connection)
            return
        self._idle.put(connection)

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                connection = self._idle.get_nowait()
            except queue.Empty:
                return
            self._discard(connection)


def _is_closed(connection: Any) -> bool:
    closed = getattr(connection, "closed", False)  # psycopg: a bool attribute
    if isinstance(closed, bool):
        return closed
    try:  # python-oracledb: is_healthy() says whether the connection is usable
        return not connection.is_healthy()
    except Exception:
        return False
