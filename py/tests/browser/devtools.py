"""A headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: commands on the
child's fd 3, answers and events on its fd 4, each message JSON ended by a NUL byte). No web socket, no driver
package: the browser test needs to open a page, measure its elements and take a screenshot, nothing more.

Evaluation through the protocol is not subject to the page's Content-Security-Policy, so the page under test
stays exactly as the inspector wrote it (no script of ours is added to it).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
#: Long enough for a cold start on a busy machine; a page of ours loads from a file.
TIMEOUT_SECONDS = 120


class DevToolsError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one tab; use as a context manager."""

    def __init__(self, width: int, height: int):
        self.width, self.height = width, height
        self._profile = tempfile.TemporaryDirectory(prefix="ctxasm-chromium-")
        to_child, self._commands = os.pipe()
        self._answers, from_child = os.pipe()

        def on_fds_3_and_4() -> None:
            # Move both ends out of the way first, so neither is overwritten when the other lands on 3 or 4.
            high_in, high_out = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10), fcntl.fcntl(from_child, fcntl.F_DUPFD, 10)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        self._process = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self._profile.name}",
             f"--window-size={width},{height}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=on_fds_3_and_4, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._session: str | None = None

    def __enter__(self) -> Browser:
        target = self.send("Target.createTarget", {"url": "about:blank"}, browser_level=True)["targetId"]
        self._session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                  browser_level=True)["sessionId"]
        self.send("Page.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.send("Browser.close", browser_level=True)
        except (DevToolsError, OSError):
            pass
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._commands)
        os.close(self._answers)
        if self._process.stderr:
            self._process.stderr.close()
        self._profile.cleanup()

    def _message(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                error = self._process.stderr.read().decode(errors="replace")[-2000:] if self._process.stderr else ""
                raise DevToolsError(f"chromium closed the DevTools pipe: {error}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict[str, Any] | None = None, *, browser_level: bool = False) -> dict:
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if not browser_level:
            command["sessionId"] = self._session
        os.write(self._commands, json.dumps(command).encode() + b"\0")
        while True:
            message = self._message()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise DevToolsError(f"{method}: {message['error']}")
                return message.get("result") or {}
            self._events.append(message)

    def _wait_for(self, event: str) -> dict[str, Any]:
        for index, message in enumerate(self._events):
            if message.get("method") == event:
                return self._events.pop(index)
        while True:
            message = self._message()
            if message.get("method") == event:
                return message
            self._events.append(message)

    def open(self, url: str) -> None:
        self._events.clear()
        navigated = self.send("Page.navigate", {"url": url})
        if navigated.get("errorText"):
            raise DevToolsError(f"Page.navigate {url}: {navigated['errorText']}")
        self._wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serializable values only)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise DevToolsError(f"evaluate: {result['exceptionDetails'].get('text')} "
                                f"{(result['exceptionDetails'].get('exception') or {}).get('description')}")
        return (result.get("result") or {}).get("value")

    def screenshot(self, path: Path, height: int | None = None) -> Path:
        """A PNG of the page's top `height` CSS pixels (the viewport's height by default) at its full width."""
        clip = {"x": 0, "y": 0, "width": self.width, "height": height or self.height, "scale": 1}
        shot = self.send("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
