"""Messages, contents, usage and responses: construction, text helpers, JSON round-trips."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopsim
from loopsim import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    DataContent,
    ErrorContent,
    FunctionApprovalRequestContent,
    FunctionApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedToolCallContent,
    HostedToolResultContent,
    Message,
    TextContent,
    UriContent,
    Usage,
    UsageContent,
)

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
counts = st.none() | st.integers(0, 10**9)
usages = st.builds(
    Usage,
    input_tokens=counts,
    output_tokens=counts,
    total_tokens=counts,
    cached_input_tokens=counts,
    reasoning_tokens=counts,
    additional_counts=st.none()
    | st.dictionaries(st.text(max_size=5), st.integers(0, 10**6), max_size=3),
)
calls = st.builds(
    FunctionCallContent,
    call_id=st.text(min_size=1, max_size=8),
    name=st.text(min_size=1, max_size=8),
    arguments=st.dictionaries(st.text(max_size=6), json_values, max_size=3),
)


OCTET_STREAM = st.just("application/octet-stream")


def content_strategy(
    usage: st.SearchStrategy[Usage], media_types: st.SearchStrategy[str] = OCTET_STREAM
) -> st.SearchStrategy[Any]:
    """Every content kind loopsim has (test_af_convert.py draws them with its own usages)."""
    return st.one_of(
        st.builds(TextContent, text=st.text(max_size=30)),
        calls,
        st.builds(
            FunctionResultContent,
            call_id=st.text(min_size=1, max_size=8),
            result=json_values,
            error=st.none() | st.text(max_size=10),
        ),
        st.builds(
            FunctionApprovalRequestContent, id=st.text(min_size=1, max_size=8), function_call=calls
        ),
        st.builds(
            FunctionApprovalResponseContent,
            id=st.text(min_size=1, max_size=8),
            approved=st.booleans(),
            function_call=calls,
        ),
        st.builds(ErrorContent, message=st.text(max_size=20)),
        st.builds(DataContent, data=st.binary(max_size=16), media_type=media_types),
        st.builds(
            UriContent,
            uri=st.text(min_size=1, max_size=20),
            media_type=st.none() | st.just("text/plain"),
        ),
        st.builds(UsageContent, usage=usage),
        st.builds(
            HostedToolCallContent,
            call_id=st.text(min_size=1, max_size=8),
            tool=st.sampled_from(["web_search", "file_search", "code_interpreter", "mcp"]),
            arguments=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
        ),
        st.builds(
            HostedToolResultContent,
            call_id=st.text(min_size=1, max_size=8),
            tool=st.sampled_from(["web_search", "image_generation", "own_search"]),
            result=json_values,
        ),
    )


def message_strategy(content: st.SearchStrategy[Any]) -> st.SearchStrategy[Message]:
    return st.builds(
        Message,
        role=st.sampled_from(["system", "user", "assistant", "tool"]),
        contents=st.lists(content, max_size=4),
        author_name=st.none() | st.text(max_size=8),
        message_id=st.none() | st.text(min_size=1, max_size=8),
    )


contents = content_strategy(usages)
messages = message_strategy(contents)


@given(messages)
def test_message_json_round_trip_is_exact(message: Message) -> None:
    assert Message.model_validate_json(message.model_dump_json()) == message


@given(st.lists(messages, max_size=3), st.none() | usages, st.none() | st.text(max_size=8))
def test_agent_response_json_round_trip_is_exact(
    msgs: list[Message], usage: Usage | None, response_id: str | None
) -> None:
    response = AgentResponse(msgs, response_id=response_id, usage=usage, agent_id="a")
    assert AgentResponse.model_validate_json(response.model_dump_json()) == response


@given(st.lists(messages, max_size=3), st.none() | usages)
def test_chat_response_json_round_trip_is_exact(msgs: list[Message], usage: Usage | None) -> None:
    response = ChatResponse(msgs, response_id="r", usage=usage)
    assert ChatResponse.model_validate_json(response.model_dump_json()) == response


def test_message_constructors_agree() -> None:
    assert Message("user", ["hi"]) == Message("user", text="hi") == Message.user("hi")
    assert Message.assistant("yo").role == "assistant"
    assert Message.system("rules").role == "system"


def test_text_concatenates_only_text_contents() -> None:
    call = FunctionCallContent(call_id="c", name="f")
    message = Message("assistant", ["a", call, "b"])
    assert message.text == "ab"
    response = AgentResponse([message, Message.assistant("c")])
    assert response.text == "abc"


def test_data_content_is_base64_in_json() -> None:
    content = DataContent(data=b"\x00\xff", media_type="image/png")
    assert '"data":"AP8="' in content.model_dump_json()


def test_content_kind_is_discriminated_by_type() -> None:
    raw = {"role": "tool", "contents": [{"type": "function_result", "call_id": "c", "result": 3}]}
    message = Message.model_validate(raw)
    assert isinstance(message.contents[0], FunctionResultContent)
    with pytest.raises(ValueError, match="does not match any of the expected tags"):
        Message.model_validate({"role": "user", "contents": [{"type": "nope"}]})


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        Message.model_validate({"role": "user", "contents": [], "colour": "red"})


def test_usage_addition_sums_only_reported_counters() -> None:
    total = Usage(input_tokens=1, additional_counts={"cost": 2}) + Usage(
        input_tokens=2, output_tokens=5, additional_counts={"cost": 4, "x": 1}
    )
    assert total == Usage(input_tokens=3, output_tokens=5, additional_counts={"cost": 6, "x": 1})
    assert total.total_tokens is None
    assert (Usage() + Usage()).additional_counts is None


def test_usage_total_skips_none_and_never_returns_an_input() -> None:
    first = Usage(input_tokens=4)
    result = Usage.total([None, first, None])
    assert result == first
    assert result is not first
    assert Usage.total([None, None]) is None


@given(st.lists(usages, min_size=1, max_size=4))
def test_usage_total_is_counterwise_null_aware_sum(items: list[Usage]) -> None:
    total = Usage.total(items)
    assert total is not None
    reported = [u.input_tokens for u in items if u.input_tokens is not None]
    assert total.input_tokens == (sum(reported) if reported else None)


def test_from_updates_merges_by_message_and_sums_usage() -> None:
    updates = [
        AgentResponseUpdate("assistant", ["Hel"], message_id="m1", response_id="r1"),
        AgentResponseUpdate("assistant", ["lo"], message_id="m1", response_id="r1"),
        AgentResponseUpdate("assistant", [UsageContent(usage=Usage(input_tokens=2))]),
        AgentResponseUpdate("user", ["fb"], message_id="m2", author_name="loop"),
        AgentResponseUpdate("assistant", [UsageContent(usage=Usage(input_tokens=3))]),
    ]
    merged = AgentResponse.from_updates(updates)
    assert [(m.role, m.text, m.message_id) for m in merged.messages] == [
        ("assistant", "Hello", "m1"),
        ("user", "fb", "m2"),
    ]
    assert merged.messages[1].author_name == "loop"
    assert merged.usage == Usage(input_tokens=5)
    assert merged.response_id == "r1"


def test_messages_argument_forms_are_normalized() -> None:
    from loopsim._messages import normalize_messages

    assert normalize_messages(None) == []
    assert normalize_messages("hi") == [Message.user("hi")]
    assert normalize_messages(["a", Message.assistant("b")]) == [
        Message.user("a"),
        Message.assistant("b"),
    ]
    with pytest.raises(TypeError, match=r"messages\[0\] must be a str or a Message"):
        normalize_messages([3])  # type: ignore[list-item]


def test_approval_request_creates_matching_response() -> None:
    request = FunctionApprovalRequestContent(
        id="a1", function_call=FunctionCallContent(call_id="c", name="f")
    )
    response = request.create_response(True)
    assert (response.id, response.approved, response.function_call) == (
        "a1",
        True,
        request.function_call,
    )


def test_public_message_names_are_exported() -> None:
    for name in (
        "Message",
        "TextContent",
        "AgentResponse",
        "ChatResponseUpdate",
        "ChatOptions",
        "Usage",
    ):
        assert hasattr(loopsim, name)
