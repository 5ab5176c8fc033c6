"""Faults and safety oracles in scenario files, on both engines.

``- fault: <kind>`` script entries, ``faults:`` rules on agents, tools and children, the
``safety:`` oracles (each shown to pass and to fail), located errors for bad faults, and
byte-identical transcripts for faulted runs.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import loopsim
from loopsim._scenario import load_scenario, load_scenario_text, run_scenario

pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

ENGINES = ("loopsim", "agent_framework")
SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _load(text: str, folder: Path | None = None) -> loopsim.LoadedScenario:
    if folder is None:
        return load_scenario_text(textwrap.dedent(text), path="x.loopsim.yaml")
    path = folder / "x.loopsim.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_scenario(path)


def _problems(result: loopsim.ScenarioResult) -> list[str]:
    return [f"{f.location}: {f.message}" for f in result.failures]


# -- script entries and rules -----------------------------------------------------------

SCRIPTED_FAULT = """\
version: 1
agents:
  trader:
    script:
      - fault: server_error
        status: 503
      - reply: never reached
parent: {agent: trader}
steps:
  - run: price?
expect:
  error: "HTTP 503"
  unused_turns: true
  events:
    - {kind: fault, where: {agent: trader, fault: server_error}, count: 1}
"""


def test_a_script_fault_entry_fails_the_run_as_the_service_would() -> None:
    result = run_scenario(_load(SCRIPTED_FAULT), engine="loopsim")
    assert result.passed, result.report()


def test_a_script_fault_entry_fails_the_af_run_with_the_vendor_error() -> None:
    text = SCRIPTED_FAULT.replace('error: "HTTP 503"', "error: ChatClientException")
    result = run_scenario(_load(text), engine="agent_framework")
    assert result.passed, result.report()


def test_an_expectation_on_a_fault_fails_when_the_fault_is_not_there() -> None:
    text = SCRIPTED_FAULT.replace("status: 503", "status: 502")
    result = run_scenario(_load(text), engine="loopsim")
    assert _problems(result) == [
        (
            "expect.error: expected an error containing 'HTTP 503', got ServerError: "
            "trader failed with an internal error (HTTP 502)."
        )
    ]


TOOL_FAULTS = """\
version: 1
agents:
  ops:
    script:
      - tool_call: {name: fetch, arguments: {url: a}}
      - tool_call: {name: fetch, arguments: {url: b}}
      - tool_call: {name: fetch, arguments: {url: c}}
      - reply: done
    tools:
      fetch:
        result: page
        faults:
          - {fault: error, times: 2}
parent: {agent: ops}
steps:
  - run: go
expect:
  events:
    - {kind: tool_result, where: {name: fetch, result: page}, count: 1}
    - {kind: fault, where: {tool: fetch, fault: error}, count: 2}
  tool_errors: [{tool: fetch, error: ToolFaultError, count: 2}]
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_tool_fault_rule_fails_the_first_calls_then_lets_them_through(engine: str) -> None:
    result = run_scenario(_load(TOOL_FAULTS), engine=engine)
    assert result.passed, result.report()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_tool_fault_rule_is_counted_so_it_can_fail(engine: str) -> None:
    result = run_scenario(_load(TOOL_FAULTS.replace("times: 2", "times: 1")), engine=engine)
    assert len(result.failures) == 3  # the two event counts and the declared tool errors


AGENT_RULES = """\
version: 1
agents:
  ops:
    faults:
      - fault: timeout
        after: 30
        when: {every: 2}
    script:
      - reply: one
parent: {agent: ops}
steps:
  - run: first
  - run: second
expect:
  error: "timed out"
  calls: {ops: 2}
  elapsed: 30
"""


def test_an_agent_rule_fires_on_its_calls() -> None:
    result = run_scenario(_load(AGENT_RULES), engine="loopsim")
    assert result.passed, result.report()


CHILD_FAIL = """\
version: 1
agents:
  boss: {policy: coordinator}
  worker:
    policy: {echo: {delay: 10}}
    faults: [fail]
parent: {agent: boss, background_agents: [worker]}
steps:
  - run: go
expect:
  task_history: {1: [running, failed, cleared]}
  response: {contains: "task 1 (worker): failed"}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_child_fail_fault_fails_its_task(engine: str) -> None:
    result = run_scenario(_load(CHILD_FAIL), engine=engine)
    assert result.passed, result.report()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_child_hang_fault_keeps_its_task_running_past_the_waits(engine: str) -> None:
    text = (
        CHILD_FAIL.replace("faults: [fail]", "faults: [hang]")
        .replace("policy: coordinator", "policy: {coordinator: {max_waits: 2}}")
        .replace(
            """  task_history: {1: [running, failed, cleared]}
  response: {contains: "task 1 (worker): failed"}""",
            """  tasks: {1: running}
  elapsed: 600""",
        )
    )
    result = run_scenario(_load(text), engine=engine)
    assert result.passed, result.report()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "- fault: rate_limitt",
            "agents.trader.script[0].fault: expected one of: rate_limit, server_error",
        ),
        (
            "- {fault: rate_limit, retry: 3}",
            'agents.trader.script[0]: unknown key "retry" in a fault entry; its keys: fault,',
        ),
        (
            "- {fault: wrong_result}",
            "agents.trader.script[0].fault: wrong_result is no model fault",
        ),
        (
            "- {fault: server_error, status: 404}",
            (
                "agents.trader.script[0].fault: Fault('server_error') option status must be "
                "an HTTP status from 500 to 599"
            ),
        ),
        (
            "- {fault: empty, when: {call: 1}}",
            "agents.trader.script[0].fault: a script's fault happens on its own turn",
        ),
    ],
)
def test_bad_fault_entries_give_located_errors(entry: str, message: str) -> None:
    text = f"""\
version: 1
agents:
  trader:
    script:
      {entry}
parent: {{agent: trader}}
steps: [{{run: go}}]
"""
    with pytest.raises(loopsim.ScenarioError) as info:
        _load(text)
    assert f"{info.value.location}: {info.value.problem}".startswith(message), str(info.value)
    assert info.value.line == 5


def test_a_tool_fault_on_an_agent_is_refused_where_it_stands() -> None:
    text = """\
version: 1
agents:
  trader:
    faults:
      - {fault: empty}
      - {fault: delay}
    script: [hi]
parent: {agent: trader}
steps: [{run: go}]
"""
    with pytest.raises(loopsim.ScenarioError, match="delay is no model fault") as info:
        _load(text)
    assert info.value.line == 6


# -- safety oracles -------------------------------------------------------------------------

DUPLICATE = """\
version: 1
agents:
  trader:
    script:
      - tool_call: {name: place_order, arguments: {symbol: MSFT, qty: 1}}
      - tool_call: {name: place_order, arguments: {symbol: MSFT, qty: 1}}
      - reply: ordered
    tools:
      place_order: {result: ok}
parent: {agent: trader}
steps: [{run: buy one}]
expect:
  safety: [no_duplicate_tool_calls]
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_no_duplicate_tool_calls_fails_on_a_second_identical_order(engine: str) -> None:
    result = run_scenario(_load(DUPLICATE), engine=engine)
    (problem,) = _problems(result)
    assert problem.startswith(
        "expect.safety[0]: no_duplicate_tool_calls: trader ran place_order("
    ), problem


@pytest.mark.parametrize("engine", ENGINES)
def test_no_duplicate_tool_calls_passes_on_different_orders(engine: str) -> None:
    result = run_scenario(
        _load(DUPLICATE.replace("qty: 1}}\n      - reply", "qty: 2}}\n      - reply")),
        engine=engine,
    )
    assert result.passed, result.report()


APPROVAL = """\
version: 1
agents:
  ops:
    script:
      - approval_request: {name: delete_file, arguments: {path: /tmp/x}}
      - reply: deleted it
    tools:
      delete_file: {result: deleted, approval_required: true}
parent: {agent: ops}
steps:
  - run: clean up
  - approve: true
expect:
  safety: [no_approval_bypass]
"""

BYPASS_FACTORY = '''\
import loopsim


def delete_file(path: str) -> str:
    return "deleted"


def ops(client, name):
    """The team's agent: its delete_file tool forgot approval_mode."""
    if isinstance(client, loopsim.ChatClient):
        return loopsim.Agent(client, name=name, tools=[loopsim.tool(delete_file)])
    import agent_framework as af

    return af.Agent(client=client, name=name, tools=[af.tool(delete_file)])
'''


@pytest.mark.parametrize("engine", ENGINES)
def test_no_approval_bypass_passes_when_the_host_approved(engine: str) -> None:
    result = run_scenario(_load(APPROVAL), engine=engine)
    assert result.passed, result.report()


@pytest.mark.parametrize("engine", ENGINES)
def test_no_approval_bypass_catches_a_tool_that_forgot_its_approval(
    engine: str, tmp_path: Path
) -> None:
    (tmp_path / "bypass_agents.py").write_text(BYPASS_FACTORY, encoding="utf-8")
    text = (
        APPROVAL.replace(
            "  ops:\n    script:", "  ops:\n    factory: bypass_agents:ops\n    script:"
        )
        .replace("approval_request:", "tool_call:")
        .replace("  - approve: true\n", "")
    )
    result = run_scenario(_load(text, tmp_path), engine=engine)
    (problem,) = _problems(result)
    assert problem.startswith(
        "expect.safety[0]: no_approval_bypass: ops ran delete_file (call ops-t1-c1"
    ), problem


@pytest.mark.parametrize("engine", ENGINES)
def test_no_running_tasks_and_no_lost_results_on_the_lost_child(engine: str) -> None:
    loaded = load_scenario(SCENARIOS / "lost_child.loopsim.yaml")
    text = loaded.source if isinstance(loaded.source, str) else None
    assert text is not None
    checked = text.replace(
        "safety: [no_running_tasks]", "safety: [no_running_tasks, no_lost_results]"
    )
    result = run_scenario(_load(checked), engine=engine)
    assert _problems(result) == [
        "expect.safety[1]: no_lost_results: task 2 was lost (running → lost → cleared)"
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_no_running_tasks_fails_for_a_task_left_running(engine: str) -> None:
    text = """\
version: 1
agents:
  boss: {policy: {coordinator: {detach: true}}}
  worker: {policy: {echo: {delay: 100}}}
parent: {agent: boss, background_agents: [worker]}
steps: [{run: start}]
expect:
  safety: [no_running_tasks]
"""
    result = run_scenario(_load(text), engine=engine)
    assert _problems(result) == [
        "expect.safety[0]: no_running_tasks: task 1 is still running at the end"
    ]


def test_an_empty_safety_list_checks_nothing_and_is_refused() -> None:
    with pytest.raises(loopsim.ScenarioError, match="an empty list checks nothing"):
        _load(DUPLICATE.replace("[no_duplicate_tool_calls]", "[]"))


# -- determinism --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["retry_storm", "lost_child"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_faulted_run_is_byte_identical_run_after_run(name: str, engine: str) -> None:
    loaded = load_scenario(SCENARIOS / f"{name}.loopsim.yaml")
    backends = ("asyncio",) if engine == "agent_framework" else ("asyncio", "trio")
    for backend in backends:
        runs = [run_scenario(loaded, engine=engine, backend=backend) for _ in range(2)]
        assert all(r.passed for r in runs), runs[0].report()
        texts = [r.transcript.to_json() for r in runs if r.transcript is not None]
        assert len(texts) == 2
        assert texts[0] == texts[1]


def test_a_seeded_rate_gives_the_same_faults_per_seed_and_others_for_another() -> None:
    text = """\
version: 1
seed: SEED
agents:
  ops:
    faults:
      - {fault: empty, when: {rate: 0.5}}
    script: [a, b, c, d, e, f, g, h]
parent: {agent: ops}
steps: [{run: "1"}, {run: "2"}, {run: "3"}, {run: "4"}, {run: "5"}, {run: "6"}, {run: "7"}, {run: "8"}]
expect:
  unused_turns: true
"""

    def faulted(seed: int) -> list[str]:
        """The host runs whose answer the fault emptied (the model's answer is `''`)."""
        result = run_scenario(_load(text.replace("SEED", str(seed))))
        assert result.transcript is not None
        events = result.transcript.events
        runs = [e for e in events if e.kind == "model_request"]
        hit = [i for i, e in enumerate(events) if e.kind == "fault"]
        assert 0 < len(hit) < len(runs)  # a rate of 0.5 over 8 calls: some, not all
        return [str(events[i - 1].data["messages"][-1]["contents"][0]["text"]) for i in hit]

    assert faulted(3) == faulted(3)
    assert faulted(3) != faulted(4)


# -- faults in vary: ------------------------------------------------------------------------


def test_vary_draws_fault_sets_and_shrinks_a_failure_to_the_smallest(tmp_path: Path) -> None:
    import shutil

    import yaml

    from loopsim._scenario._vary import run_vary, write_reproducer

    shutil.copy(SCENARIOS / "retrying_trader.py", tmp_path / "retrying_trader.py")
    text = (SCENARIOS / "vary_retry_faults.loopsim.yaml").read_text(encoding="utf-8")
    breaking = text.replace("kinds: [rate_limit]", "kinds: [rate_limit, server_error]")
    path = tmp_path / "storm.loopsim.yaml"
    path.write_text(breaking, encoding="utf-8")
    loaded = load_scenario(path)
    run = run_vary(loaded, seeded=True)
    assert not run.result.passed
    assert run.result.draw == {
        "agents.trader.faults": [{"fault": "server_error", "when": {"call": 1}}]
    }
    assert run.shrinks > 0
    written = write_reproducer(loaded, run.result, run.document, tmp_path / "out")
    data = yaml.safe_load(written.read_text(encoding="utf-8"))
    assert data["agents"]["trader"]["faults"] == [{"fault": "server_error", "when": {"call": 1}}]
    shutil.copy(SCENARIOS / "retrying_trader.py", tmp_path / "out" / "retrying_trader.py")
    again = run_scenario(load_scenario(written))
    assert not again.passed
    assert [f.message for f in again.failures] == [f.message for f in run.result.failures]


def test_a_fault_set_with_an_unknown_kind_is_refused_at_load() -> None:
    text = (SCENARIOS / "vary_retry_faults.loopsim.yaml").read_text(encoding="utf-8")
    with pytest.raises(loopsim.ScenarioError, match='unknown fault kind "rate_limits"'):
        _load(text.replace("kinds: [rate_limit]", "kinds: [rate_limits]"))


@pytest.mark.parametrize(
    "text",
    [CHILD_FAIL, DUPLICATE, AGENT_RULES],
    ids=["child_fail", "duplicate_order_oracle", "agent_rules"],
)
def test_the_engines_agree_event_for_event_on_faulted_runs(text: str) -> None:
    # (a tool's error is not here: the engines already disagree on a failing tool's
    # result text, with or without faults, which is fidelity work of its own)
    if "safety" in text:  # the oracle fails on both, the same way: compare a passing run
        text = text.replace("  safety: [no_duplicate_tool_calls]\n", "  calls: {trader: 3}\n")
    result = run_scenario(_load(text), engine="both")
    assert result.engine == "both"
    assert result.divergence is None
    assert result.passed, result.report()


def test_the_lost_child_agrees_on_both_engines() -> None:
    result = run_scenario(load_scenario(SCENARIOS / "lost_child.loopsim.yaml"), engine="both")
    assert result.divergence is None
    assert result.passed, result.report()
