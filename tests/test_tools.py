"""Function tools made from signatures: arguments models shared between tools of one
signature (a provider makes its tools again for every run) never mix two signatures up."""

from __future__ import annotations

import inspect
import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import FunctionTool, ToolArgumentError

HINTS: list[Any] = [int, str, bool, float, Any]
# 1, 1.0 and True are equal (and hash alike): a shared model must still keep each default
DEFAULTS: list[Any] = [inspect.Parameter.empty, 1, 1.0, True, "x", None]


def make_function(params: list[tuple[str, Any, Any]]) -> Any:
    """A function with exactly this signature, returning its arguments."""

    def fn(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
            for name, _, default in params
        ]
    )
    fn.__annotations__ = {name: hint for name, hint, _ in params}
    return fn


signatures = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(HINTS), st.sampled_from(DEFAULTS)),
    min_size=1,
    max_size=2,
    unique_by=lambda p: p[0],
)


@settings(max_examples=150, deadline=None)
@given(st.lists(signatures, min_size=1, max_size=6))
def test_tools_of_one_name_keep_their_own_signature(drawn: list[list[Any]]) -> None:
    # wall_clock=False: the signatures are under test, not the clock (a freeze per call
    # outside the plugin's held one costs ~3 ms, 10x the rest of the example)
    for params in drawn:  # all named "t": only the signature tells their models apart
        tool = FunctionTool(make_function(params), name="t")
        given_args: dict[str, Any] = {}
        expected: dict[str, Any] = {}
        for name, _hint, default in params:
            if default is inspect.Parameter.empty:
                given_args[name] = "not a number"
                expected[name] = "not a number"
            else:
                expected[name] = default
        if any(hint not in (str, Any) for name, hint, _ in params if name in given_args):
            with pytest.raises(ToolArgumentError):
                loopsim.simulate(tool.invoke, given_args, wall_clock=False)
            continue
        got = loopsim.simulate(tool.invoke, given_args, wall_clock=False)
        assert got == expected
        assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


def test_a_tool_with_an_unhashable_default_still_works() -> None:
    def collect(items: list[int] = [1, 2]) -> list[int]:  # noqa: B006 - the case under test
        return items

    tool = loopsim.tool(collect)
    assert loopsim.simulate(tool.invoke, {}) == [1, 2]
    assert loopsim.simulate(tool.invoke, {"items": [3]}) == [3]
    assert tool.parameters["properties"]["items"]["default"] == [1, 2]


def test_closures_made_per_run_share_a_schema_and_each_keep_their_own_state() -> None:
    def make(prefix: str) -> FunctionTool:
        async def greet(name: str) -> str:
            return f"{prefix} {name}"

        return loopsim.tool(greet)

    hello, bye = make("hello"), make("bye")
    assert hello.parameters == bye.parameters
    assert loopsim.simulate(hello.invoke, {"name": "ada"}) == "hello ada"
    assert loopsim.simulate(bye.invoke, {"name": "ada"}) == "bye ada"


def _own_function(defaults: tuple[Any, ...] | None) -> Any:
    """A function of a loopsim module (as the provider's closures are), made from one code
    object with the given defaults."""

    def template(task_id: int, note: str = "a") -> str:
        return f"{task_id} {note}"

    namespace = {"__name__": "loopsim._test_own_tools", "__builtins__": __builtins__}
    return types.FunctionType(template.__code__, namespace, "template", defaults)


def test_functions_of_one_definition_in_loopsim_keep_their_own_defaults_and_signature() -> None:
    # loopsim's own tool functions are looked up by code object: what else differs between
    # two functions of one code object (defaults, a signature set on one) must count
    first = FunctionTool(_own_function(("a",)), name="t")
    second = FunctionTool(_own_function(("b",)), name="t")
    assert first.parameters["properties"]["note"]["default"] == "a"
    assert second.parameters["properties"]["note"]["default"] == "b"
    again = FunctionTool(_own_function(("a",)), name="t")
    assert again._model is first._model  # shared: the walk ran once for this definition
    relabelled = _own_function(("a",))
    relabelled.__signature__ = inspect.Signature(
        [inspect.Parameter("other", inspect.Parameter.KEYWORD_ONLY, annotation=int)]
    )
    assert list(FunctionTool(relabelled, name="t").parameters["properties"]) == ["other"]
