"""What a model request looks like, engine-neutral: the same program's requests on the
built-in engine and on agent_framework compare equal through these."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Shape = list[tuple[str, list[tuple[str, Any]]]]


def shape(messages: Any) -> Shape:
    """Role and (type, what identifies it) of every content: call ids, results, texts."""
    out: Shape = []
    for m in messages:
        contents: list[tuple[str, Any]] = []
        for c in m.contents:
            kind = str(c.type)
            if kind in ("function_call", "function_result"):
                contents.append((kind, c.call_id))
            elif kind == "text":
                contents.append((kind, c.text))
            else:
                contents.append((kind, None))
        out.append((str(m.role), contents))
    return out


def results(messages: Any) -> list[str]:
    """The function results among ``messages``, as text."""
    return [str(c.result) for m in messages for c in m.contents if c.type == "function_result"]


def answers_in(path: Path) -> list[str]:
    """The text of each model answer a transcript (cassette) file holds, in order."""
    events = json.loads(path.read_text(encoding="utf-8"))["events"]
    return [
        e["data"]["messages"][0]["contents"][0]["text"]
        for e in events
        if e["kind"] == "model_response"
    ]
