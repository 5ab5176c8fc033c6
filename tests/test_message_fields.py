"""Message- and content-level fields: carried both ways, never dropped (issue 21, item 3).

A message's ``additional_properties`` and a content's ``annotations`` and
``additional_properties`` (every kind, the approvals' nested calls too) survive both
adapters and loopsim's own dumps; a value that is not JSON data is a ``ConversionError``
naming where it is. ``tests/test_response_fields.py`` draws them on upstream's responses
and streams; this file draws them on loopsim's side and pins the edges.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import agent_framework as af
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_af_convert import contents as plain_contents
from test_response_fields import ASK, VerbatimAFClient, annotations, properties

import loopsim
from loopsim import (
    ChatResponse,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedToolCallContent,
    Message,
    TextContent,
)
from loopsim._messages import text_message
from loopsim.agent_framework import ConversionError, as_chat_client, from_chat_client
from loopsim.agent_framework import _convert as convert
from loopsim.agent_framework._extras import BOOKKEEPING_KEYS
from loopsim.agent_framework._hosted import HOSTED_KEY

FAST = settings(max_examples=40, deadline=None)
NEW_FIELDS = ("annotations", "additional_properties")


def _with_extras(content: Any, notes: list[Any], props: dict[str, Any], inner: Any) -> Any:
    update: dict[str, Any] = {"annotations": notes, "additional_properties": props}
    if isinstance(content, (FunctionApprovalRequestContent, FunctionApprovalResponseContent)):
        update["function_call"] = content.function_call.model_copy(update=inner)
    return content.model_copy(update=update)


#: Every loopsim content kind, with annotations and properties (its nested call's too)
marked_contents = st.builds(
    _with_extras,
    plain_contents,
    st.lists(annotations, max_size=2),
    properties,
    st.fixed_dictionaries(
        {"annotations": st.lists(annotations, max_size=1), "additional_properties": properties}
    ),
)
marked_messages = st.builds(
    lambda role, contents, props: Message(role, contents, additional_properties=props),
    st.sampled_from(["user", "assistant", "tool"]),
    st.lists(marked_contents, max_size=3),
    properties,
)


# -- loopsim's side: the fields, their dumps ------------------------------------------------


@FAST
@given(marked_contents)
def test_every_content_kind_keeps_its_annotations_and_properties(content: Any) -> None:
    there = convert.to_af_content(content)
    assert (there.annotations or []) == content.annotations
    assert content.additional_properties.items() <= there.additional_properties.items()
    assert convert.to_loopsim_content(there) == content
    assert type(content).model_validate_json(content.model_dump_json()) == content


@FAST
@given(marked_messages)
def test_messages_keep_their_properties_both_ways(message: Message) -> None:
    there = convert.to_af_message(message)
    assert there.additional_properties == message.additional_properties
    assert convert.to_loopsim_message(there) == message
    assert Message.model_validate_json(message.model_dump_json()) == message


@FAST
@given(plain_contents)
def test_a_dump_without_them_is_what_it_was(content: Any) -> None:
    """Empty, the new fields are left out: transcripts and cassettes keep their bytes."""
    dumped = Message("assistant", [content]).model_dump(mode="json")
    assert list(dumped) == ["role", "contents", "author_name", "message_id"]
    assert not set(NEW_FIELDS) & set(dumped["contents"][0])
    assert not set(NEW_FIELDS) & set(json.loads(content.model_dump_json()))


def test_a_dump_with_them_has_them_last() -> None:
    text = TextContent(text="tides", annotations=[{"type": "citation", "url": "u"}])
    message = Message("assistant", [text], additional_properties={"k": 1})
    dumped = message.model_dump(mode="json")
    assert list(dumped) == ["role", "contents", "author_name", "message_id", *NEW_FIELDS[1:]]
    assert dumped["contents"][0] == {
        "type": "text",
        "text": "tides",
        "annotations": [{"type": "citation", "url": "u"}],
    }
    assert text_message("user", "x").model_dump() == Message.user("x").model_dump()


def test_the_fields_hold_json_data_only() -> None:
    with pytest.raises(ValueError, match="JSON"):
        TextContent(text="x", additional_properties={"k": object()})
    with pytest.raises(ValueError, match="JSON"):
        Message("user", ["x"], additional_properties={"k": {1, 2}})


# -- loopsim's own keys beside a user's ---------------------------------------------------


@pytest.mark.parametrize(
    ("content", "key"),
    [
        (FunctionResultContent(call_id="c1", result={"n": 1}), convert.RESULT_KEY),
        (HostedToolCallContent(call_id="h1", tool="web_search"), HOSTED_KEY),
    ],
)
def test_loopsims_own_key_sits_beside_a_users(content: Any, key: str) -> None:
    mine = content.model_copy(update={"additional_properties": {"trace": "t-1"}})
    there = convert.to_af_content(mine)
    assert there.additional_properties["trace"] == "t-1"
    assert key in there.additional_properties
    assert convert.to_loopsim_content(there) == mine
    clash = content.model_copy(update={"additional_properties": {key: "mine"}})
    with pytest.raises(ConversionError, match="its own value") as info:
        convert.to_af_message(Message("tool", [clash]))
    assert info.value.field == f"message.contents[0].additional_properties[{key!r}]"


# -- upstream's side: what is not JSON data, what is not carried ----------------------------


def _bad(where: str) -> af.ChatResponse[Any]:
    text = af.Content.from_text("cited")
    message = af.Message("assistant", [text])
    if where == "annotations":
        text.annotations = [{"type": "citation", "title": object()}]  # type: ignore[typeddict-item]
    elif where == "content":
        text.additional_properties = {"when": {1, 2}}
    else:
        message.additional_properties = {"owner": object()}
    return af.ChatResponse(messages=[af.Message("assistant", ["first"]), message])


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ("annotations", "ChatResponse.messages[1].contents[0].annotations[0]"),
        ("content", "ChatResponse.messages[1].contents[0].additional_properties"),
        ("message", "ChatResponse.messages[1].additional_properties"),
    ],
)
def test_a_value_that_is_not_json_is_a_conversion_error_naming_it(where: str, field: str) -> None:
    client = from_chat_client(VerbatimAFClient(_bad(where)), name="vendor")

    async def main() -> ChatResponse:
        return await client.get_response([Message.user("hi")])

    with pytest.raises(ConversionError, match=r"not JSON data.*\(from vendor\)") as info:
        loopsim.simulate(main)
    assert (info.value.field, info.value.source) == (field, "vendor")


def test_a_streamed_value_that_is_not_json_names_the_update() -> None:
    text = af.Content.from_text("cited", annotations=[{"type": "citation", "url": b"x"}])  # type: ignore[typeddict-item]
    updates = [af.ChatResponseUpdate(role="assistant", contents=[af.Content.from_text("a"), text])]
    client = from_chat_client(VerbatimAFClient(updates=updates), name="vendor")

    async def main() -> list[Any]:
        return [u async for u in client.get_streaming_response([Message.user("hi")])]

    with pytest.raises(ConversionError) as info:
        loopsim.simulate(main)
    assert info.value.field == "ChatResponseUpdate.contents[1].annotations[0]"


def test_a_request_the_fake_cannot_hold_names_the_message() -> None:
    """as_chat_client: a request message's property that is not JSON data, located."""
    client = as_chat_client(loopsim.ScriptedChatClient(["ok"]))
    odd = af.Message("user", ["hi"], additional_properties={"handle": object()})

    async def main() -> Any:
        return await client.get_response([af.Message("system", ["be brief"]), odd])

    with pytest.raises(ConversionError) as info:
        loopsim.simulate(main)
    assert info.value.field == "messages[1].additional_properties"


def test_an_annotations_sdk_object_is_not_carried() -> None:
    """``raw_representation`` (a vendor SDK's object) is left out, the rest kept."""
    sdk_object = object()
    text = af.Content.from_text(
        "cited",
        annotations=[{"type": "citation", "url": "u", "raw_representation": sdk_object}],
    )
    ours = convert.to_loopsim_content(text)
    assert ours.annotations == [{"type": "citation", "url": "u"}]


# -- streams -------------------------------------------------------------------------------


def test_a_refusal_mark_starts_a_new_text_as_upstream() -> None:
    """Pieces join as upstream joins them, its ``model_output_kind`` rule included."""
    refusal = {"core": {"model_output_kind": "refusal"}}
    pieces: list[tuple[str, dict[str, Any], Sequence[Any]]] = [
        ("I can", {}, [{"type": "citation", "url": "a"}]),
        ("not", refusal, []),
        (" say", {**refusal, "k": 1}, [{"type": "citation", "url": "b"}]),
        (".", {}, []),
    ]
    upstream = [
        af.ChatResponseUpdate(
            role="assistant",
            contents=[
                af.Content.from_text(t, additional_properties=p, annotations=list(n) or None)
            ],
        )
        for t, p, n in pieces
    ]
    ours = ChatResponse.from_updates([convert.to_loopsim_chat_update(u) for u in upstream])
    theirs = af.ChatResponse.from_updates(upstream)
    assert [c.to_dict() for c in convert.to_af_message(ours.messages[0]).contents] == [
        c.to_dict() for c in theirs.messages[0].contents
    ]
    assert [c.text for c in ours.messages[0].contents] == ["I can", "not say", "."]


@settings(max_examples=20, deadline=None)
@given(st.lists(annotations, min_size=1, max_size=2), properties, st.text(min_size=1))
def test_a_scripted_annotated_text_streams_whole_to_agent_framework(
    notes: list[Any], props: dict[str, Any], text: str
) -> None:
    reply = Message(
        "assistant", [TextContent(text=text, annotations=notes, additional_properties=props)]
    )
    client = as_chat_client(loopsim.ScriptedChatClient([ChatResponse([reply])]))

    async def main() -> Any:
        stream = client.get_response(ASK, stream=True)
        return [u async for u in stream], await stream.get_final_response()

    updates, final = loopsim.simulate(main)
    (content,) = final.messages[0].contents
    assert (content.text, content.annotations, content.additional_properties) == (
        text,
        notes,
        props,
    )
    assert sum(1 for u in updates if u.contents) == 1  # not cut: the notes are the whole's


# -- both engines: what the model is sent next -----------------------------------------------


def _reply() -> ChatResponse:
    cited = TextContent(
        text="High tide at 6.",
        annotations=[{"type": "citation", "url": "https://tides.example/today"}],
        additional_properties={"vendor": {"item_id": "it-1"}},
    )
    return ChatResponse([Message("assistant", [cited], additional_properties={"checked": True})])


def _history_fields(messages: Sequence[Message]) -> list[tuple[Any, ...]]:
    return [
        (
            m.role,
            m.additional_properties,
            [(c.annotations, c.additional_properties) for c in m.contents],
        )
        for m in messages
    ]


EXPECTED_SECOND_REQUEST = [
    ("user", {}, [([], {})]),
    (
        "assistant",
        {"checked": True},
        [
            (
                [{"type": "citation", "url": "https://tides.example/today"}],
                {"vendor": {"item_id": "it-1"}},
            )
        ],
    ),
    ("user", {}, [([], {})]),
]


@pytest.mark.parametrize("engine", ["builtin", "agent_framework"])
def test_the_fields_reach_the_next_request_and_the_transcript(engine: str) -> None:
    """The model's annotated answer comes back in the history it is sent next, on both
    engines; agent_framework's own bookkeeping (the history provider's attribution) does
    not reach the fake, as its vendor clients never send it."""
    model = loopsim.ScriptedChatClient([_reply(), "noted"])
    if engine == "builtin":
        agent: Any = loopsim.Agent(model, name="tides")
    else:
        agent = af.Agent(client=as_chat_client(model), name="tides")

    async def main() -> None:
        session = agent.create_session()
        await agent.run("when is high tide?", session=session)
        await agent.run("thanks", session=session)

    _, transcript = loopsim.record(main)
    assert _history_fields(model.requests[1].messages) == EXPECTED_SECOND_REQUEST
    sent = [e for e in transcript.events if e.kind == "model_request"][1]
    (assistant,) = [m for m in sent.data["messages"] if m["role"] == "assistant"]
    assert assistant["additional_properties"] == {"checked": True}
    assert assistant["contents"][0]["annotations"] == EXPECTED_SECOND_REQUEST[1][2][0][0]
    assert "_attribution" not in json.dumps(sent.data)


def test_bookkeeping_keys_are_upstreams_names() -> None:
    """The compaction keys left out are agent_framework's own constants."""
    from agent_framework import _compaction

    names = {
        value
        for name, value in vars(_compaction).items()
        if name.endswith("_KEY")
        and "STATE" not in name
        and isinstance(value, str)
        and value.startswith("_")
    }
    assert names <= BOOKKEEPING_KEYS
    assert "_attribution" in BOOKKEEPING_KEYS


def test_function_call_contents_keep_their_fields_in_approvals() -> None:
    call = FunctionCallContent(call_id="c1", name="pay", additional_properties={"risk": "high"})
    request = FunctionApprovalRequestContent(id="c1", function_call=call)
    there = convert.to_af_content(request)
    assert there.function_call is not None
    assert there.function_call.additional_properties == {"risk": "high"}
    assert convert.to_loopsim_content(there) == request
