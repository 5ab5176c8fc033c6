"""A small OpenAI-compatible server on 127.0.0.1 for the real-client recording tests.

It speaks just enough of Chat Completions (``POST /v1/chat/completions``) and Responses
(``POST /v1/responses``), streaming (server-sent events) and not, for a two-turn tool
conversation: asked about a sum, it first calls the ``add`` tool; once the request holds
the tool's result, it answers with text that quotes it. It records every request (path,
headers, JSON body) so a test can check what reached the wire.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
RESPONSES_USAGE = {
    "input_tokens": 11,
    "output_tokens": 7,
    "total_tokens": 18,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens_details": {"reasoning_tokens": 0},
}
ARGUMENTS = '{"a": 2, "b": 3}'


def _tool_result(body: dict[str, Any]) -> str | None:
    """The tool result the request carries, if any (both APIs)."""
    for message in body.get("messages", []):  # chat completions
        if message.get("role") == "tool":
            return str(message.get("content"))
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            return str(item.get("output"))
    return None


class FakeOpenAI(ThreadingHTTPServer):
    """The server; ``requests`` lists (path, headers, body) of every request."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.counter = 0
        #: When True the text answer echoes the Authorization header (a leaky proxy).
        self.leak = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.counter}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append((self.path, dict(self.headers.items()), body))
        result = _tool_result(body)
        if result is not None and self.server.leak:
            result += f" (seen: {self.headers.get('authorization')})"
        stream = bool(body.get("stream"))
        if self.path.endswith("/chat/completions"):
            events = self._chat(result, stream)
        elif self.path.endswith("/responses"):
            events = self._responses(result, stream)
        else:
            self.send_error(404)
            return
        if not stream:
            self._send(200, "application/json", json.dumps(events[0]).encode())
            return
        chunks = []
        for name, payload in events:
            head = f"event: {name}\n" if name else ""
            chunks.append(f"{head}data: {json.dumps(payload)}\n\n")
        if self.path.endswith("/chat/completions"):
            chunks.append("data: [DONE]\n\n")
        self._send(200, "text/event-stream", "".join(chunks).encode())

    def _send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # -- chat completions ----------------------------------------------------------------

    def _chat(self, result: str | None, stream: bool) -> list[Any]:
        ident = self.server.next_id("chatcmpl")
        base = {"id": ident, "created": 0, "model": "fake-model"}
        if result is None:
            call = {"id": "call_add", "type": "function"}
            call["function"] = {"name": "add", "arguments": ARGUMENTS}  # type: ignore[assignment] # JSON
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": f"2 + 3 = {result}"}
            finish = "stop"
        if not stream:
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return [{**base, "object": "chat.completion", "choices": [choice], "usage": USAGE}]
        chunk = {**base, "object": "chat.completion.chunk"}
        if result is None:
            delta: dict[str, Any] = {"role": "assistant", "tool_calls": [{"index": 0, **call}]}
            deltas = [delta]
        else:
            text = message["content"]
            deltas = [{"role": "assistant", "content": text[:4]}, {"content": text[4:]}]
        events: list[Any] = [
            (None, {**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]})
            for d in deltas
        ]
        events.append(
            (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        )
        events.append((None, {**chunk, "choices": [], "usage": USAGE}))
        return events

    # -- responses ---------------------------------------------------------------------------

    def _responses(self, result: str | None, stream: bool) -> list[Any]:
        ident = self.server.next_id("resp")
        if result is None:
            item: dict[str, Any] = {
                "type": "function_call",
                "id": "fc_add",
                "call_id": "call_add",
                "name": "add",
                "arguments": ARGUMENTS,
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "id": "msg_answer",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": f"2 + 3 = {result}", "annotations": []}
                ],
            }
        response = {
            "id": ident,
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": "fake-model",
            "output": [item],
            "usage": RESPONSES_USAGE,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        if not stream:
            return [response]
        started = {**response, "status": "in_progress", "output": [], "usage": None}
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"response": started}),
        ]
        if result is None:
            events += [
                (
                    "response.output_item.added",
                    {"output_index": 0, "item": {**item, "arguments": ""}},
                ),
                (
                    "response.function_call_arguments.delta",
                    {"output_index": 0, "item_id": "fc_add", "delta": ARGUMENTS},
                ),
                (
                    "response.function_call_arguments.done",
                    {"output_index": 0, "item_id": "fc_add", "arguments": ARGUMENTS},
                ),
            ]
        else:
            text = item["content"][0]["text"]
            events += [
                (
                    "response.output_item.added",
                    {"output_index": 0, "item": {**item, "content": []}},
                ),
                *(
                    (
                        "response.output_text.delta",
                        {
                            "output_index": 0,
                            "item_id": "msg_answer",
                            "content_index": 0,
                            "delta": part,
                            "logprobs": [],
                        },
                    )
                    for part in (text[:4], text[4:])
                ),
            ]
        events += [
            ("response.output_item.done", {"output_index": 0, "item": item}),
            ("response.completed", {"response": response}),
        ]
        return [
            (name, {"type": name, "sequence_number": n, **payload})
            for n, (name, payload) in enumerate(events)
        ]


@contextmanager
def running() -> Iterator[FakeOpenAI]:
    """Start the server on a free port in a thread; stop it (and free the port) after."""
    server = FakeOpenAI()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
