"""The check a fake's answer passes when it holds hosted tool calls.

A real service runs a hosted tool itself and answers with the call and its result
together, and only for a hosted tool the request offered. A fake's answer that breaks
either rule is a script mistake: it fails loudly (:class:`~loopsim.HostedToolError`)
instead of reaching the agent as a call nobody answers.
"""

from __future__ import annotations

from typing import NoReturn

from .. import _trace
from .._errors import HostedToolError
from .._messages import (
    ChatRequest,
    ChatResponse,
    HostedTool,
    HostedToolCallContent,
    HostedToolResultContent,
)

__all__ = ["check_hosted_calls", "emit_hosted"]


def check_hosted_calls(
    response: ChatResponse, request: ChatRequest, *, client: str, turn: int
) -> None:
    """Raise :class:`~loopsim.HostedToolError` for the first hosted call (or result) of
    ``response`` that a service could not have sent in answer to ``request``."""
    calls: dict[str, HostedToolCallContent] = {}
    results: dict[str, HostedToolResultContent] = {}
    for message in response.messages:
        for content in message.contents:
            if isinstance(content, HostedToolCallContent):
                if content.call_id in calls:
                    _fail(
                        "two hosted calls of one answer share this call id; give each its own",
                        content,
                        request,
                        client,
                        turn,
                    )
                calls[content.call_id] = content
            elif isinstance(content, HostedToolResultContent):
                results[content.call_id] = content
    if not calls and not results:
        return
    offered = {t.name for t in request.options.tools if isinstance(t, HostedTool)}
    for call in calls.values():
        if call.tool not in offered:
            names = ", ".join(sorted(offered)) or "none"
            _fail(
                f"the request offered no such hosted tool (hosted tools offered: {names}); "
                "offer it to the agent (a vendor client's get_..._tool()) or script a "
                "function call instead",
                call,
                request,
                client,
                turn,
            )
        result = results.get(call.call_id)
        if result is None:
            _fail(
                "the script never says what the hosted tool returned: put a "
                "HostedToolResultContent with this call id in the same answer "
                "(loopsim.hosted_call(..., result=...); in a scenario, `result:`)",
                call,
                request,
                client,
                turn,
            )
        if result.tool != call.tool:
            _fail(
                f"its result names another hosted tool ({result.tool!r})",
                call,
                request,
                client,
                turn,
            )
    for result in results.values():
        if result.call_id not in calls:
            _fail(
                "a hosted result for a call this answer does not make; put the "
                "HostedToolCallContent beside it",
                result,
                request,
                client,
                turn,
            )


def _fail(
    problem: str,
    content: HostedToolCallContent | HostedToolResultContent,
    request: ChatRequest,
    client: str,
    turn: int,
) -> NoReturn:
    trace = _trace.active()
    raise HostedToolError(
        problem,
        client=client,
        agent=request.options.agent_name,
        turn=turn,
        tool=content.tool,
        call_id=content.call_id,
        virtual_time=None if trace is None else trace.time(),
        seed=None if trace is None else trace.seed,
    )


def emit_hosted(agent: str | None, session: str | None, response: ChatResponse) -> None:
    """Record one ``hosted_tool`` event per hosted call of a model's answer (its tool,
    arguments and result), just before the ``model_response`` that holds it: the service
    ran the tool before it answered."""
    results: dict[str, HostedToolResultContent] = {}
    calls: list[HostedToolCallContent] = []
    for message in response.messages:
        for content in message.contents:
            if isinstance(content, HostedToolCallContent):
                calls.append(content)
            elif isinstance(content, HostedToolResultContent):
                results[content.call_id] = content
    for call in calls:
        result = results.get(call.call_id)
        _trace.emit(
            "hosted_tool",
            agent=agent,
            session=session,
            call_id=call.call_id,
            name=call.tool,
            arguments=call.arguments,
            result=None if result is None else result.result,
        )
