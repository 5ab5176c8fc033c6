"""The facade: complete, sorted, nothing private leaks; errors subclass the right builtins."""

from __future__ import annotations

import types

import pytest

import loopsim
from loopsim import (
    LoopsimError,
    ReplayMismatchError,
    ScenarioError,
    ScriptExhaustedError,
    SimulationDeadlock,
    SimulationError,
    TranscriptError,
)


def public_names() -> set[str]:
    # dir(): the package is lazy, so vars() holds only the names used so far
    return {
        name
        for name in dir(loopsim)
        if not name.startswith("_") and not isinstance(getattr(loopsim, name), types.ModuleType)
    }


def test_all_is_sorted_and_complete() -> None:
    assert loopsim.__all__ == sorted(loopsim.__all__)
    assert set(loopsim.__all__) - {"__version__"} == public_names()


def test_every_exported_object_resolves() -> None:
    for name in loopsim.__all__:
        assert getattr(loopsim, name) is not None, name


def test_nothing_private_is_exported() -> None:
    for name in loopsim.__all__:
        obj = getattr(loopsim, name)
        module = getattr(obj, "__module__", "loopsim") or "loopsim"
        assert module.startswith("loopsim"), (name, module)
        assert not name.startswith("_") or name == "__version__"


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (ScenarioError, ValueError),
        (SimulationError, RuntimeError),
        (ScriptExhaustedError, SimulationError),
        (SimulationDeadlock, SimulationError),
        (ReplayMismatchError, AssertionError),
        (TranscriptError, ValueError),
    ],
)
def test_error_tree(error: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(error, LoopsimError)
    assert issubclass(error, builtin)


def test_scenario_error_renders_file_line_and_field() -> None:
    error = ScenarioError(
        'expected a number >= 0, got "soon"',
        path="s.loopsim.yaml",
        line=12,
        location="agents.web_search.script[2].delay",
        expected="a number >= 0",
    )
    assert (
        str(error)
        == 's.loopsim.yaml:12: agents.web_search.script[2].delay: expected a number >= 0, got "soon"'
    )
    assert (error.line, error.location, error.expected) == (
        12,
        "agents.web_search.script[2].delay",
        "a number >= 0",
    )


def test_simulation_errors_carry_time_and_seed() -> None:
    error = SimulationDeadlock(["task 'a' awaiting Event.wait"], virtual_time=3.5, seed=7)
    assert error.waiting == ("task 'a' awaiting Event.wait",)
    assert (error.virtual_time, error.seed) == (3.5, 7)
    assert "task 'a' awaiting Event.wait" in str(error)
    assert "t=3.5s" in str(error)


def test_public_test_named_classes_are_not_collected() -> None:
    for name in loopsim.__all__:
        if name.startswith("Test"):
            assert getattr(getattr(loopsim, name), "__test__", True) is False, name


# -- loopsim.agent_framework: the optional engine's facade, held to the same rules -----------


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions
    if name.isupper():
        return (0, name)
    return (1 if name[0].isupper() else 2, name)


def test_agent_framework_facade_is_sorted_complete_and_private_free() -> None:
    import loopsim.agent_framework as facade

    names = {
        name
        for name, value in vars(facade).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    } - {"annotations"}
    assert facade.__all__ == sorted(facade.__all__, key=_isort_key)
    assert set(facade.__all__) == names
    for name in facade.__all__:
        value = getattr(facade, name)
        assert value is not None, name
        module = getattr(value, "__module__", "loopsim")
        assert module.startswith("loopsim"), (name, module)
    for required in ("WORDING", "as_agent", "as_chat_client", "from_chat_client"):
        assert required in facade.__all__


def test_agent_framework_wording_is_loopsims_table() -> None:
    import loopsim._wording
    import loopsim.agent_framework as facade

    assert facade.WORDING is loopsim._wording.WORDING
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in facade.WORDING.items())


def test_agent_framework_errors_subclass_the_right_builtins() -> None:
    from loopsim.agent_framework import ConversionError, EngineBackendError

    for error in (ConversionError, EngineBackendError):
        assert issubclass(error, LoopsimError)
        assert issubclass(error, ValueError)
