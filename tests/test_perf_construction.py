"""The fast construction paths give the very state of the slow ones they replace.

Each fast path (issue 28 items 6 and 7) is checked against what it stands for: ``copied``
against pydantic's ``model_copy(update=...)``, ``say`` against the regular-expression
substitution it replaced, the approval scans' class cache against ``isinstance``, trace
ids against their format, and a ``FunctionChatClient`` text reply against the response
the client stamped before.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import loopsim
from loopsim import _trace
from loopsim._agents._approvals import HistoryList, first_control, has_controls
from loopsim._agents._session import AgentSession
from loopsim._clients._base import _stamp_ids
from loopsim._messages import (
    AgentResponse,
    ChatResponse,
    FunctionApprovalRequestContent,
    FunctionCallContent,
    Message,
    TextContent,
    Usage,
    copied,
)
from loopsim._wording import WORDING, say


def _state(model: Any) -> tuple[Any, ...]:
    return (
        type(model),
        model.__dict__,
        model.__pydantic_fields_set__,
        model.__pydantic_extra__,
        model.__pydantic_private__,
    )


_text = st.text(max_size=8)
_optional_text = st.none() | _text


@st.composite
def _messages(draw: st.DrawFn) -> Message:
    texts = draw(st.lists(_text, max_size=3))
    kwargs: dict[str, Any] = {}
    if draw(st.booleans()):
        kwargs["author_name"] = draw(_optional_text)
    if draw(st.booleans()):
        kwargs["message_id"] = draw(_optional_text)
    if draw(st.booleans()):
        return Message.assistant(draw(_text))  # the fast builder's message
    return Message(draw(st.sampled_from(["user", "assistant", "tool"])), texts, **kwargs)


class _OwnMessage(Message):
    """A user's subclass: copied by pydantic, never by the fast path."""


@given(
    message=_messages(),
    author=_optional_text,
    message_id=_optional_text,
    which=st.sets(st.sampled_from(["author_name", "message_id", "contents"]), min_size=1),
)
def test_copied_message_is_model_copy(
    message: Message, author: str | None, message_id: str | None, which: set[str]
) -> None:
    values = {"author_name": author, "message_id": message_id, "contents": []}
    updates = {name: values[name] for name in which}
    fast, slow = copied(message, updates), message.model_copy(update=updates)
    assert _state(fast) == _state(slow)
    assert fast.model_dump_json() == slow.model_dump_json()
    assert fast.__dict__ is not message.__dict__
    assert fast.__pydantic_fields_set__ is not message.__pydantic_fields_set__
    # as small as pydantic's (a history keeps every copy)
    assert sys.getsizeof(fast.__pydantic_fields_set__) == sys.getsizeof(
        slow.__pydantic_fields_set__
    )


@given(
    messages=st.lists(_messages(), max_size=3),
    response_id=_optional_text,
    usage=st.none() | st.builds(Usage, input_tokens=st.integers(0, 9)),
    finish=_optional_text,
    with_format=st.booleans(),
)
def test_copied_responses_are_model_copy(
    messages: list[Message],
    response_id: str | None,
    usage: Usage | None,
    finish: str | None,
    with_format: bool,
) -> None:
    chat = ChatResponse(messages, response_id=response_id, finish_reason=finish)
    if with_format:
        chat._response_format = Usage
    agent = loopsim.AgentResponse(messages, response_id=response_id, agent_id="a")
    for model, unset in ((chat, "model"), (agent, "created_at")):
        # a field not set yet joins the fields set, as model_copy adds it
        updates = {"usage": usage, "messages": list(messages)[:1], unset: "2026"}
        fast, slow = copied(model, updates), model.model_copy(update=updates)
        assert _state(fast) == _state(slow)
        assert fast.__pydantic_private__ is not model.__pydantic_private__


def test_a_subclass_is_copied_by_pydantic_and_keeps_its_class() -> None:
    own = _OwnMessage("user", ["hi"])
    fast = copied(own, {"author_name": "me"})
    assert type(fast) is _OwnMessage
    assert _state(fast) == _state(own.model_copy(update={"author_name": "me"}))


# -- say ----------------------------------------------------------------------------------

_FIELD = re.compile(r"\{(\w+)\}")


def _reference_say(template: str, fields: dict[str, Any]) -> str:
    if not fields:
        return template
    return _FIELD.sub(
        lambda m: str(fields[m.group(1)]) if m.group(1) in fields else m.group(0), template
    )


_names = st.sampled_from(["a", "b", "task_id", "x1"])
_pieces = st.lists(
    st.one_of(
        _names.map(lambda n: "{" + n + "}"),
        st.sampled_from(["{", "}", "{{", "}}", "{ a}", "{}", " ", "-"]),
        st.text(alphabet="ab {}xyz", max_size=4),
    ),
    max_size=8,
)


@given(
    pieces=_pieces,
    fields=st.dictionaries(_names, st.one_of(st.integers(), _text, st.none()), max_size=3),
)
def test_say_fills_fields_as_the_substitution_did(
    pieces: list[str], fields: dict[str, Any]
) -> None:
    template = "".join(pieces)
    key = "test.perf.template"
    WORDING[key] = template
    try:
        assert say(key, **fields) == _reference_say(template, fields)
    finally:
        del WORDING[key]


def test_say_reads_the_template_each_call() -> None:
    key = "test.perf.changing"
    try:
        WORDING[key] = "Task {task_id} done."
        assert say(key, task_id=3) == "Task 3 done."
        WORDING[key] = "Done: {task_id}, {other}."  # a new text is split anew
        assert say(key, task_id=3) == "Done: 3, {other}."
    finally:
        del WORDING[key]


# -- approval scans -----------------------------------------------------------------------


class _OwnText(TextContent):
    pass


class _OwnRequest(FunctionApprovalRequestContent):
    pass


def _request(cls: type[FunctionApprovalRequestContent]) -> FunctionApprovalRequestContent:
    return cls(id="r1", function_call=FunctionCallContent(call_id="c1", name="f"))


def test_the_class_cache_tells_approval_contents_from_others() -> None:
    # the same scan, first over plain contents (cached as "no"), then over subclasses of
    # both kinds: each answer is isinstance's
    plain = Message("user", [TextContent(text="hi")])
    assert not has_controls(plain)
    assert first_control([plain, plain], 0) is None
    own_text = Message("user", [_OwnText(text="hi")])
    own_request = Message("assistant", [_OwnText(text="x"), _request(_OwnRequest)])
    assert not has_controls(own_text)
    assert has_controls(own_request)
    assert has_controls(Message("assistant", [_request(FunctionApprovalRequestContent)]))
    assert first_control([plain, own_text, own_request, plain], 0) == 2
    assert first_control([plain, own_text, own_request], 3) is None
    history = HistoryList([plain])
    assert history.first_control is None
    history.extend([own_text, own_request])
    assert history.first_control == 2
    assert HistoryList().first_control is None


def test_a_fresh_session_is_the_constructed_one() -> None:
    # create_session's fast path for the usual session (no id, in memory) and the
    # constructor set every slot alike, the session id apart (each draws the next one)
    def state(session: AgentSession) -> dict[str, Any]:
        return {name: getattr(session, name) for name in AgentSession.__slots__}

    slow, fast = AgentSession(), AgentSession._fresh()
    made = loopsim.Agent(loopsim.ScriptedChatClient([])).create_session()
    assert fast.session_id != slow.session_id
    for session in (fast, made):
        assert type(session._messages) is HistoryList
        assert session._messages.first_control is slow._messages.first_control is None
        assert {**state(session), "session_id": None} == {**state(slow), "session_id": None}
    fast.add_messages([Message.user("hi")])  # its history works as a constructed one's
    assert [m.text for m in fast.history()] == ["hi"]


# -- ids and replies ----------------------------------------------------------------------


@given(counts=st.lists(st.integers(0, 123_456), min_size=1, max_size=4))
def test_ids_keep_their_format(counts: list[int]) -> None:
    trace = _trace.Trace()
    for count in counts:
        trace._counters["msg"] = count
        assert trace.next_id("msg") == f"msg-{count + 1:04d}"


@given(text=_text)
def test_a_function_client_text_reply_is_the_stamped_response(text: str) -> None:
    async def main() -> tuple[ChatResponse, ChatResponse]:
        client = loopsim.FunctionChatClient(lambda _m, _o: text)
        got = await client.get_response([Message.user("hi")])
        # what the client returned before: the reply as a ChatResponse, then stamped
        reference = _stamp_ids(ChatResponse(Message.assistant(text)))
        return got, reference

    got, reference = loopsim.simulate(main)
    assert got.response_id == "resp-0001"
    assert got.messages[0].message_id == "msg-0001"
    assert _state(got) == (
        ChatResponse,
        {
            **reference.__dict__,
            "response_id": "resp-0001",
            "messages": [copied(reference.messages[0], {"message_id": "msg-0001"})],
        },
        reference.__pydantic_fields_set__,
        None,
        reference.__pydantic_private__,
    )
    assert got.messages[0].__pydantic_fields_set__ == reference.messages[0].__pydantic_fields_set__


def test_agent_responses_stay_what_they_were() -> None:
    async def main() -> AgentResponse:
        client = loopsim.FunctionChatClient(lambda _m, _o: "done")
        agent = loopsim.Agent(client, name="worker")
        return await agent.run("go")

    response = loopsim.simulate(main)
    assert response.messages[0].author_name == "worker"
    assert response.messages[0].message_id == "msg-0001"
    assert response.response_id == "resp-0001"
    assert response.model_dump(mode="json") == AgentResponse.model_validate_json(
        response.model_dump_json()
    ).model_dump(mode="json")
