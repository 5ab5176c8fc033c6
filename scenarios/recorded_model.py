"""The real model of ``recorded_model.loopsim.yaml`` (its ``model: recorded_model:calc``).

CI never calls :func:`calc`: the scenario replays ``cassettes/recorded_model.transcript.json``.
Recording it again (``loopsim run --loopsim-record-mode=all scenarios/recorded_model.loopsim.yaml``)
calls it once for the agent:

* with ``LOOPSIM_EXAMPLE_BASE_URL`` set (an OpenAI-compatible server; the committed
  cassette comes from the test suite's fake one, ``tests/openai_fake.py``) and
  agent-framework-openai installed, it returns agent_framework's
  ``OpenAIChatCompletionClient`` talking to that server (key: ``OPENAI_API_KEY``);
* otherwise a loopsim ``FunctionChatClient`` stands in for the model, answering as that
  server does: first a call of ``add(2, 3)``, then the sum it got back.

Nothing here runs at import: importing the module needs neither a key nor the network.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import loopsim


def _stand_in(messages: Sequence[loopsim.Message], _options: Any) -> loopsim.ChatResponse:
    results = [
        content.result
        for message in messages
        for content in message.contents
        if isinstance(content, loopsim.FunctionResultContent)
    ]
    if results:
        return _served(loopsim.Message.assistant(f"2 + 3 = {results[-1]}"), "stop")
    call = loopsim.FunctionCallContent(
        call_id="call_add", name="add", arguments=json.loads('{"a": 2, "b": 3}')
    )
    return _served(loopsim.Message("assistant", [call]), "tool_calls")


def _served(message: loopsim.Message, finish_reason: str) -> loopsim.ChatResponse:
    """``message`` answered as the server answers: why it stopped, and which model."""
    return loopsim.ChatResponse([message], finish_reason=finish_reason, model="fake-model")


def calc(name: str) -> Any:
    """The chat client agent ``name`` talks to when the cassette is recorded."""
    base_url = os.environ.get("LOOPSIM_EXAMPLE_BASE_URL")
    if base_url:
        from agent_framework_openai import OpenAIChatCompletionClient  # noqa: PLC0415

        return OpenAIChatCompletionClient(
            model="gpt-4o-mini", api_key=os.environ["OPENAI_API_KEY"], base_url=base_url
        )
    return loopsim.FunctionChatClient(_stand_in, name=name)
