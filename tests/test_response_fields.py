"""Every response-level field survives both adapters, streamed and not (issue 21, item 3).

Strategies build real agent_framework ``ChatResponse`` / ``ChatResponseUpdate`` objects
(``response_id``, ``conversation_id``, ``finish_reason``, ``continuation_token``,
``model``, ``created_at``, ``additional_properties``, usage, and the content kinds
loopsim models, with the messages' ``additional_properties`` and the contents'
``annotations`` and ``additional_properties``). Each goes through ``as_chat_client`` (a loopsim client seen as an
agent_framework client) and ``from_chat_client`` (the reverse), and every field must come
out equal. What loopsim cannot carry is a ``ConversionError`` naming the field.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import agent_framework as af
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_messages import json_values

import loopsim
from loopsim import ChatOptions, ChatResponse, ChatResponseUpdate, Message
from loopsim.agent_framework import ConversionError, as_chat_client, from_chat_client
from loopsim.agent_framework import _convert as convert

FAST = settings(max_examples=25, deadline=None)

#: The response-level fields compared on both sides (same names on both).
FIELDS = (
    "response_id",
    "conversation_id",
    "finish_reason",
    "continuation_token",
    "model",
    "created_at",
    "additional_properties",
)

short = st.text(min_size=1, max_size=8)
ids = st.none() | short
keys = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
properties = st.dictionaries(keys, json_values, max_size=3)
#: agent_framework's ``Annotation`` (a citation), as its vendor clients fill it
annotations = st.fixed_dictionaries(
    {"type": st.just("citation")},
    optional={
        "title": short,
        "url": st.builds("https://example.test/{}".format, keys),
        "file_id": short,
        "snippet": st.text(max_size=12),
        "annotated_regions": st.lists(
            st.fixed_dictionaries(
                {
                    "type": st.just("text_span"),
                    "start_index": st.integers(0, 50),
                    "end_index": st.integers(0, 50),
                }
            ),
            max_size=2,
        ),
        "additional_properties": properties,
    },
)


@st.composite
def _marked(draw: st.DrawFn, contents: st.SearchStrategy[Any]) -> Any:
    """A content of ``contents``, often with annotations and properties of its own (an
    empty annotation list is None, upstream's default, which is how it comes back)."""
    content = draw(contents)
    content.annotations = draw(st.none() | st.lists(annotations, min_size=1, max_size=2))
    content.additional_properties = draw(properties)
    return content


def marked(contents: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return _marked(contents)


af_texts = marked(st.builds(af.Content.from_text, st.text(min_size=1, max_size=12)))
af_calls = marked(
    st.builds(
        lambda call_id, name, args: af.Content.from_function_call(call_id, name, arguments=args),
        short,
        short,
        st.dictionaries(keys, json_values, max_size=3),
    )
)
af_others = marked(
    st.one_of(
        st.builds(lambda m: af.Content.from_error(message=m), st.text(max_size=10)),
        st.builds(
            af.Content.from_data,
            st.binary(max_size=12),
            st.sampled_from(["image/png", "application/octet-stream"]),
        ),
        st.builds(
            lambda path: af.Content(
                "uri", uri=f"https://example.test/{path}", media_type="text/plain"
            ),
            keys,
        ),
    )
)
af_contents = af_texts | af_calls | af_others
counters = st.integers(0, 10**6)
af_usages = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "input_token_count": counters,
        "output_token_count": counters,
        "total_token_count": counters,
    },
)
tokens = st.none() | st.dictionaries(keys, json_values, min_size=1, max_size=3)
finish_reasons = st.none() | st.sampled_from(["stop", "length", "tool_calls", "content_filter"])
timestamps = st.none() | st.sampled_from(["2026-01-01T00:00:00Z", "2026-12-02T03:00:00+00:00"])


@st.composite
def af_responses(draw: st.DrawFn) -> af.ChatResponse[Any]:
    messages = draw(
        st.lists(
            st.builds(
                lambda contents, author, mid, props: af.Message(
                    "assistant",
                    contents,
                    author_name=author,
                    message_id=mid,
                    additional_properties=props,
                ),
                st.lists(af_contents, max_size=3),
                st.none() | short,
                ids,
                properties,
            ),
            max_size=2,
        )
    )
    return af.ChatResponse(
        messages=messages,
        response_id=draw(ids),
        conversation_id=draw(ids),
        finish_reason=draw(finish_reasons),
        model=draw(ids),
        created_at=draw(timestamps),
        usage_details=draw(af_usages),
        continuation_token=draw(tokens),
        additional_properties=draw(properties),
    )


def af_update_strategy(contents: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.builds(
        lambda items, mid, rid, cid, fin, model, created, token, props: af.ChatResponseUpdate(
            contents=items,
            role="assistant",
            message_id=mid,
            response_id=rid,
            conversation_id=cid,
            finish_reason=fin,
            model=model,
            created_at=created,
            continuation_token=token,
            additional_properties=props,
        ),
        st.lists(contents, max_size=2),
        st.none() | st.sampled_from(["m1", "m2"]),
        ids,
        ids,
        finish_reasons,
        ids,
        timestamps,
        tokens,
        st.none() | properties,
    )


@st.composite
def af_streams(draw: st.DrawFn) -> list[Any]:
    """A stream of whole updates; each function call its own call id (a loopsim call is
    whole, never a chunk to merge with an earlier one)."""
    updates = draw(st.lists(af_update_strategy(af_contents), min_size=1, max_size=4))
    calls = [c for u in updates for c in u.contents if c.type == "function_call"]
    for number, call in enumerate(calls):
        call.call_id = f"call-{number}"
    return updates


af_updates = af_streams()
#: Streams for from_chat_client carry no call chunks: it holds calls back to the end
#: (tests/test_af_streaming.py shows that merge), which reorders a message's contents.
af_updates_without_calls = st.lists(
    af_update_strategy(af_texts | af_others), min_size=1, max_size=4
)


# -- comparing: every field, both sides --------------------------------------------------


def _contents(message_or_update: Any) -> list[dict[str, Any]]:
    out = []
    for content in message_or_update.contents:
        shown = content.to_dict()
        shown.pop("id", None)  # the occurrence id agent_framework stamps on a function call
        out.append(shown)
    return out


def _message(message: Any) -> tuple[Any, ...]:
    return (
        str(message.role),
        message.author_name,
        message.message_id,
        dict(message.additional_properties or {}),
        _contents(message),
    )


def _field(value: Any, name: str) -> Any:
    if name == "finish_reason":
        return None if value is None else str(getattr(value, "value", value))
    if name == "additional_properties":
        return dict(value or {})
    return value


def af_view(response: Any) -> dict[str, Any]:
    """Every field of an agent_framework response or update, comparable."""
    view = {name: _field(getattr(response, name), name) for name in FIELDS}
    if isinstance(response, af.ChatResponse):
        view["messages"] = [_message(m) for m in response.messages]
        view["usage"] = dict(response.usage_details or {}) or None
    else:
        view["contents"] = _contents(response)
        view["message_id"] = response.message_id
    return view


def loopsim_view(response: ChatResponse | ChatResponseUpdate) -> dict[str, Any]:
    """The same view of a loopsim response or update (contents shown as upstream's)."""
    view = {name: _field(getattr(response, name), name) for name in FIELDS}
    if isinstance(response, ChatResponse):
        view["messages"] = [_message(m) for m in convert.to_af_messages(response.messages)]
        usage = None if response.usage is None else convert.to_af_usage(response.usage)
        view["usage"] = dict(usage or {}) or None
    else:
        view["contents"] = _contents(convert.to_af_chat_update(response))
        view["message_id"] = response.message_id
    return view


# -- the two adapters' far ends ------------------------------------------------------------


class VerbatimClient:
    """A loopsim ChatClient answering with given objects, untouched (no ids stamped)."""

    name = "verbatim"

    def __init__(
        self,
        response: ChatResponse | None = None,
        updates: Sequence[ChatResponseUpdate] = (),
    ) -> None:
        self.response = response
        self.updates = list(updates)

    async def get_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> ChatResponse:
        assert self.response is not None
        return self.response

    async def get_streaming_response(
        self, messages: Sequence[Message], *, options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        for update in self.updates:
            yield update


class VerbatimAFClient(af.BaseChatClient[Any]):
    """An agent_framework chat client answering with given objects, untouched."""

    def __init__(
        self, response: af.ChatResponse[Any] | None = None, updates: Sequence[Any] = ()
    ) -> None:
        super().__init__()
        self.response = response
        self.updates = list(updates)

    def _inner_get_response(
        self, *, messages: Sequence[af.Message], stream: bool, options: Mapping[str, Any], **_: Any
    ) -> Any:
        if not stream:

            async def answer() -> af.ChatResponse[Any]:
                assert self.response is not None
                return self.response

            return answer()

        async def stream_updates() -> AsyncIterator[Any]:
            for update in self.updates:
                yield update

        return af.ResponseStream(stream_updates(), finalizer=af.ChatResponse.from_updates)


ASK = [af.Message("user", ["hi"])]


# -- as_chat_client: a loopsim client, seen as an agent_framework client --------------------


@FAST
@given(af_responses())
def test_as_chat_client_carries_every_field(expected: af.ChatResponse[Any]) -> None:
    client = as_chat_client(VerbatimClient(convert.to_loopsim_chat_response(expected)))

    async def main() -> Any:
        return await client.get_response(ASK)

    got = loopsim.simulate(main)
    assert af_view(got) == af_view(expected)


@FAST
@given(af_updates)
def test_as_chat_client_streams_every_field(expected: list[Any]) -> None:
    updates = [convert.to_loopsim_chat_update(u) for u in expected]
    client = as_chat_client(VerbatimClient(updates=updates))

    async def main() -> tuple[list[Any], Any]:
        stream = client.get_response(ASK, stream=True)
        received = [u async for u in stream]
        return received, await stream.get_final_response()

    received, final = loopsim.simulate(main)
    assert [af_view(u) for u in received] == [af_view(u) for u in expected]
    assert af_view(final) == af_view(af.ChatResponse.from_updates(expected))


# -- from_chat_client: an agent_framework client, seen as a loopsim client ------------------


@FAST
@given(af_responses())
def test_from_chat_client_carries_every_field(expected: af.ChatResponse[Any]) -> None:
    client = from_chat_client(VerbatimAFClient(expected))

    async def main() -> ChatResponse:
        return await client.get_response([Message.user("hi")])

    got = loopsim.simulate(main)
    assert loopsim_view(got) == af_view(expected)


@FAST
@given(af_updates_without_calls)
def test_from_chat_client_streams_every_field(expected: list[Any]) -> None:
    client = from_chat_client(VerbatimAFClient(updates=expected))

    async def main() -> list[ChatResponseUpdate]:
        return [u async for u in client.get_streaming_response([Message.user("hi")])]

    received = loopsim.simulate(main)
    assert [loopsim_view(u) for u in received] == [af_view(u) for u in expected]
    merged = ChatResponse.from_updates(received)
    assert loopsim_view(merged) == af_view(af.ChatResponse.from_updates(expected))


def test_a_stream_of_call_chunks_keeps_its_fields_and_its_last_token() -> None:
    """Held-back call chunks neither drop the fields of their updates nor the last token."""
    chunks = [
        af.ChatResponseUpdate(
            role="assistant",
            contents=[af.Content.from_function_call("c1", "add", arguments='{"a": ')],
            finish_reason="tool_calls",
            continuation_token={"poll": "1"},
        ),
        af.ChatResponseUpdate(
            role="assistant",
            contents=[af.Content.from_function_call("c1", "", arguments="1}")],
            model="m-2",
            continuation_token={"poll": "2"},
        ),
    ]
    client = from_chat_client(VerbatimAFClient(updates=chunks), name="vendor")

    async def main() -> list[ChatResponseUpdate]:
        return [u async for u in client.get_streaming_response([Message.user("hi")])]

    merged = ChatResponse.from_updates(loopsim.simulate(main))
    upstream = af.ChatResponse.from_updates(chunks)
    assert merged.finish_reason == "tool_calls" == upstream.finish_reason
    assert merged.model == "m-2" == upstream.model
    assert merged.continuation_token == {"poll": "2"} == upstream.continuation_token
    (call,) = merged.messages[0].contents
    assert call.arguments == {"a": 1}


# -- loopsim's own merge and split agree with upstream's ------------------------------------


@FAST
@given(af_updates_without_calls)
def test_loopsim_merges_response_fields_as_upstream(updates: list[Any]) -> None:
    ours = ChatResponse.from_updates([convert.to_loopsim_chat_update(u) for u in updates])
    assert loopsim_view(ours) == af_view(af.ChatResponse.from_updates(updates))


@FAST
# a message with no contents does not survive a stream, here as upstream (it is dropped)
@given(af_responses().filter(lambda r: all(m.contents for m in r.messages)))
def test_a_split_response_merges_back_with_every_field(expected: af.ChatResponse[Any]) -> None:
    """A scripted fake streams a response cut into pieces: merged, every field is back."""
    response = convert.to_loopsim_chat_response(expected)

    async def whole() -> ChatResponse:
        return await loopsim.ScriptedChatClient([response]).get_response([Message.user("hi")])

    async def streamed() -> list[ChatResponseUpdate]:
        client = loopsim.ScriptedChatClient([response])
        return [u async for u in client.get_streaming_response([Message.user("hi")])]

    # both stamp the same ids where the response lacks them (counters reset per simulation);
    # adjacent text pieces come back as one (as upstream's merge joins them)
    answer = loopsim.simulate(whole)
    merged = ChatResponse.from_updates(loopsim.simulate(streamed))
    for name in (*FIELDS, "usage", "text"):
        assert getattr(merged, name) == getattr(answer, name), name


def test_the_last_update_decides_the_continuation_token() -> None:
    """A stream whose last update has no token is done (upstream: None clears it)."""
    updates = [
        ChatResponseUpdate("assistant", ["working"], continuation_token={"poll": "1"}),
        ChatResponseUpdate("assistant", [" done"]),
    ]
    assert ChatResponse.from_updates(updates).continuation_token is None
    assert ChatResponse.from_updates(updates[:1]).continuation_token == {"poll": "1"}


def test_additional_properties_merge_one_level_deep_as_upstream() -> None:
    first = {"a": {"x": 1}, "b": 1}
    second = {"a": {"y": 2}, "b": 2}
    ours = ChatResponse.from_updates(
        [
            ChatResponseUpdate("assistant", ["1"], additional_properties=first),
            ChatResponseUpdate("assistant", ["2"], additional_properties=second),
        ]
    )
    upstream = af.ChatResponse.from_updates(
        [
            af.ChatResponseUpdate(
                role="assistant", contents=[af.Content.from_text("1")], additional_properties=first
            ),
            af.ChatResponseUpdate(
                role="assistant", contents=[af.Content.from_text("2")], additional_properties=second
            ),
        ]
    )
    assert ours.additional_properties == {"a": {"x": 1, "y": 2}, "b": 2}
    assert ours.additional_properties == upstream.additional_properties


def test_structured_value_and_format_go_both_ways() -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        n: int

    upstream = af.ChatResponse(
        messages=[af.Message("assistant", ['{"n": 3}'])], response_format=Answer
    )
    _ = upstream.value  # parsed by the client
    ours = convert.to_loopsim_chat_response(upstream)
    assert ours.response_format is Answer
    assert ours.value == Answer(n=3)
    back = convert.to_af_chat_response(ours)
    assert back.value == Answer(n=3)


# -- what loopsim cannot carry: a ConversionError naming the field --------------------------


def test_a_replacing_update_is_a_conversion_error_naming_the_field_and_client() -> None:
    updates = [
        af.ChatResponseUpdate(role="assistant", contents=[af.Content.from_text("draft")]),
        af.ChatResponseUpdate(
            role="assistant", contents=[af.Content.from_text("final")], merge_mode="replace"
        ),
    ]
    client = from_chat_client(VerbatimAFClient(updates=updates), name="vendor")

    async def main() -> list[ChatResponseUpdate]:
        return [u async for u in client.get_streaming_response([Message.user("hi")])]

    with pytest.raises(ConversionError, match=r"merge_mode='replace'.*\(from vendor\)") as info:
        loopsim.simulate(main)
    assert info.value.field == "ChatResponseUpdate.merge_mode"
    assert info.value.source == "vendor"


def test_a_replacing_call_chunk_is_refused_too() -> None:
    """Held-back call chunks are checked as they come, not skipped."""
    update = af.ChatResponseUpdate(
        role="assistant",
        contents=[af.Content.from_function_call("c1", "add", arguments="{}")],
        merge_mode="replace",
    )
    client = from_chat_client(VerbatimAFClient(updates=[update]), name="vendor")

    async def main() -> list[ChatResponseUpdate]:
        return [u async for u in client.get_streaming_response([Message.user("hi")])]

    with pytest.raises(ConversionError, match="merge_mode"):
        loopsim.simulate(main)


@pytest.mark.parametrize("field", ["continuation_token", "additional_properties"])
def test_a_field_that_is_not_a_mapping_is_a_conversion_error(field: str) -> None:
    response = af.ChatResponse(messages=[af.Message("assistant", ["hi"])])
    setattr(response, field, "not-a-mapping")
    client = from_chat_client(VerbatimAFClient(response), name="vendor")

    async def main() -> ChatResponse:
        return await client.get_response([Message.user("hi")])

    with pytest.raises(ConversionError, match=rf"ChatResponse\.{field}.*\(from vendor\)") as info:
        loopsim.simulate(main)
    assert info.value.field == f"ChatResponse.{field}"


# -- agent responses (as_agent: an agent_framework agent seen by loopsim) -------------------


@FAST
@given(af_responses())
def test_agent_responses_carry_the_answer_fields_both_ways(chat: af.ChatResponse[Any]) -> None:
    upstream = af.AgentResponse(
        messages=chat.messages,
        response_id=chat.response_id,
        finish_reason=chat.finish_reason,
        continuation_token=chat.continuation_token,
        created_at=chat.created_at,
        additional_properties=chat.additional_properties,
    )
    ours = convert.to_loopsim_agent_response(upstream)
    back = convert.to_af_agent_response(ours)
    for name in ("response_id", "finish_reason", "continuation_token", "created_at"):
        assert getattr(ours, name) == getattr(upstream, name) == getattr(back, name), name
    assert ours.additional_properties == upstream.additional_properties
    assert back.additional_properties == upstream.additional_properties


def test_a_replacing_agent_update_is_a_conversion_error() -> None:
    update = af.AgentResponseUpdate(
        role="assistant", contents=[af.Content.from_text("x")], merge_mode="replace"
    )
    with pytest.raises(ConversionError, match=r"AgentResponseUpdate\.merge_mode") as info:
        convert.to_loopsim_agent_update(update, source="inner-agent")
    assert info.value.source == "inner-agent"


def test_agent_updates_carry_the_answer_fields() -> None:
    update = af.AgentResponseUpdate(
        role="assistant",
        contents=[af.Content.from_text("x")],
        finish_reason="stop",
        continuation_token={"response_id": "r"},
        created_at="2026-01-01T00:00:00Z",
        additional_properties={"k": 1},
    )
    ours = convert.to_loopsim_agent_update(update)
    assert (ours.finish_reason, ours.continuation_token, ours.created_at) == (
        "stop",
        {"response_id": "r"},
        "2026-01-01T00:00:00Z",
    )
    assert ours.additional_properties == {"k": 1}
    merged = loopsim.AgentResponse.from_updates([ours])
    assert merged.continuation_token == {"response_id": "r"}
    assert merged.finish_reason == "stop"
