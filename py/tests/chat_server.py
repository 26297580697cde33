"""A small OpenAI-compatible chat completions server on 127.0.0.1, for the tests of the summarizer.

It answers POST /v1/chat/completions the way a provider does, over real HTTP, so the tests go through the OpenAI
SDK, the network stack and the provider's error handling. What it answers is set per test (`mode`):

- "summaries": a canned summary of the quoted text (`canned_summary`, so a test can say what it expects);
- "error": HTTP 500 with an OpenAI error body;
- "not_json": HTTP 200 with a body that is not JSON;
- "no_choices": HTTP 200, a JSON object with no choices;
- "empty": a completion whose text is empty;
- "echo": the quoted text back, unshortened;
- "slow": a canned summary after `delay` seconds.

Every request body it received is kept in `requests`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "canned-summarizer-1"
_QUOTED = re.compile(r"<(memory|turns)>\n(.*?)\n</\1>", re.S)


def quoted_text(message: str) -> str:
    """The memory or the turns a summarizer request quotes."""
    found = _QUOTED.search(message)
    return found.group(2) if found else message


def canned_summary(message: str, words: int = 8) -> str:
    """What the server answers to a user message: a tag of the message and the first words it quotes."""
    digest = hashlib.sha256(message.encode("utf-8")).hexdigest()[:8]
    head = " ".join(quoted_text(message).split()[:words])
    return f"Canned summary {digest}: {head}."


class ChatServer:
    def __init__(self) -> None:
        self.mode = "summaries"
        self.delay = 5.0
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet: the tests report what matters
                return

            def do_POST(self) -> None:  # noqa: N802 (the http.server name)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                server.requests.append(body)
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                mode = server.mode
                if mode == "error":
                    return self._send(500, {"error": {"message": "the model is overloaded", "type": "server_error"}})
                if mode == "not_json":
                    return self._send_raw(200, b"<html>upstream proxy says hello</html>", "application/json")
                if mode == "no_choices":
                    return self._send(200, {"id": "x", "object": "chat.completion", "model": MODEL})
                if mode == "slow":
                    time.sleep(server.delay)
                message = body["messages"][-1]["content"]
                text = {"empty": "", "echo": quoted_text(message)}.get(mode, canned_summary(message))
                self._send(200, {
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": 0,
                    "model": body.get("model", MODEL),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                self._send_raw(status, json.dumps(payload).encode("utf-8"), "application/json")

            def _send_raw(self, status: int, data: bytes, content_type: str) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting (a timeout test)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # a short poll: stopping the server waits for the loop to notice, once per test
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
