"""One Agent run's working state: the tool loop's rounds, approvals and what is stored.

:class:`RunState` is shared by the Agent's streaming and non-streaming drivers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import _trace
from .._clients._hosted import emit_hosted
from .._clients._recording import answer_fields
from .._clock import model_call
from .._messages import (
    AgentResponse,
    ChatOptions,
    ChatResponse,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    Usage,
    build_agent_response,
    copied,
    text_message,
)
from .._wording import WORDING, say
from ._approvals import first_control, for_model, without
from ._batches import find_batch, for_model_after_batch, hold, log_batches, release
from ._context import SessionContext
from ._errors import AgentRequestError, ChatResponseError
from ._service import ServiceChatClient, ServiceKind
from ._session import AgentSession, MessageView

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["RunState", "approval_requests"]


class RunState:
    """One Agent run's working state, shared by the streaming and non-streaming drivers."""

    __slots__ = (
        "agent",
        "answer",
        "approval_ids",
        "chat_options",
        "client",
        "context",
        "error_limit_reached",
        "errors_in_a_row",
        "fallback",
        "given",
        "history",
        "input_messages",
        "later_history",
        "partial",
        "prefix",
        "produced",
        "response_id",
        "sent_from",
        "service",
        "session",
        "start",
        "stores",
        "trim",
        "usage",
    )

    def __init__(
        self,
        agent: Agent,
        input_messages: list[Message],
        session: AgentSession,
        *,
        given: bool = True,
    ) -> None:
        self.agent = agent
        self.input_messages = input_messages
        self.session = session
        self.produced: list[Message] = []
        self.usage: Usage | None = None
        self.response_id: str | None = None
        #: the last model answer (its finish reason, continuation token... are the run's)
        self.answer: ChatResponse | None = None
        self.errors_in_a_row = 0
        self.error_limit_reached = False
        self.approval_ids: dict[str, str] = {}
        #: the text added past a tool-loop limit when nothing visible was left, if any
        self.fallback: Message | None = None
        #: the response of a run that answered part of a batch of approvals (no model call)
        self.partial: Message | None = None
        #: how many of ``produced``'s first messages the model is not sent (answers to
        #: approvals reach it in place of the input that gave them)
        self.sent_from = 0
        self.given = given
        self.client, self.service = _service_mode(agent, session)
        #: where the next request starts in the run's whole message list: past what a
        #: service-side conversation already holds (upstream's tool loop)
        self.start = 0
        #: the last answer named a conversation: the next request sends only its last message
        self.trim = False
        self.stores = False

    async def begin(self, options: dict[str, Any]) -> Message | None:
        """Providers' ``before_run``, this run's options; answers approvals sent in the input.

        Returns the tool message answering them (already in ``produced``), or None.
        """
        agent, session, input_messages = self.agent, self.session, self.input_messages
        if agent.default_options:
            options = {**agent.default_options, **options}
        providers = agent.context_providers
        # No providers: nobody could see or fill a SessionContext, so none is made.
        context: SessionContext | None = None
        if providers:
            context = SessionContext(input_messages=input_messages)
            for provider in providers:
                await provider.before_run(
                    agent=agent,
                    session=session,
                    context=context,
                    state=session.state.setdefault(provider.source_id, {}),
                )
        self.context = context
        self.chat_options = chat_options = agent._chat_options(context, options)
        chat_options.agent_name = agent._label
        chat_options.session_id = session.session_id
        # upstream: the session's service-side conversation, else the run's option
        chat_options.conversation_id = session.service_session_id or options.get("conversation_id")
        if self.service is None:  # decided now that the run's options are known
            self.service = _service_backed(agent, chat_options, options, given=self.given)
        store = options.get("store")
        #: upstream's "the service stores the history" (the store option, else the client's
        #: default), which a harness's per-model-call history depends on
        self.stores = bool(
            getattr(self.client, "STORES_BY_DEFAULT", False) if store is None else store
        )
        if agent._per_service_call_history and not self.stores:
            conversation = chat_options.conversation_id
            if conversation is not None:
                raise AgentRequestError(
                    say("agent.harness.joins_conversation", conversation_id=conversation)
                )
        # a service-backed run sends no local history: the service keeps it
        history = MessageView((), 0) if self.service else session.history()
        self.prefix: tuple[Message, ...] = tuple(input_messages)
        self.later_history: MessageView | None = None
        approvals = [
            c
            for m in input_messages
            for c in m.contents
            if isinstance(c, FunctionApprovalResponseContent)
        ]
        answered = None
        batch = find_batch(history, approvals, session.state) if approvals else None
        if batch is not None and batch.remaining:
            # part of a batch answered (see _batches): nothing runs, no model call; the
            # requests still open are the response
            hold(session.state, batch)
            self.partial = Message("assistant", list(batch.remaining))
            self.history = history
            return None
        per_call = agent._per_service_call_history
        batch_done = batch is not None and len(batch.answers) > len(approvals)
        if batch is not None and batch_done:
            # the last answers of a batch: the whole batch runs, its results in one message
            answered = await agent._answer_approvals(batch.ordered_answers(), session)
            release(session.state, batch)
            self.produced.append(answered)
            self.sent_from = 1
            loaded = for_model(history, (), (), (), loop_sees_history=False)[0]
            results = [c for c in answered.contents if isinstance(c, FunctionResultContent)]
            shown, prefix = for_model_after_batch(
                loaded, input_messages, batch, results, loop_sees_history=not per_call
            )
            history = MessageView(shown, len(shown))
            self.prefix = tuple(prefix)
        elif approvals:
            answered = await agent._answer_approvals(approvals, session)
            self.produced.append(answered)
            self.sent_from = 1  # the answers reach the model in place of the input's
        if not batch_done and (
            history.may_hold_approvals() or first_control(input_messages, 0) is not None
        ):
            # upstream's view of approvals (see _approvals): settled ones left out, the
            # answers given now replaced by their results
            results = [
                c
                for c in (answered.contents if answered is not None else ())
                if isinstance(c, FunctionResultContent)
            ]
            shown, prefix = for_model(
                history,
                input_messages,
                approvals,
                results,
                loop_sees_history=not per_call,
            )
            history = MessageView(shown, len(shown))
            self.prefix = tuple(prefix)
        if context is not None and context.context_messages:
            # Upstream's order: providers' context messages, then the session history, then
            # the new input and what this run produced.
            lead = (*context.context_messages, *history)
            if agent._per_service_call_history:
                self.later_history = history
            history = MessageView(lead, len(lead))
        self.history = history
        return answered

    def request(self) -> MessageView:
        """This round's request (history, then prefix and what the run produced), reported.

        Upstream's tool loop: after an answer naming a conversation (``conversation_id``)
        the next request is only the last message so far (the tool results: the service
        has the rest), and each later one extends that request as usual, whether the run
        keeps a local history or not.
        """
        request = self.history.followed_by((*self.prefix, *self.produced[self.sent_from :]))
        if self.trim:
            self.trim = False
            self.start = len(request) - 1
        if self.start:
            request = MessageView((), 0, request[self.start :])
        if self.later_history is not None:
            # a harness agent: context messages reach only the run's first model call
            self.history, self.later_history = self.later_history, None
        model_call(self.agent._label)  # the run's max_model_calls (runaway loops)
        if _trace.observed():  # spares listing the tool names for nobody
            # named only for a request that continues a service's copy of the conversation
            conversation = self.chat_options.conversation_id if self.service else None
            _trace.emit(
                "model_request",
                agent=self.agent._label,
                session=self.session.session_id,
                messages=request,
                tools=self.chat_options.tool_names,
                instructions=self.chat_options.instructions,
                **({} if conversation is None else {"conversation_id": conversation}),
            )
        return request

    def failed(self, exc: BaseException, round_number: int) -> None:
        """Report a failed model call (replays raise it again) and say where it happened."""
        _trace.emit(
            "model_error",
            agent=self.agent._label,
            session=self.session.session_id,
            error=type(exc).__name__,
            message=str(exc),
        )
        _note(
            exc,
            f"while agent {self.agent._label!r} (session {self.session.session_id}) "
            f"waited for model turn {round_number} of this run",
        )

    def without_tools(self) -> ChatOptions:
        """This run's options with tool_choice ``"none"`` (for the request past the limit):
        the tools stay listed, as upstream lists them, but none may be called."""
        _trace.emit(
            "tool_round_limit",
            agent=self.agent._label,
            session=self.session.session_id,
            max_iterations=self.agent.max_tool_rounds,
        )
        self.chat_options = replace(self.chat_options, tool_choice="none")
        return self.chat_options

    def finish_without_tools(self, chat_response: ChatResponse) -> Message | None:
        """Keep the answer past the tool-round limit minus any tool calls (they cannot run);
        when nothing visible is left, add a fallback text saying why. Returns that text."""
        visible = False
        for message in chat_response.messages:
            kept = [c for c in message.contents if not isinstance(c, FunctionCallContent)]
            if kept:
                self.produced.append(message.model_copy(update={"contents": kept}))
                visible = True
        if visible:
            return None
        fallback = text_message(
            "assistant", WORDING["agent.tool.limit_reached"], message_id=_trace.next_id("msg")
        )
        self.produced.append(fallback)
        self.fallback = fallback
        return fallback

    def received(self, chat_response: ChatResponse) -> list[FunctionCallContent]:
        """Report and account for a model answer; returns the tool calls it asks for."""
        if _trace.observed():  # spares copying the messages for nobody
            emit_hosted(self.agent._label, self.session.session_id, chat_response)
            _trace.emit(
                "model_response",
                agent=self.agent._label,
                session=self.session.session_id,
                messages=list(chat_response.messages),
                usage=chat_response.usage,
                response_id=chat_response.response_id,
                **answer_fields(chat_response),
            )
        usage = chat_response.usage
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage
        self.response_id = chat_response.response_id or self.response_id
        self.answer = chat_response
        conversation_id = chat_response.conversation_id
        if conversation_id is not None and self.agent._per_service_call_history and not self.stores:
            raise ChatResponseError(
                say("agent.harness.answer_names_conversation", conversation_id=conversation_id)
            )
        # upstream: an answer naming a conversation trims the next request of this run
        self.trim = conversation_id is not None
        if conversation_id is not None:
            # the answer's conversation is the run's (the next request names it) and the
            # session's
            if conversation_id != self.chat_options.conversation_id:
                self.chat_options = replace(self.chat_options, conversation_id=conversation_id)
            self.session.service_session_id = conversation_id
        return [
            c
            for m in chat_response.messages
            for c in m.contents
            if isinstance(c, FunctionCallContent)
        ]

    def pending(self, calls: Sequence[FunctionCallContent]) -> dict[str, str]:
        """Call id -> approval request id, for the calls that wait for approval."""
        agent, chat_options = self.agent, self.chat_options
        found = self.approval_ids
        for c in calls:
            if c.call_id not in found and agent._requires_approval(c.name, chat_options):
                found[c.call_id] = _trace.next_id("approval")
        return {c.call_id: found[c.call_id] for c in calls if c.call_id in found}

    def _count_errors(self, tool_message: Message) -> None:
        failed = any(
            isinstance(c, FunctionResultContent) and c.error is not None
            for c in tool_message.contents
        )
        if not failed:
            self.errors_in_a_row = 0
            return
        self.errors_in_a_row += 1
        if self.errors_in_a_row >= self.agent.max_consecutive_tool_errors:
            self.error_limit_reached = True

    async def act(
        self,
        chat_response: ChatResponse,
        calls: list[FunctionCallContent],
        pending: dict[str, str],
    ) -> tuple[Message | None, bool]:
        """Keep the answer and run the tools it may run: (tool message or None, run done)."""
        agent, produced = self.agent, self.produced
        if pending:
            produced.extend(_with_approval_requests(chat_response.messages, calls, pending))
            runnable = [c for c in calls if c.call_id not in pending]
            if not runnable:
                return None, True
            tool_message = await agent._run_tools(runnable, self.chat_options, self.session)
            produced.append(tool_message)
            return tool_message, True
        produced.extend(chat_response.messages)
        tool_message = await agent._run_tools(calls, self.chat_options, self.session)
        produced.append(tool_message)
        self._count_errors(tool_message)
        return tool_message, False

    async def finish(self, *, streamed: bool = False) -> AgentResponse:
        """The run's response, stored in history, then the providers' ``after_run``.

        Args:
            streamed: the run was streamed (``run_stream``).
        """
        agent, session = self.agent, self.session
        # upstream names the agent on every message of its response that names nobody, once
        # the run is done (its tool-loop requests still show them unnamed). New message
        # objects, not a change in place: what was already recorded stays as it was sent.
        author = agent.name or "UnnamedAgent"
        made = self.produced
        produced = self.produced = [
            m if m.author_name is not None else copied(m, {"author_name": author}) for m in made
        ]
        # Upstream stamps the response's messages in place, so the history keeps them named,
        # except where a streamed run persisted each model call's messages itself (a harness
        # agent): those are other objects, never named.
        kept = [*self.input_messages, *produced]
        if agent._per_service_call_history and self.partial is not None:
            kept = []  # no model call: nothing persisted
        elif agent._per_service_call_history:
            later = made if streamed else produced
            if streamed:  # nor the fallback text past a limit (no model call made it)
                log_batches(session.state, later)  # the history will not show the batches
                later = without([m for m in later if m is not self.fallback], _is_approval_request)
            kept = [*self.prefix, *later[self.sent_from :]]
        response = build_agent_response(
            produced,
            response_id=self.response_id or _trace.next_id("resp"),
            agent_id=agent.id,
            usage=self.usage,
            answer=self.answer,
        )
        response_format = self.chat_options.response_format
        if response_format is not None:  # upstream: parsed from the last answer when read
            response._response_format = response_format
        providers = agent.context_providers
        # A service keeps the run's messages itself. A session the run made for itself
        # (none given) that no context provider saw is dropped after it (tools and
        # middleware never see it): nobody could read what it would store.
        if not self.service and (self.given or providers):
            session.add_messages(kept)
        if providers:
            context = self.context
            if context is None:  # a provider was added during the run
                context = SessionContext(input_messages=self.input_messages)
            context.response = response
            for provider in providers:
                await provider.after_run(
                    agent=agent,
                    session=session,
                    context=context,
                    state=session.state.setdefault(provider.source_id, {}),
                )
        return response


def _service_mode(agent: Agent, session: AgentSession) -> tuple[Any, bool | None]:
    """The client a run talks to, and whether the run is service-backed (None: decided
    once the run's options are known, see :func:`_service_backed`).

    A session of a ``service_*`` history store talks to loopsim's simulated service in
    front of the agent's client (unless that client keeps the history itself).
    """
    store = session.history_store
    client = agent.client
    if store == "in_memory":
        return client, (False if agent._keeps_local_history else None)
    if not getattr(client, "STORES_BY_DEFAULT", False):
        served = agent._service_clients.get(store)
        if served is None:
            kind: ServiceKind = (
                "conversation" if store == "service_conversation" else "response_chain"
            )
            served = agent._service_clients[store] = ServiceChatClient(agent.client, kind=kind)
        client = served
    return client, True


def _service_backed(
    agent: Agent, options: ChatOptions, run_options: dict[str, Any], *, given: bool
) -> bool:
    """Upstream's rule: a run keeps a local history unless a service keeps it (a
    conversation id, or a client that stores by default, or ``store=True``); the first
    run given a session that keeps a local history makes the agent keep one for good."""
    store = run_options.get("store")
    stores = getattr(agent.client, "STORES_BY_DEFAULT", False) if store is None else store
    if options.conversation_id is None and not stores:
        if given:
            agent._keeps_local_history = True
        return False
    return True


def _note(exc: BaseException, text: str) -> None:
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        add_note(text)


def approval_requests(
    calls: Sequence[FunctionCallContent], pending: dict[str, str]
) -> list[FunctionApprovalRequestContent]:
    """An approval request (its own id) for each pending call, in call order."""
    return [
        FunctionApprovalRequestContent(id=pending[c.call_id], function_call=c)
        for c in calls
        if c.call_id in pending
    ]


def _with_approval_requests(
    messages: Sequence[Message], calls: Sequence[FunctionCallContent], pending: dict[str, str]
) -> list[Message]:
    """``messages`` with the approval requests after the calls.

    Upstream's shape: the function calls stay, and the requests follow them, in call
    order, at the end of the last message holding a call.
    """
    out = list(messages)
    last = max(
        (
            i
            for i, m in enumerate(out)
            if any(isinstance(c, FunctionCallContent) for c in m.contents)
        ),
        default=None,
    )
    if last is None or not pending:
        return out
    contents = [*out[last].contents, *approval_requests(calls, pending)]
    out[last] = out[last].model_copy(update={"contents": contents})
    return out


def _is_approval_request(content: object) -> bool:
    return isinstance(content, FunctionApprovalRequestContent)
