"""Agent: the chat agent with its function-invocation loop, providers and middleware."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from .. import _trace
from .._clients import ChatClient
from .._messages import (
    AGENT_RESPONSE_FIELDS,
    AgentResponse,
    AgentResponseUpdate,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FunctionApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedTool,
    Message,
    MessagesInput,
    build_agent_response,
    build_agent_update,
    message_update,
    normalize_messages,
)
from .._messages._hosted import is_hosted_declaration
from .._wording import WORDING, say
from ._base import BaseAgent, ResponseStream, RunOptions
from ._context import (
    AgentMiddleware,
    AgentRunContext,
    ContextProvider,
    MiddlewareTermination,
    SessionContext,
)
from ._run_state import RunState, approval_requests
from ._session import AgentSession, HistoryStoreKind
from ._tools import FunctionTool, ToolArgumentError

__all__ = ["Agent"]

T = TypeVar("T")
#: upstream's ``DEFAULT_MAX_ITERATIONS`` of its function invocation configuration
DEFAULT_MAX_TOOL_ROUNDS = 40
#: After this many tool rounds in a row with a failed call, the next request is the last
#: one, with ``tool_choice="none"`` (upstream's ``max_consecutive_errors_per_request``).
DEFAULT_MAX_CONSECUTIVE_TOOL_ERRORS = 3


_TOOL_LOOP_KEYS = {"max_iterations": DEFAULT_MAX_TOOL_ROUNDS}
_TOOL_LOOP_KEYS["max_consecutive_errors_per_request"] = DEFAULT_MAX_CONSECUTIVE_TOOL_ERRORS


def _tool_loop(config: Mapping[str, Any]) -> tuple[int, int]:
    """``(max_iterations, max_consecutive_errors_per_request)`` of an upstream-style
    function invocation configuration (the two keys loopsim simulates)."""
    unknown = sorted(set(config) - set(_TOOL_LOOP_KEYS))
    if unknown:
        msg = (
            "function_invocation_configuration: loopsim supports "
            f"{', '.join(_TOOL_LOOP_KEYS)} only, got {', '.join(map(repr, unknown))}"
        )
        raise ValueError(msg)
    values = []
    for key, default in _TOOL_LOOP_KEYS.items():
        value = config.get(key, default)
        least = 1 if key == "max_iterations" else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            msg = f"function_invocation_configuration: {key} must be >= {least}, got {value!r}"
            raise ValueError(msg)
        values.append(value)
    return values[0], values[1]


def _tool_text(value: Any) -> Any:
    """A tool's return value as the model reads it, as upstream's ``parse_result`` makes
    it: nothing is empty text, text stays text, anything else becomes its JSON (made
    safe first: no NaN, no memory address; see :func:`_json_safe`)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    safe = _json_safe(value)
    return safe if isinstance(safe, str) else json.dumps(safe)


def _json_safe(value: Any) -> Any:
    """A tool's return value as JSON data, the same in every run (and in its replay).

    JSON data stays as it is; NaN and the infinities (which JSON lacks, and NaN equals
    nothing, not even a replay of itself) become the texts ``NaN``, ``Infinity`` and
    ``-Infinity``; anything else becomes its ``str()``, except that the default
    ``<Foo object at 0x…>`` (a memory address) becomes ``<Foo object>``.
    """
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return _jsonable(value, depth=0)
    return value


def _jsonable(value: Any, depth: int) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if depth < 32:
        if isinstance(value, (list, tuple)):
            return [_jsonable(item, depth + 1) for item in value]
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return {key: _jsonable(item, depth + 1) for key, item in value.items()}
    kind = type(value)
    if not any("__str__" in vars(c) or "__repr__" in vars(c) for c in kind.__mro__[:-1]):
        return f"<{kind.__qualname__} object>"
    return str(value)


class Agent(BaseAgent):
    """The chat agent: sends history + new messages to a chat client, runs the tools the
    model asks for, and calls the client again until it answers without tool calls.

    Shaped like the upstream Python ``Agent`` so the seeds' samples run with only the
    import line changed. A tool with ``approval_mode="always_require"`` is not run: the
    response carries a :class:`~loopsim.FunctionApprovalRequestContent` instead and the
    run ends; send a :class:`~loopsim.FunctionApprovalResponseContent` in a later run to
    run (or reject) it. A tool that raises, or is unknown, becomes an error result the
    model sees.

    The tool loop is capped as upstream caps it: at most
    ``function_invocation_configuration["max_iterations"]`` model turns with tools offered
    in one run (default 40, upstream's ``DEFAULT_MAX_ITERATIONS``), then one last request
    lists them with ``tool_choice="none"``; reaching the cap emits a ``tool_round_limit``
    event.
    ``max_tool_rounds`` is the same setting under loopsim's older name.

    Example:
        >>> import loopsim
        >>> @loopsim.tool
        ... def add(a: int, b: int) -> int:
        ...     return a + b
        >>> client = loopsim.ScriptedChatClient([
        ...     loopsim.Message("assistant", [loopsim.FunctionCallContent(
        ...         call_id="c1", name="add", arguments={"a": 2, "b": 3})]),
        ...     "2 + 3 = 5",
        ... ])
        >>> agent = loopsim.Agent(client, name="calc", tools=[add])
        >>> loopsim.simulate(agent.run, "what is 2 + 3?").text
        '2 + 3 = 5'
        >>> client.requests[1].messages[-1].contents[0].result  # the text the model reads
        '5'
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        name: str | None = None,
        instructions: str | None = None,
        tools: Sequence[FunctionTool | Callable[..., Any]] = (),
        context_providers: Sequence[ContextProvider] = (),
        middleware: Sequence[AgentMiddleware] = (),
        description: str | None = None,
        id: str | None = None,
        history_store: HistoryStoreKind = "in_memory",
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        function_invocation_configuration: Mapping[str, Any] | None = None,
        max_consecutive_tool_errors: int = DEFAULT_MAX_CONSECUTIVE_TOOL_ERRORS,
        default_options: RunOptions | None = None,
    ) -> None:
        super().__init__(name=name, id=id, description=description, history_store=history_store)
        if client is None or not hasattr(client, "get_response"):
            msg = f"client must be a chat client (with get_response), got {type(client).__name__}"
            raise TypeError(msg)
        if function_invocation_configuration is not None:
            max_tool_rounds, max_consecutive_tool_errors = _tool_loop(
                function_invocation_configuration
            )
        if max_tool_rounds < 1:
            msg = f"max_tool_rounds must be >= 1, got {max_tool_rounds}"
            raise ValueError(msg)
        self.client = client
        self.instructions = instructions
        self.tools: list[FunctionTool] = [
            t if isinstance(t, FunctionTool) else _tool_of(t) for t in tools
        ]
        self.context_providers: list[ContextProvider] = list(context_providers)
        self.middleware: list[AgentMiddleware] = list(middleware)
        if max_consecutive_tool_errors < 0:
            msg = f"max_consecutive_tool_errors must be >= 0, got {max_consecutive_tool_errors}"
            raise ValueError(msg)
        self.max_tool_rounds = max_tool_rounds
        self.max_consecutive_tool_errors = max_consecutive_tool_errors
        #: upstream's ``default_options``: run options every run starts from (a run's own
        #: options win key by key)
        self.default_options: dict[str, Any] = dict(default_options or {})
        self._label = name or self.id
        #: a harness agent persists history after every model call, as upstream's
        #: per-service-call history persistence does: providers' context messages reach
        #: the first model call of a run only; the session keeps the input as the first
        #: call was sent it (answers to approvals replaced by results, unnamed); approval
        #: answers and open requests in the history reach the model as loaded; and a
        #: streamed run keeps its messages as the model and tools made them (no
        #: author_name stamped, no approval request beside a call)
        self._per_service_call_history = False
        #: upstream adds an in-memory history provider to an agent on its first run with a
        #: session and no service-side conversation, and keeps it: from then on the agent
        #: keeps and replays a local history, even for a service-backed session
        self._keeps_local_history = False
        #: the simulated service in front of ``client`` for sessions of a ``service_*``
        #: history store, by store (see ``_service``)
        self._service_clients: dict[str, ChatClient] = {}

    def get_service(self, service_type: type[T]) -> T | None:
        """This agent, else the first context provider (then middleware) of that type."""
        if isinstance(self, service_type):
            return self
        for candidate in (*self.context_providers, *self.middleware):
            if isinstance(candidate, service_type):
                return candidate
        return None

    # -- entry points -------------------------------------------------------------------

    async def _run_response(
        self,
        messages: MessagesInput = None,
        *,
        session: AgentSession | None = None,
        options: RunOptions | None = None,
    ) -> AgentResponse:
        """Run once: providers, the model/tool loop, history, providers again."""
        if not self.middleware:
            # Without middleware the pipeline is the core run alone: no run context (only
            # middleware sees it), no copy of the freshly normalized input. Same order as
            # the pipeline: input and options are read before the session is made.
            input_messages = normalize_messages(messages)
            run_options = dict(options or {})
            given = session is not None
            if session is None:
                session = self.create_session()
            return await self._invoke_run(input_messages, session, run_options, given=given)
        context = AgentRunContext(
            self, normalize_messages(messages), session, dict(options or {}), stream=False
        )
        try:
            await self._pipeline(context, 0)
        except MiddlewareTermination:
            if context.result is None:
                return build_agent_response(
                    [], response_id=_trace.next_id("resp"), agent_id=self.id
                )
        result = context.result
        if type(result) is AgentResponse:  # the common case, before the ABC check below
            return result
        if isinstance(result, ResponseStream):
            return await result.get_final_response()
        if not isinstance(result, AgentResponse):
            got = type(result).__name__
            msg = f"agent {self._label!r}: middleware left no AgentResponse (got {got})"
            raise TypeError(msg)
        return result

    def run_stream(
        self,
        messages: MessagesInput = None,
        *,
        session: AgentSession | None = None,
        options: RunOptions | None = None,
    ) -> ResponseStream:
        """Run once, streaming updates; the merged final messages equal ``run``'s."""
        if not self.middleware:
            # The core stream itself (it makes the session when first iterated, as the
            # pipeline would), instead of a stream re-yielding a stream.
            return ResponseStream(
                self._invoke_stream(normalize_messages(messages), session, dict(options or {}))
            )
        context = AgentRunContext(
            self, normalize_messages(messages), session, dict(options or {}), stream=True
        )
        return ResponseStream(self._stream_through_pipeline(context))

    async def _stream_through_pipeline(
        self, context: AgentRunContext
    ) -> AsyncIterator[AgentResponseUpdate | AgentResponse]:
        try:
            await self._pipeline(context, 0)
        except MiddlewareTermination:
            if not isinstance(context.result, ResponseStream):
                if isinstance(context.result, AgentResponse):
                    yield context.result
                return
        result = context.result
        if isinstance(result, AgentResponse):
            yield result
            return
        if not isinstance(result, ResponseStream):
            msg = f"agent {self._label!r}: middleware left no stream (got {type(result).__name__})"
            raise TypeError(msg)
        try:
            async for update in result:
                yield update
            yield await result.get_final_response()
        except MiddlewareTermination:
            return  # the stream ends with what it yielded so far
        finally:
            await result.aclose()

    async def _pipeline(self, context: AgentRunContext, index: int) -> None:
        if index < len(self.middleware):

            async def call_next() -> None:
                await self._pipeline(context, index + 1)

            await self.middleware[index].process(context, call_next)
            return
        session = context.session
        given = session is not None
        if session is None:
            session = self.create_session()
        if context.stream:
            context.result = ResponseStream(
                self._invoke_stream(list(context.messages), session, context.options, given=given)
            )
        else:
            context.result = await self._invoke_run(
                list(context.messages), session, context.options, given=given
            )

    # -- the core -----------------------------------------------------------------------
    #
    # One run is a RunState and two drivers over it: _invoke_run (a plain coroutine, for
    # run) and _invoke_stream (an async generator, for run_stream). They make the same
    # calls in the same order; the streaming one also yields updates between them.

    async def _run(
        self, messages: list[Message], session: AgentSession, options: RunOptions
    ) -> AgentResponse:  # BaseAgent hook; Agent.run goes through the pipeline instead
        return await self.run(messages, session=session, options=options)

    async def _invoke_run(
        self,
        input_messages: list[Message],
        session: AgentSession,
        options: dict[str, Any],
        *,
        given: bool = True,
    ) -> AgentResponse:
        state = RunState(self, input_messages, session, given=given)
        await state.begin(options)
        if state.partial is not None:
            state.produced.append(state.partial)
            return await state.finish()
        client = state.client
        chat_options = state.chat_options
        for round_number in range(1, self.max_tool_rounds + 2):
            final = round_number > self.max_tool_rounds or state.error_limit_reached
            if final:  # upstream: past a limit, one last request with tool_choice "none"
                chat_options = state.without_tools()
            request = state.request()
            try:
                chat_response = await client.get_response(request, options=chat_options)
            except Exception as exc:
                state.failed(exc, round_number)
                raise
            calls = state.received(chat_response)
            chat_options = state.chat_options  # a service's answer moves the conversation on
            if final:
                state.finish_without_tools(chat_response)
                break
            if not calls:
                state.produced.extend(chat_response.messages)
                break
            _, done = await state.act(chat_response, calls, state.pending(calls))
            if done:
                break
        return await state.finish()

    async def _invoke_stream(
        self,
        input_messages: list[Message],
        session: AgentSession | None,
        options: dict[str, Any],
        *,
        given: bool = True,
    ) -> AsyncIterator[AgentResponseUpdate | AgentResponse]:
        if session is None:
            given = False
            session = self.create_session()
        state = RunState(self, input_messages, session, given=given)
        answered = await state.begin(options)
        agent_id = self.id
        # upstream streams every update under the agent's name unless it names its author
        author = self.name
        if state.partial is not None:
            state.produced.append(state.partial)
            yield _named(message_update(state.partial, agent_id=agent_id), author)
            yield await state.finish(streamed=True)
            return
        if answered is not None:
            yield _named(message_update(answered, response_id=None, agent_id=agent_id), author)
        client = state.client
        chat_options = state.chat_options
        for round_number in range(1, self.max_tool_rounds + 2):
            final = round_number > self.max_tool_rounds or state.error_limit_reached
            if final:  # upstream: past a limit, one last request with tool_choice "none"
                chat_options = state.without_tools()
            request = state.request()
            try:
                held: list[ChatResponseUpdate] = []
                chat_updates: list[ChatResponseUpdate] = []
                async for chat_update in client.get_streaming_response(
                    request, options=chat_options
                ):
                    chat_updates.append(chat_update)
                    # Calls wait until we know whether they need approval.
                    if _has_call(chat_update):
                        held.append(chat_update)
                    else:
                        yield _update_from_chat(chat_update, agent_id, author)
                chat_response = ChatResponse.from_updates(chat_updates)
            except Exception as exc:
                state.failed(exc, round_number)
                raise
            calls = state.received(chat_response)
            chat_options = state.chat_options  # a service's answer moves the conversation on
            if final:  # held calls are dropped, never run; a fallback text may be added
                fallback = state.finish_without_tools(chat_response)
                if fallback is not None:
                    update = message_update(
                        fallback, response_id=state.response_id, agent_id=agent_id
                    )
                    yield _named(update, author)
                break
            if not calls:
                state.produced.extend(chat_response.messages)
                break
            pending = state.pending(calls)
            for chat_update in held:
                yield _update_from_chat(chat_update, agent_id, author)
            if pending:  # upstream: the requests follow the calls, as an update of their own
                requests = approval_requests(calls, pending)
                yield build_agent_update(
                    "assistant", requests, author_name=author, agent_id=agent_id
                )
            tool_message, done = await state.act(chat_response, calls, pending)
            if tool_message is not None:
                update = message_update(
                    tool_message, response_id=state.response_id, agent_id=agent_id
                )
                yield _named(update, author)
            if done:
                break
        yield await state.finish(streamed=True)

    def _chat_options(self, context: SessionContext | None, options: dict[str, Any]) -> ChatOptions:
        if context is None and not options:
            # no providers, no run options: the agent's own instructions and tools
            instructions = self.instructions
            # join, as the general path does: same str, same TypeError for a non-str
            joined = "\n".join((instructions,)) if instructions else None  # noqa: FLY002
            return ChatOptions(instructions=joined, tools=list(self.tools), tool_choice="auto")
        extra_instructions: Sequence[str] = () if context is None else context.instructions
        extra_tools: Sequence[FunctionTool] = () if context is None else context.tools
        parts = [
            p for p in (self.instructions, *extra_instructions, options.get("instructions")) if p
        ]
        tools = [*self.tools, *extra_tools, *options.get("tools", ())]
        return ChatOptions(
            instructions="\n".join(parts) if parts else None,
            tools=tools,
            response_format=options.get("response_format"),
            additional_properties={k: v for k, v in options.items() if k not in _OPTION_KEYS},
            tool_choice=options.get("tool_choice", "auto"),  # upstream's Agent default
        )

    @staticmethod
    def _find_tool(name: str, options: ChatOptions) -> FunctionTool | None:
        for candidate in options.tools:
            # a hosted tool is the service's to run: a function call of its name is unknown
            if getattr(candidate, "name", None) == name and not isinstance(candidate, HostedTool):
                return candidate  # type: ignore[no-any-return] # tools are FunctionTools
        return None

    def _requires_approval(self, name: str, options: ChatOptions) -> bool:
        found = self._find_tool(name, options)
        return found is not None and found.approval_mode == "always_require"

    async def _run_tools(
        self, calls: Sequence[FunctionCallContent], options: ChatOptions, session: AgentSession
    ) -> Message:
        # Sequential, in call order: deterministic, and a blocking tool (a background wait)
        # still lets every earlier call finish first.
        results = [await self._call_tool(call, options, session) for call in calls]
        return Message("tool", results)  # upstream leaves a tool message without an id

    async def _call_tool(
        self, call: FunctionCallContent, options: ChatOptions, session: AgentSession
    ) -> FunctionResultContent:
        _trace.emit(
            "tool_call",
            agent=self._label,
            session=session.session_id,
            call_id=call.call_id,
            name=call.name,
            arguments=call.arguments,
        )
        found = self._find_tool(call.name, options)
        raised: str | None = None  # the class name of what the tool itself raised
        ran = True  # False when the arguments were refused: the tool never ran
        if found is None:
            offered = ", ".join(options.tool_names) or "none"
            result = FunctionResultContent(
                call_id=call.call_id,
                result=say("agent.tool.unknown", name=call.name),
                error=say("agent.tool.unknown_detail", name=call.name, offered=offered),
            )
        else:
            # Upstream's shape for a failed call: a fixed error text as the result the model
            # reads, the exception's text beside it (upstream: ``exception``; here ``error``).
            try:
                value = await found.invoke(call.arguments)
            except ToolArgumentError as exc:
                ran = False
                result = FunctionResultContent(
                    call_id=call.call_id, result=WORDING["agent.tool.bad_arguments"], error=str(exc)
                )
            except Exception as exc:  # noqa: BLE001 - the model sees the error, the run goes on
                raised = type(exc).__name__
                result = FunctionResultContent(
                    call_id=call.call_id, result=WORDING["agent.tool.failed"], error=str(exc)
                )
            else:
                result = FunctionResultContent(call_id=call.call_id, result=_tool_text(value))
        if call.additional_properties:
            # upstream: every result carries its call's properties (a vendor's item id)
            result.additional_properties = dict(call.additional_properties)
        # A tool that raised, or never ran (refused arguments), returned nothing: its record
        # has no result, the error's text, and the class name of what the tool raised (the
        # model reads the fixed error text in the next request); a scenario fails on
        # ``error_type`` unless it declares it (``expect.tool_errors``)
        extra = {} if raised is None else {"error_type": raised}
        _trace.emit(
            "tool_result",
            agent=self._label,
            session=session.session_id,
            call_id=call.call_id,
            name=call.name,
            result=result.result if raised is None and ran else None,
            error=result.error,
            **extra,
        )
        return result

    async def _answer_approvals(
        self, approvals: Sequence[FunctionApprovalResponseContent], session: AgentSession
    ) -> Message:
        options = ChatOptions(tools=self.tools)
        results: list[FunctionResultContent] = []
        for approval in approvals:
            if approval.approved:
                results.append(await self._call_tool(approval.function_call, options, session))
            else:
                call = approval.function_call
                rejected = FunctionResultContent(
                    call_id=call.call_id, result=WORDING["agent.tool.rejected"]
                )
                if call.additional_properties:  # as for a result of a call that ran
                    rejected.additional_properties = dict(call.additional_properties)
                results.append(rejected)
        return Message("tool", results)  # upstream leaves a tool message without an id


#: Run options that are ChatOptions fields of their own (the rest pass through).
_OPTION_KEYS = frozenset(
    ("instructions", "tools", "response_format", "tool_choice", "conversation_id")
)


def _has_call(update: ChatResponseUpdate) -> bool:
    for content in update.contents:  # noqa: SIM110 - a loop is cheaper than any(<genexpr>)
        if isinstance(content, FunctionCallContent):
            return True
    return False


def _named(update: AgentResponseUpdate, author: str | None) -> AgentResponseUpdate:
    """``update`` under ``author`` when it names nobody (upstream's streamed updates)."""
    if update.author_name is not None or author is None:
        return update
    return update.model_copy(update={"author_name": author})


def _update_from_chat(
    update: ChatResponseUpdate, agent_id: str, author: str | None
) -> AgentResponseUpdate:
    built = build_agent_update(
        update.role,
        update.contents,
        author_name=update.author_name or author,
        message_id=update.message_id,
        response_id=update.response_id,
        agent_id=agent_id,
    )
    # upstream's agent updates carry the answer's finish reason, token... too
    fields = {name: getattr(update, name) for name in AGENT_RESPONSE_FIELDS}
    if any(fields.values()):
        fields["additional_properties"] = dict(fields["additional_properties"])
        return built.model_copy(update=fields)
    return built


def _tool_of(value: Any) -> Any:
    """A tool given to the Agent: a hosted tool (a :class:`~loopsim.HostedTool` or the
    declaration mapping a vendor client's ``get_web_search_tool()`` returns) is kept as
    declared, offered to the model and never run; anything else is a function."""
    if isinstance(value, HostedTool):
        return value
    if is_hosted_declaration(value):
        return HostedTool(value)
    return FunctionTool(value)
