"""Scenario files on either engine, and ``--engine both``.

The agent_framework engine builds the scenario from the real package
(``agent-framework-core``); these tests run it for real, never a stand-in.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import loopsim
from loopsim._scenario import ENGINES, load_scenario, load_scenario_text, run_scenario
from loopsim._scenario._compare import compare_engines
from loopsim._scenario._engines import engine_problems
from loopsim._transcript import Transcript

SCENARIOS = sorted((Path(__file__).parent.parent / "scenarios").glob("*.loopsim.yaml"))


def _buildable(path: Path) -> bool:
    return not list(engine_problems(load_scenario(path).scenario, "agent_framework"))


AF_SCENARIOS = [p for p in SCENARIOS if _buildable(p)]


def _scenario(text: str, tmp_path: Path | None = None) -> loopsim.LoadedScenario:
    path = None if tmp_path is None else tmp_path / "s.loopsim.yaml"
    if path is not None:
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return load_scenario(path)
    return load_scenario_text(textwrap.dedent(text))


ONE_REPLY = """\
    version: 1
    agents:
      writer: {script: [hello]}
    parent: {agent: writer}
    steps: [{run: hi}]
    expect: {response: {equals: hello}}
"""


def test_most_shipped_scenarios_are_buildable_on_agent_framework() -> None:
    # The list below is what the agent_framework engine cannot build; a shrinking list
    # is progress, a growing one a regression someone must explain in docs/engines.md.
    assert len(AF_SCENARIOS) >= len(SCENARIOS) - 6, [
        p.name for p in SCENARIOS if p not in AF_SCENARIOS
    ]


@pytest.mark.parametrize("path", AF_SCENARIOS, ids=lambda p: p.name.removesuffix(".loopsim.yaml"))
def test_shipped_scenario_meets_its_expectations_on_agent_framework(path: Path) -> None:
    result = run_scenario(load_scenario(path), engine="agent_framework")
    assert result.engine == "agent_framework"
    assert result.passed, result.report()


@pytest.mark.parametrize("path", AF_SCENARIOS, ids=lambda p: p.name.removesuffix(".loopsim.yaml"))
def test_agent_framework_runs_are_byte_identical(path: Path) -> None:
    loaded = load_scenario(path)
    runs = [run_scenario(loaded, engine="agent_framework").transcript for _ in range(3)]
    assert all(t is not None for t in runs)
    first, *others = [t.model_dump_json(indent=1) for t in runs if t is not None]
    for other in others:
        diff = difflib.unified_diff(first.splitlines(), other.splitlines(), lineterm="", n=1)
        assert other == first, "\n".join(list(diff)[:40])


def test_the_file_can_choose_the_engine() -> None:
    loaded = _scenario(
        ONE_REPLY.replace("version: 1\n", "version: 1\n    engine: agent_framework\n")
    )
    result = run_scenario(loaded)
    assert result.engine == "agent_framework"
    assert result.passed, result.report()
    assert run_scenario(loaded, engine="loopsim").engine == "loopsim"


def test_both_engines_agree_on_a_plain_reply() -> None:
    result = run_scenario(_scenario(ONE_REPLY), engine="both")
    assert result.engine == "both"
    assert result.other is not None
    assert result.other.engine == "agent_framework"
    assert result.passed, result.report()
    assert result.not_compared is None
    assert result.divergence is None


def test_both_checks_the_expectations_on_each_engine() -> None:
    wrong = ONE_REPLY.replace("equals: hello", "equals: goodbye")
    result = run_scenario(_scenario(wrong), engine="both")
    messages = [f.message for f in result.failures]
    assert any(m.startswith("[engine loopsim] expected the response") for m in messages)
    assert any(m.startswith("[engine agent_framework] expected the response") for m in messages)


FACTORIES = """\
import agent_framework as af
import loopsim


def plain(client, name):
    if isinstance(client, af.BaseChatClient):
        return af.Agent(client=client, name=name)
    return loopsim.Agent(client, name=name)


def extra_tool_on_agent_framework(client, name):
    if isinstance(client, af.BaseChatClient):
        return af.Agent(client=client, name=name, tools=[af.tool(lambda: "x", name="peek")])
    return loopsim.Agent(client, name=name)


def not_an_agent(client, name):
    return 42


def broken(client, name):
    raise RuntimeError("the factory fell over")
"""


@pytest.fixture
def factories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "my_factories.py").write_text(FACTORIES, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _factory_scenario(function: str) -> str:
    return ONE_REPLY.replace(
        "writer: {script: [hello]}",
        f'writer: {{script: [hello], factory: "my_factories:{function}"}}',
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_factory_builds_the_users_own_agent(factories: Path, engine: str) -> None:
    result = run_scenario(_scenario(_factory_scenario("plain"), factories), engine=engine)  # type: ignore[arg-type]
    assert result.passed, result.report()


def test_both_reports_where_the_engines_diverge(factories: Path) -> None:
    loaded = _scenario(_factory_scenario("extra_tool_on_agent_framework"), factories)
    result = run_scenario(loaded, engine="both")
    divergences = [f for f in result.failures if f.kind == "divergence"]
    assert len(divergences) == 1, result.report()
    text = divergences[0].message
    assert "model calls of writer, event 1" in text
    assert "at tools" in text
    assert '"peek"' in text


def test_a_known_divergence_is_reported_not_failed(factories: Path) -> None:
    text = _factory_scenario("extra_tool_on_agent_framework").replace(
        "version: 1\n", "version: 1\n    known_divergence: the agent_framework side offers a tool\n"
    )
    result = run_scenario(_scenario(text, factories), engine="both")
    assert result.passed, result.report()
    assert result.divergence is not None
    assert result.divergence.startswith("known divergence (the agent_framework side offers a tool)")


def test_a_stale_known_divergence_fails(factories: Path) -> None:
    text = _factory_scenario("plain").replace(
        "version: 1\n", "version: 1\n    known_divergence: none really\n"
    )
    result = run_scenario(_scenario(text, factories), engine="both")
    assert [f.location for f in result.failures] == ["known_divergence"]
    assert "stale" in result.failures[0].message
    assert result.failures[0].line == 2


@pytest.mark.parametrize(
    ("function", "problem"),
    [
        ("not_an_agent", "returned int, not an agent"),
        ("broken", "RuntimeError: the factory fell over"),
        ("missing", 'module "my_factories" has no attribute "missing"'),
    ],
)
@pytest.mark.parametrize("engine", ENGINES)
def test_a_bad_factory_is_a_located_error(
    factories: Path, engine: str, function: str, problem: str
) -> None:
    loaded = _scenario(_factory_scenario(function), factories)
    result = run_scenario(loaded, engine=engine)  # type: ignore[arg-type]
    assert not result.passed
    error = result.error
    assert isinstance(error, loopsim.ScenarioError), result.report()
    assert problem in str(error)
    assert error.location == "agents.writer.factory"
    assert error.line == 3


def test_trio_on_the_agent_framework_engine_is_a_located_error(tmp_path: Path) -> None:
    text = ONE_REPLY.replace(
        "version: 1\n", "version: 1\n    backend: trio\n    engine: agent_framework\n"
    )
    with pytest.raises(loopsim.ScenarioError) as info:
        _scenario(text, tmp_path)
    assert info.value.location == "backend"
    assert info.value.line == 2
    assert "engine agent_framework" in info.value.problem
    assert "asyncio only" in info.value.problem


def test_overriding_the_engine_checks_what_it_can_build() -> None:
    loaded = _scenario(ONE_REPLY.replace("version: 1\n", "version: 1\n    backend: trio\n"))
    assert run_scenario(loaded).passed
    with pytest.raises(loopsim.ScenarioError, match=r"engine agent_framework: .*asyncio only"):
        run_scenario(loaded, engine="agent_framework")


def test_both_says_when_it_could_not_compare() -> None:
    loaded = _scenario(ONE_REPLY.replace("version: 1\n", "version: 1\n    backend: trio\n"))
    result = run_scenario(loaded, engine="both")
    assert result.passed
    assert result.not_compared is not None
    assert "asyncio only" in result.not_compared


def test_a_restart_restores_the_real_session_into_new_objects() -> None:
    path = next(p for p in AF_SCENARIOS if p.name == "restart_lost_recovery.loopsim.yaml")
    result = run_scenario(load_scenario(path), engine="agent_framework")
    kinds = [e.kind for e in result.events]
    assert "process_restart" in kinds
    after = kinds[kinds.index("process_restart") :]
    assert "session_restored" in after
    statuses = [e.data["status"] for e in result.events if e.kind == "task_status"]
    assert "lost" in statuses, statuses  # the restart found the task running


def test_the_engine_without_its_package_names_the_install_command(tmp_path: Path) -> None:
    path = tmp_path / "s.loopsim.yaml"
    path.write_text(textwrap.dedent(ONE_REPLY), encoding="utf-8")
    program = textwrap.dedent(
        f"""
        import sys
        sys.modules["agent_framework"] = None  # as if the extra were not installed
        from loopsim._scenario import load_scenario, run_scenario
        try:
            run_scenario(load_scenario({str(path)!r}), engine="agent_framework")
        except Exception as exc:
            print(type(exc).__name__, exc)
        """
    )
    out = subprocess.run(  # noqa: S603 - this interpreter, our own program
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.startswith("ScenarioError")
    assert "pip install 'pytest-loopsim[agent-framework]'" in out
    assert "engine" in out


def _transcript(*events: tuple[float, str, dict[str, object]]) -> Transcript:
    return Transcript.model_validate(
        {
            "format": "loopsim.transcript",
            "version": 1,
            "scenario": "t",
            "seed": 0,
            "backend": "asyncio",
            "loopsim_version": "0",
            "events": [
                {"seq": i + 1, "time": t, "kind": k, "data": d}
                for i, (t, k, d) in enumerate(events)
            ],
        }
    )


def test_comparison_reads_ids_by_order_and_streams_in_order() -> None:
    ours = _transcript(
        (0, "session_created", {"agent": "a", "session": "session-0001"}),
        (0, "task_status", {"task_id": 1, "status": "running", "session": "session-0001"}),
        (0, "tool_result", {"agent": "a", "name": "x", "result": "r", "session": "session-0001"}),
    )
    theirs = _transcript(  # same facts: other id spelling, other interleaving of streams
        (0, "session_created", {"agent": "a", "session": "uuid-9"}),
        (0, "tool_result", {"agent": "a", "name": "x", "result": "r", "session": "uuid-9"}),
        (0, "task_status", {"task_id": 1, "status": "running", "session": "uuid-9"}),
    )
    assert compare_engines(ours, theirs) is None
    later = _transcript(
        (0, "session_created", {"agent": "a", "session": "uuid-9"}),
        (0, "tool_result", {"agent": "a", "name": "x", "result": "r", "session": "uuid-9"}),
        (5, "task_status", {"task_id": 1, "status": "running", "session": "uuid-9"}),
    )
    found = compare_engines(ours, later)
    assert found is not None
    assert (found.stream, found.field, found.loopsim_value, found.agent_framework_value) == (
        "task 1",
        "time",
        0,
        5,
    )


def test_comparison_tells_two_sessions_apart() -> None:
    ours = _transcript(
        (0, "model_request", {"agent": "a", "session": "s1"}),
        (0, "model_request", {"agent": "a", "session": "s2"}),
    )
    theirs = _transcript(
        (0, "model_request", {"agent": "a", "session": "u1"}),
        (0, "model_request", {"agent": "a", "session": "u1"}),
    )
    found = compare_engines(ours, theirs)
    assert found is not None
    assert (found.field, found.loopsim_value, found.agent_framework_value) == (
        "session",
        "session#2",
        "session#1",
    )


def test_the_private_names_the_engine_reads_still_exist() -> None:
    # An agent_framework upgrade that moves these fails here, loudly, not as wrong statuses.
    import importlib

    import agent_framework as af

    from loopsim.agent_framework import _upstream

    module = importlib.import_module(_upstream.REFRESH_MODULE)
    for name in _upstream.REFRESH_FUNCTIONS:
        assert callable(getattr(module, name, None)), name
    assert callable(getattr(af.BackgroundAgentsProvider, _upstream.RUNTIME_METHOD, None))


def _shipped_on_agent_framework(name: str) -> loopsim.ScenarioResult:
    path = next(p for p in AF_SCENARIOS if p.name == name)
    return run_scenario(load_scenario(path), engine="agent_framework")


def test_streamed_model_calls_name_their_session() -> None:
    result = _shipped_on_agent_framework("streaming.loopsim.yaml")
    requests = [e for e in result.events if e.kind == "model_request"]
    assert requests
    assert all(isinstance(e.data["session"], str) for e in requests)


def test_the_harness_predicate_is_named_as_on_the_built_in_engine() -> None:
    result = _shipped_on_agent_framework("harness_predicate.loopsim.yaml")
    names = {e.data["evaluator"] for e in result.events if e.kind == "evaluator_decision"}
    assert names == {"background_tasks_running"}


def test_an_approval_answer_reaches_the_real_agent() -> None:
    # agent_framework ignores an answer that does not name the call's occurrence: then the
    # tool would never run and the scenario's second model call would not happen.
    result = _shipped_on_agent_framework("approval_stop.loopsim.yaml")
    assert result.passed, result.report()
    assert [e.data["name"] for e in result.events if e.kind == "tool_result"] == ["delete_file"]


@pytest.mark.parametrize("engine", ENGINES)
def test_an_error_inside_a_run_keeps_its_type_and_gains_the_step(engine: str) -> None:
    text = ONE_REPLY.replace("{script: [hello]}", "{script: [{failure: model fell over}]}").replace(
        "expect: {response: {equals: hello}}", "expect: {error: model fell over}"
    )
    result = run_scenario(_scenario(text), engine=engine)  # type: ignore[arg-type]
    assert result.passed, result.report()
    assert type(result.error).__name__ == "ScriptedFailure"
    notes = getattr(result.error, "__notes__", [])
    assert notes[-1] == (
        f"loopsim: raised by step 1 (steps[0], line 5) of the scenario, on the {engine} engine"
    )
