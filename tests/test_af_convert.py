"""loopsim.agent_framework's conversions: every content kind, usage, options, both ways."""

from __future__ import annotations

from typing import Any

import agent_framework as af
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from test_messages import content_strategy, json_values, message_strategy

import loopsim
from loopsim import (
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    DataContent,
    ErrorContent,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionResultContent,
    Message,
    TextContent,
    UriContent,
    Usage,
    UsageContent,
)
from loopsim.agent_framework import ConversionError
from loopsim.agent_framework import _convert as convert

FAST = settings(max_examples=60, deadline=None)

counts = st.none() | st.integers(0, 10**9)
extra_names = st.text(min_size=1, max_size=6).filter(lambda k: k not in convert._USAGE_FIELDS)
usages = st.builds(
    Usage,
    input_tokens=counts,
    output_tokens=counts,
    total_tokens=counts,
    cached_input_tokens=counts,
    reasoning_tokens=counts,
    # None or non-empty: agent_framework's flat usage dict cannot tell {} from None
    additional_counts=st.none()
    | st.dictionaries(extra_names, st.integers(0, 10**6), min_size=1, max_size=3),
)
contents = content_strategy(
    usages, st.sampled_from(["application/octet-stream", "image/png", "text/plain"])
)
messages = message_strategy(contents)
ids = st.none() | st.text(min_size=1, max_size=8)


@FAST
@given(contents)
def test_every_content_kind_round_trips(content: Any) -> None:
    there = convert.to_af_content(content)
    assert isinstance(there, af.Content)
    assert convert.to_loopsim_content(there) == content


@FAST
@given(contents)
def test_agent_framework_content_round_trips_through_loopsim(content: Any) -> None:
    there = convert.to_af_content(content)
    again = convert.to_af_content(convert.to_loopsim_content(there))
    assert again.to_dict() == there.to_dict()


def test_contents_land_on_the_matching_upstream_kinds() -> None:
    call = loopsim.FunctionCallContent(call_id="c1", name="add", arguments={"a": 1})
    kinds = {
        "text": TextContent(text="hi"),
        "function_call": call,
        "function_result": FunctionResultContent(call_id="c1", result={"sum": 3}),
        "function_approval_request": FunctionApprovalRequestContent(id="a1", function_call=call),
        "function_approval_response": FunctionApprovalResponseContent(
            id="a1", approved=True, function_call=call
        ),
        "error": ErrorContent(message="boom"),
        "data": DataContent(data=b"\x00\x01", media_type="image/png"),
        "uri": UriContent(uri="data:text/plain;base64,aGk=", media_type="text/plain"),
        "usage": UsageContent(usage=Usage(input_tokens=3)),
    }
    for kind, content in kinds.items():
        there = convert.to_af_content(content)
        assert there.type == kind, kind
    result = convert.to_af_content(kinds["function_result"])
    assert result.result == '{"sum": 3}'  # what an upstream model would be shown
    data = convert.to_af_content(kinds["data"])
    assert data.uri == "data:image/png;base64,AAE="


@FAST
@given(messages)
def test_messages_round_trip(message: Message) -> None:
    assert convert.to_loopsim_message(convert.to_af_message(message)) == message


@FAST
@given(usages)
def test_usage_round_trips_and_uses_upstream_names(usage: Usage) -> None:
    details = convert.to_af_usage(usage)
    assert convert.to_loopsim_usage(details) == usage
    if usage.input_tokens is not None:
        assert details["input_token_count"] == usage.input_tokens
    if usage.cached_input_tokens is not None:
        assert details["cache_read_input_token_count"] == usage.cached_input_tokens


def test_upstream_only_usage_counters_become_additional_counts() -> None:
    usage = convert.to_loopsim_usage(
        {"input_token_count": 5, "cache_creation_input_token_count": 2}
    )
    assert usage == Usage(input_tokens=5, additional_counts={"cache_creation_input_token_count": 2})
    assert convert.to_loopsim_usage(None) is None


def test_an_extra_counter_named_like_a_standard_one_is_refused() -> None:
    with pytest.raises(ConversionError, match="input_token_count"):
        convert.to_af_usage(Usage(additional_counts={"input_token_count": 1}))


@FAST
@given(st.lists(messages, max_size=3), ids, st.none() | usages)
def test_chat_responses_round_trip(msgs: list[Message], rid: str | None, usage: Any) -> None:
    response = ChatResponse(msgs, response_id=rid, usage=usage)
    assert convert.to_loopsim_chat_response(convert.to_af_chat_response(response)) == response


@FAST
@given(
    st.sampled_from(["assistant", "user", "tool"]),
    st.lists(contents, max_size=3),
    ids,
    ids,
    ids,
)
def test_chat_updates_round_trip(
    role: str, items: list[Any], author: str | None, mid: str | None, rid: str | None
) -> None:
    update = ChatResponseUpdate(role, items, author_name=author, message_id=mid, response_id=rid)
    assert convert.to_loopsim_chat_update(convert.to_af_chat_update(update)) == update


@FAST
@given(st.lists(messages, max_size=3), ids, ids, st.none() | usages)
def test_agent_responses_round_trip(
    msgs: list[Message], rid: str | None, agent_id: str | None, usage: Any
) -> None:
    response = loopsim.AgentResponse(msgs, response_id=rid, agent_id=agent_id, usage=usage)
    back = convert.to_loopsim_agent_response(convert.to_af_agent_response(response))
    assert back == response


class Verdict(BaseModel):
    answered: bool


option_values = st.dictionaries(
    st.sampled_from(["temperature", "model", "max_tokens", "seed", "metadata"]),
    json_values,
    max_size=3,
)


@FAST
@given(
    st.none() | st.text(max_size=10),
    option_values,
    st.sampled_from([None, Verdict]),
    st.sampled_from([None, "auto", "none", "required", {"mode": "required"}]),
    st.none() | st.text(min_size=1, max_size=10),
)
def test_options_round_trip(
    instructions: str | None,
    extra: dict[str, Any],
    fmt: Any,
    tool_choice: Any,
    conversation_id: str | None,
) -> None:
    @loopsim.tool
    def lookup(city: str) -> str:
        """Look a city up."""
        return city

    options = ChatOptions(
        instructions=instructions,
        tools=[lookup],
        response_format=fmt,
        additional_properties=extra,
        tool_choice=tool_choice,
        conversation_id=conversation_id,
    )
    there = convert.to_af_options(options)
    assert there.get("instructions") == instructions
    assert [t.name for t in there["tools"]] == ["lookup"]
    assert isinstance(there["tools"][0], af.FunctionTool)
    for key, value in extra.items():
        assert there[key] == value
    assert there.get("tool_choice") == tool_choice
    assert there.get("conversation_id") == conversation_id
    back = convert.to_loopsim_options(there)
    assert back == options
    assert convert.to_af_options(back) == there


def test_upstream_options_round_trip_through_loopsim() -> None:
    @af.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    schema = {"type": "object", "properties": {"answered": {"type": "boolean"}}}
    options = {
        "instructions": "be brief",
        "tools": [add],
        "temperature": 0.2,
        "response_format": schema,
    }
    loopsim_options = convert.to_loopsim_options(options, agent_name="a", session_id="s")
    assert loopsim_options.tool_names == ["add"]
    assert loopsim_options.response_format is None  # a schema dict is not a pydantic model
    assert (loopsim_options.agent_name, loopsim_options.session_id) == ("a", "s")
    assert convert.to_af_options(loopsim_options) == options


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (af.Content.from_text_reasoning(text="hmm"), "text_reasoning"),
        (af.Content.from_function_call("c1", "f", arguments="{not json"), "not JSON"),
        (af.Content.from_function_call("c1", "f", arguments="[1, 2]"), "JSON object"),
        (af.Content("data", uri="https://example.com/x.png", media_type="image/png"), "base64"),
    ],
    ids=["unknown-kind", "bad-json", "not-an-object", "data-without-base64"],
)
def test_what_loopsim_cannot_hold_is_a_clear_error(content: af.Content, match: str) -> None:
    with pytest.raises(ConversionError, match=match):
        convert.to_loopsim_content(content)


def test_string_arguments_from_a_vendor_are_parsed() -> None:
    content = af.Content.from_function_call("c1", "f", arguments='{"x": [1, 2]}')
    assert convert.to_loopsim_content(content) == loopsim.FunctionCallContent(
        call_id="c1", name="f", arguments={"x": [1, 2]}
    )
    empty = af.Content.from_function_call("c2", "g", arguments="")
    assert convert.to_loopsim_content(empty).arguments == {}  # type: ignore[union-attr]


def test_an_upstream_tool_without_a_name_attribute_is_named_and_comes_back() -> None:
    hosted = {"type": "web_search"}
    options = convert.to_loopsim_options({"tools": [hosted, add_tool()]})
    assert options.tool_names == ["web_search", "add"]
    assert convert.to_af_options(options)["tools"][0] is hosted


def add_tool() -> af.FunctionTool:
    @af.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return add
