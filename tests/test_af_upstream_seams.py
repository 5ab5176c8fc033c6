"""The agent_framework names loopsim relies on still exist (an upgrade that moves one fails here).

Private names live in loopsim.agent_framework._upstream; the public seams are listed too,
so a renamed hook or layer shows up as one clear failure instead of odd behaviour.
"""

from __future__ import annotations

import importlib
import inspect

import agent_framework as af
import pytest
from agent_framework import observability

from loopsim.agent_framework import _upstream


def test_background_provider_keeps_its_children_where_loopsim_reads_them() -> None:
    child = af.Agent(client=None, name="child", description="c")  # type: ignore[arg-type]
    provider = af.BackgroundAgentsProvider([child])
    assert _upstream.provider_agents(provider) == [child]
    assert isinstance(getattr(provider, _upstream.PROVIDER_AGENTS_ATTRIBUTE), dict)


@pytest.mark.parametrize(
    "name",
    [
        "BaseChatClient",
        "FunctionInvocationLayer",
        "ChatMiddlewareLayer",
        "ChatMiddleware",
        "FunctionMiddleware",
        "AgentMiddleware",
        "AgentLoopMiddleware",
        "BackgroundAgentsProvider",
        "AgentSession",
        "Content",
        "Message",
        "ChatResponse",
        "ChatResponseUpdate",
        "AgentResponse",
        "AgentResponseUpdate",
        "ResponseStream",
        "FunctionTool",
        "UsageDetails",
    ],
)
def test_public_seams_exist(name: str) -> None:
    assert getattr(af, name) is not None


def test_the_seams_have_the_members_loopsim_uses() -> None:
    assert hasattr(observability, "ChatTelemetryLayer")
    loop = af.AgentLoopMiddleware(lambda **_: False)
    assert callable(loop.should_continue)
    assert hasattr(af.BaseChatClient, "_inner_get_response")  # the documented subclass hook
    assert hasattr(af.BaseChatClient, "_build_response_stream")
    agent = af.Agent(client=None, name="a")  # type: ignore[arg-type]
    assert hasattr(agent, "middleware")  # re-read on every run
    assert "call_id" in inspect.getsource(importlib.import_module("agent_framework._tools"))
    # a streamed run is followed through its stream's public hooks (loopsim's tracing)
    for hook in ("with_pull_context_manager", "with_cleanup_hook", "with_result_hook"):
        assert callable(getattr(af.ResponseStream, hook, None)), hook
    assert "_process_streaming" in vars(af.AgentLoopMiddleware)  # the loop runs lazily


def test_the_middleware_layer_reads_agent_middleware_on_every_run() -> None:
    # zero-touch tracing relies on it: the middleware instrument() adds joins that run
    from loopsim.agent_framework._tracing import _WRAPPED

    layer = _upstream.MIDDLEWARE_RUN_LAYER
    assert issubclass(af.Agent, layer)
    original = getattr(layer.run, _WRAPPED)
    assert 'getattr(self, "middleware"' in inspect.getsource(original)


@pytest.mark.parametrize(("module_name", "name"), _upstream.INSTRUMENT_FACTORIES)
def test_histogram_factories_loopsim_shares_still_exist(module_name: str, name: str) -> None:
    module = importlib.import_module(module_name)
    assert callable(getattr(module, name, None)), (
        f"{module_name}.{name} is gone: update _upstream.INSTRUMENT_FACTORIES"
    )


def test_the_harness_default_store_is_built_where_loopsim_marks_it() -> None:
    # loopsim.agent_framework._isolation wraps this function and reads this attribute.
    module_name, function_name = _upstream.DEFAULT_STORE_ASSEMBLER
    assert callable(getattr(importlib.import_module(module_name), function_name))
    store = af.FileSystemAgentFileStore("somewhere")
    assert "somewhere" in str(getattr(store, _upstream.STORE_ROOT_ATTRIBUTE))


def test_the_function_layer_answers_an_unknown_tool_where_loopsim_wraps_it() -> None:
    # zero-touch tracing records a call of an unknown tool around this function: its
    # keywords must still be the ones the wrapper reads
    from loopsim.agent_framework._tracing import _WRAPPED, ToolTraceMiddleware

    module_name, name = _upstream.TOOL_INVOKER
    wrapped = getattr(importlib.import_module(module_name), name)
    parameters = inspect.signature(getattr(wrapped, _WRAPPED)).parameters
    for keyword in ("function_call_content", "tool_map", "invocation_session"):
        assert keyword in parameters, keyword
    assert "middleware_pipeline" in parameters
    pipeline = importlib.import_module("agent_framework._middleware").FunctionMiddlewarePipeline
    traced = ToolTraceMiddleware()
    assert _upstream.traced_pipeline(pipeline(traced), ToolTraceMiddleware)
    assert not _upstream.traced_pipeline(pipeline(), ToolTraceMiddleware)
