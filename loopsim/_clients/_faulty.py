"""Fault wrappers: a chat client or a tool that breaks when its fault rules say so."""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any

import anyio

from .. import _trace
from .._messages import (
    ChatOptions,
    ChatRequest,
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    Message,
    build_chat_response,
    text_message,
)
from ._base import split_into_updates
from ._faults import MODEL_FAULTS, TOOL_FAULTS, Fault, StreamCut, StreamCutError
from ._protocol import ChatClient

__all__ = ["FaultyChatClient", "faulty_tool", "model_fault", "model_faults", "tool_faults"]

#: The arguments a malformed tool call sends when its fault names none: a key no tool
#: declares, holding the start of a JSON text that never ends.
MALFORMED_ARGUMENTS = {"malformed": '{"unterminated'}
#: Kinds that take the model's own answer (and so use up a scripted turn).
_ANSWERING = ("stream_cut", "slow_first_token")


def _now() -> float:
    trace = _trace.active()
    return trace.time() if trace is not None else anyio.current_time()


def _checked(faults: Iterable[Fault], kinds: tuple[str, ...], what: str) -> list[Fault]:
    out = list(faults)
    for index, fault in enumerate(out):
        if not isinstance(fault, Fault):
            msg = f"faults[{index}] must be a loopsim.Fault, got {type(fault).__name__}"
            raise TypeError(msg)
        if fault.kind not in kinds:
            msg = (
                f"faults[{index}]: {fault.kind!r} is no {what} fault; "
                f"{what} faults are: {', '.join(kinds)}"
            )
            raise ValueError(msg)
    return out


def model_faults(faults: Iterable[Fault]) -> list[Fault]:
    """``faults`` checked to be model-call faults."""
    return _checked(faults, MODEL_FAULTS, "model")


def tool_faults(faults: Iterable[Fault]) -> list[Fault]:
    """``faults`` checked to be tool faults."""
    return _checked(faults, TOOL_FAULTS, "tool")


class _Rules:
    """Which rule fires on each call: the first whose ``when`` holds and whose ``times``
    is not used up."""

    def __init__(self, faults: list[Fault], label: str) -> None:
        self.faults = faults
        self.label = label
        self.calls = 0
        self.fired = [0] * len(faults)

    def next_call(self) -> Fault | None:
        self.calls += 1
        now = _now()
        for index, fault in enumerate(self.faults):
            if fault.times is not None and self.fired[index] >= fault.times:
                continue
            if fault.when is None or fault.when.holds(self.calls, now, f"{self.label}#{index}"):
                self.fired[index] += 1
                return fault
        return None


def _reply(text: str | None) -> ChatResponse:
    message = text_message("assistant", text or "", None, _trace.next_id("msg"))
    return build_chat_response([message], response_id=_trace.next_id("resp"))


def _emit(fault: Fault, *, rule: bool, **where: Any) -> None:
    """The ``fault`` event; a script's fault carries its options (a replay plays it again)."""
    if _trace.observed():
        if rule:
            _trace.emit("fault", **where, fault=fault.kind, rule=True)
        else:
            _trace.emit("fault", **where, fault=fault.kind, options=fault.given)


async def model_fault(
    fault: Fault,
    *,
    model: str,
    answer: Callable[[], Awaitable[ChatResponse]] | None = None,
    rule: bool = False,
) -> ChatResponse:
    """Play ``fault`` as a model call: raise, wait, or return the faulty answer.

    ``answer`` is the model's own answer (a wrapper's inner client); without it (a script
    item) the fault's ``reply`` option stands in for it. A ``stream_cut`` raises
    :class:`StreamCut` carrying the answer, for the streaming caller to cut.
    """
    kind = fault.kind
    _emit(fault, rule=rule, agent=model)
    if kind in ("hang", "lost"):
        await anyio.sleep_forever()
    if kind == "timeout":
        await anyio.sleep(fault.after)
    if kind == "slow_first_token":
        await anyio.sleep(fault.delay)
    if kind in _ANSWERING:
        response = await answer() if answer is not None else _reply(fault.reply)
        if kind == "slow_first_token":
            return response
        error = fault.error(model=model)
        assert isinstance(error, StreamCutError)  # noqa: S101 - the kind's error
        raise StreamCut(response, error)
    if kind == "malformed_tool_call":
        arguments = MALFORMED_ARGUMENTS if fault.arguments is None else fault.arguments
        call = FunctionCallContent(
            call_id=_trace.next_id("fault-call"), name=fault.name, arguments=dict(arguments)
        )
        message = Message("assistant", [call], message_id=_trace.next_id("msg"))
        return build_chat_response([message], response_id=_trace.next_id("resp"))
    if kind == "empty":
        message = Message("assistant", [], message_id=_trace.next_id("msg"))
        return build_chat_response([message], response_id=_trace.next_id("resp"))
    raise fault.error(model=model)


class FaultyChatClient:
    """``inner`` (any chat client) with fault rules: each call, the first rule that fires
    replaces the model's answer; calls no rule takes reach ``inner`` unchanged.

    A fault that fails or answers on its own (``rate_limit``, ``malformed_tool_call``...)
    does not reach ``inner``, so a scripted turn is kept for the retry; ``stream_cut``
    and ``slow_first_token`` take the model's own answer (the turn is used up).
    ``.requests`` lists every request, faulted ones too; ``.faulted`` the call numbers
    (1-based) and the fault each got.

    Example:
        >>> import loopsim
        >>> inner = loopsim.ScriptedChatClient(["ok"])
        >>> client = loopsim.FaultyChatClient(
        ...     inner, [loopsim.Fault("server_error", status=503, times=2)]
        ... )
        >>> async def main():
        ...     for attempt in range(3):
        ...         try:
        ...             return (await client.get_response([loopsim.Message.user("hi")])).text
        ...         except loopsim.ServerError:
        ...             pass
        >>> loopsim.simulate(main), [n for n, _ in client.faulted]
        ('ok', [1, 2])
    """

    def __init__(
        self, inner: ChatClient, faults: Iterable[Fault], *, name: str | None = None
    ) -> None:
        if not isinstance(inner, ChatClient):
            msg = f"FaultyChatClient needs a loopsim ChatClient, got {type(inner).__name__}"
            raise TypeError(msg)
        self.inner = inner
        self.name: str = name or str(getattr(inner, "name", None) or "faulty")
        self.faults = model_faults(faults)
        self._rules = _Rules(self.faults, self.name)
        self.requests: list[ChatRequest] = []
        self.faulted: list[tuple[int, Fault]] = []

    def __repr__(self) -> str:
        return f"FaultyChatClient({self.inner!r}, faults={len(self.faults)})"

    def _fault(self, messages: Sequence[Message], options: ChatOptions | None) -> Fault | None:
        self.requests.append(ChatRequest(messages, options or ChatOptions()))
        fault = self._rules.next_call()
        if fault is not None:
            self.faulted.append((self._rules.calls, fault))
        return fault

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        """Answer through ``inner`` unless a fault rule fires."""
        fault = self._fault(messages, options)
        if fault is None:
            return await self.inner.get_response(messages, options=options)
        try:
            return await model_fault(
                fault,
                model=self.name,
                answer=functools.partial(self.inner.get_response, messages, options=options),
                rule=True,
            )
        except StreamCut as cut:
            raise cut.error from None

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Stream through ``inner`` unless a fault rule fires (a cut streams part of it)."""
        fault = self._fault(messages, options)
        if fault is None:
            async for update in self.inner.get_streaming_response(messages, options=options):
                yield update
            return
        if fault.kind in ("stream_cut", "slow_first_token"):
            _emit(fault, rule=True, agent=self.name)
        if fault.kind == "stream_cut":
            stream = self.inner.get_streaming_response(messages, options=options)
            sent = 0
            try:
                async for update in stream:
                    if sent >= fault.after:
                        break
                    sent += 1
                    yield update
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
            raise fault.error(model=self.name)
        if fault.kind == "slow_first_token":
            await anyio.sleep(fault.delay)
            async for update in self.inner.get_streaming_response(messages, options=options):
                yield update
            return
        response = await model_fault(fault, model=self.name, rule=True)
        for update in split_into_updates(response):
            yield update


def faulty_tool(
    fn: Callable[..., Any], faults: Iterable[Fault], *, name: str | None = None
) -> Callable[..., Any]:
    """``fn`` (a tool function, sync or async) with fault rules, as an async function of
    the same signature (so either engine's ``tool()`` builds the same tool from it).

    Kinds: ``error`` (raise :class:`~loopsim.ToolFaultError`), ``delay`` (wait, then
    run), ``hang`` (never return) and ``wrong_result`` (return ``result`` instead: a
    well-typed but wrong answer). Calls no rule takes run ``fn`` unchanged.

    Example:
        >>> import loopsim
        >>> def quote(symbol: str) -> float:
        ...     return 420.5
        >>> flaky = loopsim.faulty_tool(quote, [loopsim.Fault("error", times=2)])
        >>> async def main():
        ...     results = []
        ...     for _ in range(3):
        ...         try:
        ...             results.append(await flaky("MSFT"))
        ...         except loopsim.ToolFaultError:
        ...             results.append("failed")
        ...     return results
        >>> loopsim.simulate(main)
        ['failed', 'failed', 420.5]
    """
    if not callable(fn):
        msg = f"faulty_tool needs a callable, got {type(fn).__name__}"
        raise TypeError(msg)
    label = name or str(getattr(fn, "__name__", "tool"))
    rules = _Rules(tool_faults(faults), label)

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        fault = rules.next_call()
        if fault is not None:
            _emit(fault, rule=True, tool=label)
            if fault.kind == "hang":
                await anyio.sleep_forever()
            if fault.kind == "wrong_result":
                return fault.result
            if fault.kind == "error":
                raise fault.error(model=label)
            await anyio.sleep(fault.delay)  # "delay": then the tool runs
        result = fn(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    wrapper.faults = rules.faults  # type: ignore[attr-defined] # inspectable, like .requests
    return wrapper
