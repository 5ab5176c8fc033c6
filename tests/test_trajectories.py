"""Trajectory expectations: every matcher, mode and scope passes on the run it describes
and fails, at its line, on one it does not, on both engines; ``never:`` catches a call
made without its approval; ``assert_trajectory`` works on results and transcripts."""

from __future__ import annotations

import html
import textwrap
from pathlib import Path
from typing import Any

import pytest

import loopsim
from loopsim._report import build_report, entry_from_result
from loopsim._scenario import load_scenario_text
from loopsim.testing import (
    Anything,
    Between,
    Contains,
    Equals,
    OneOf,
    Regex,
    assert_never,
    assert_trajectory,
    steps_of,
)

ENGINES = ("loopsim", "agent_framework")

TRADER = """\
version: 1
agents:
  trader:
    script:
      - tool_call: {name: get_quote, arguments: {symbol: MSFT, days: 5, tags: [tech, big]}}
      - tool_call: {name: get_news, arguments: {symbol: MSFT}}
      - reply: MSFT is 420.50 DONE
    tools:
      get_quote: {result: "420.50"}
      get_news: {result: calm}
parent: {agent: trader}
loop:
  evaluators: [completion_marker]
steps:
  - run: quote MSFT
expect:
"""


def _run(text: str, engine: str = "loopsim") -> loopsim.ScenarioResult:
    loaded = load_scenario_text(textwrap.dedent(text), path="x.loopsim.yaml")
    return loopsim.run_scenario(loaded, engine=engine)  # type: ignore[arg-type]


def _failures(expect: str, engine: str, base: str = TRADER) -> list[str]:
    result = _run(base + textwrap.indent(textwrap.dedent(expect), "  "), engine)
    return [f.render(result.path) for f in result.failures]


# -- matchers ---------------------------------------------------------------------------------

MATCHERS = [
    # (matcher as written, a step it holds for, a step it does not hold for)
    ("MSFT", "{symbol: MSFT}", "{symbol: AAPL}"),
    ("{equals: 5}", "{days: 5}", "{days: 6}"),
    ("{contains: SF}", "{symbol: {contains: SF}}", "{symbol: {contains: AP}}"),
    ("{contains: tech}", "{tags: {contains: tech}}", "{tags: {contains: small}}"),
    ("{regex: '^MS'}", "{symbol: {regex: '^MS'}}", "{symbol: {regex: 'FT$x'}}"),
    ("{any: true}", "{days: {any: true}}", "{weeks: {any: true}}"),
    ("{between: [1, 5]}", "{days: {between: [1, 5]}}", "{days: {between: [6, 9]}}"),
    ("{one_of: [A, MSFT]}", "{symbol: {one_of: [A, MSFT]}}", "{symbol: {one_of: [A, B]}}"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("name", "holds", "fails"), MATCHERS, ids=[m[0] for m in MATCHERS])
def test_each_argument_matcher_holds_and_fails(
    engine: str, name: str, holds: str, fails: str
) -> None:
    del name
    good = f"trajectory: {{steps: [{{tool: get_quote, args: {holds}}}]}}\n"
    assert _failures(good, engine) == []
    bad = _failures(f"trajectory: {{steps: [{{tool: get_quote, args: {fails}}}]}}\n", engine)
    assert len(bad) == 1
    assert "x.loopsim.yaml:" in bad[0]
    assert "expect.trajectory" in bad[0]
    assert "args." in bad[0]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("holds", "fails"),
    [
        ('{contains: "420.50"}', '{contains: "421"}'),
        ('{regex: "^MSFT is \\\\d+"}', '{regex: "^AAPL"}'),
        ('"MSFT is 420.50 DONE"', '"MSFT is 420.50"'),
        ("{one_of: [x, MSFT is 420.50 DONE]}", "{one_of: [x, y]}"),
    ],
)
def test_text_matchers_on_model_turns(engine: str, holds: str, fails: str) -> None:
    assert _failures(f"trajectory: {{steps: [{{says: {holds}}}]}}\n", engine) == []
    bad = _failures(f"trajectory: {{steps: [{{says: {fails}}}]}}\n", engine)
    assert len(bad) == 1
    assert "says: expected" in bad[0]


def test_matcher_objects_match_as_their_written_forms() -> None:
    assert Equals(1).matches(1)
    assert not Equals(1).matches(True)  # a boolean is not a number here
    assert Contains("b").matches("abc")
    assert not Contains("x").matches("abc")
    assert not Contains("a").matches(5)
    assert Regex("^a").matches("ab")
    assert not Regex("^b").matches("ab")
    assert Anything().matches(None)
    assert Between(1, 2).matches(1.5)
    assert not Between(1, 2).matches(3)
    assert not Between(0, 2).matches(True)
    assert OneOf((1, 2)).matches(2)
    assert not OneOf((1, 2)).matches(3)
    with pytest.raises(ValueError, match="not a valid regular expression"):
        Regex("(")
    with pytest.raises(ValueError, match="empty"):
        Between(3, 1)
    with pytest.raises(ValueError, match="at least one choice"):
        OneOf(())


# -- modes ------------------------------------------------------------------------------------

GET_QUOTE = "{tool: get_quote}"
GET_NEWS = "{tool: get_news}"
OTHER = "{tool: place_order}"
MODES = [
    # (mode, steps that hold, steps that do not)
    ("exact", [GET_QUOTE, GET_NEWS], [GET_QUOTE]),
    ("exact", [GET_QUOTE, GET_NEWS], [GET_NEWS, GET_QUOTE]),
    ("in_order", [GET_NEWS], [GET_NEWS, GET_QUOTE]),
    ("in_order", [GET_QUOTE, GET_NEWS], [GET_QUOTE, OTHER]),
    ("any_order", [GET_NEWS, GET_QUOTE], [GET_NEWS]),
    ("any_order", [GET_NEWS, GET_QUOTE], [GET_NEWS, GET_QUOTE, OTHER]),
    ("subset", [GET_NEWS, GET_QUOTE, OTHER], [GET_QUOTE]),
    ("superset", [GET_NEWS], [GET_NEWS, OTHER]),
    ("superset", [GET_QUOTE], [GET_QUOTE, GET_QUOTE]),  # one step matches once
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("mode", "holds", "fails"), MODES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MODES)]
)
def test_each_mode_holds_and_fails(
    engine: str, mode: str, holds: list[str], fails: list[str]
) -> None:
    def block(steps: list[str]) -> str:
        return f"trajectory: {{mode: {mode}, kinds: [tool], steps: [{', '.join(steps)}]}}\n"

    assert _failures(block(holds), engine) == []
    bad = _failures(block(fails), engine)
    assert len(bad) == 1
    assert f"trajectory ({mode}) does not match" in bad[0]
    assert ">>" in bad[0]  # the first mismatch is marked


def test_the_failure_aligns_both_trajectories_with_time_and_agent() -> None:
    text = "trajectory: {mode: in_order, steps: [{tool: get_news}, {tool: get_quote}]}\n"
    (failure,) = _failures(text, "loopsim")
    lines = failure.splitlines()
    assert "expected step 2 (tool get_quote) was not found after step 1" in lines[0]
    assert "no later step of that kind; earlier: t=0s trader it 1 tool get_quote" in lines[0]
    assert lines[1].split() == ["expected", "|", "actual"]
    rows = lines[2:]
    assert rows[0].split("|")[0].strip() == ""  # get_quote, not matched in this order
    assert "1. tool get_news" in rows[1]
    assert "t=0s trader it 1" in rows[1]
    assert rows[2].lstrip().startswith(">> 2. tool get_quote")
    assert "(not found from here on)" in rows[2]
    assert rows[3].split("|")[1].strip() == 't=0s trader it 1       says "MSFT is 420.50 DONE"'


@pytest.mark.parametrize("engine", ENGINES)
def test_exact_compares_every_tool_says_and_task_step_unless_kinds_narrow_it(engine: str) -> None:
    tools = "[{tool: get_quote}, {tool: get_news}]"
    (failure,) = _failures(f"trajectory: {{mode: exact, steps: {tools}}}\n", engine)
    assert "at step 3: the run took a step more than the 2 expected" in failure
    narrowed = f"trajectory: {{mode: exact, kinds: [tool], steps: {tools}}}\n"
    assert _failures(narrowed, engine) == []


# -- scopes, windows and counts ---------------------------------------------------------------

BACKGROUND = """\
version: 1
agents:
  boss: {policy: coordinator}
  fast: {policy: {echo: {delay: 10}}}
  slow: {policy: {echo: {delay: 100}}}
parent: {agent: boss, background_agents: [fast, slow]}
steps:
  - run: go
expect:
"""

SCOPES = [
    (
        "{steps: [{task: 2, status: completed, by: 100}]}",
        "{steps: [{task: 2, status: completed, by: 99}]}",
    ),
    (
        "{steps: [{task: 1, status: completed, after: 10}]}",
        "{steps: [{task: 1, status: completed, after: 11}]}",
    ),
    ("{agent: boss, steps: [{tool: {any: true}}]}", "{agent: fast, steps: [{tool: {any: true}}]}"),
    ("{by: 10, steps: [{task: 1, status: completed}]}", "{by: 9, steps: [{status: completed}]}"),
    ("{after: 100, steps: [{task: 2, status: completed}]}", "{after: 101, steps: [{task: 2}]}"),
    (
        "{steps: [{tool: background_agents_start_task, at_least: 2, at_most: 2}]}",
        "{steps: [{tool: background_agents_start_task, at_most: 1}]}",
    ),
    (
        "{steps: [{tool: background_agents_get_task_results, at_least: 2}]}",
        "{steps: [{tool: background_agents_get_task_results, at_least: 3}]}",
    ),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("holds", "fails"), SCOPES)
def test_windows_agents_and_counts_hold_and_fail(engine: str, holds: str, fails: str) -> None:
    assert _failures(f"trajectory: {holds}\n", engine, BACKGROUND) == []
    bad = _failures(f"trajectory: {fails}\n", engine, BACKGROUND)
    assert len(bad) == 1
    assert "expect.trajectory" in bad[0]


LOOP = """\
version: 1
agents:
  worker:
    script:
      - tool_call: {name: check, arguments: {}}
      - reply: not yet
      - tool_call: {name: check, arguments: {}}
      - {tool_call: {name: check, arguments: {}}}
      - reply: done DONE
    tools:
      check: {result: ok}
parent: {agent: worker}
loop:
  evaluators: [completion_marker]
steps:
  - run: go
expect:
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_per_iteration_holds_the_shape_to_each_iteration(engine: str) -> None:
    holds = "{per_iteration: true, steps: [{tool: check}, {says: {any: true}}]}"
    assert _failures(f"trajectory: {holds}\n", engine, LOOP) == []
    fails = "{per_iteration: true, steps: [{tool: check, at_most: 1}]}"
    bad = _failures(f"trajectory: {fails}\n", engine, LOOP)
    assert len(bad) == 1
    assert "in iteration 2 (t=0s): steps[0]: expected at most 1" in bad[0]


# -- never: and approvals ---------------------------------------------------------------------

APPROVAL = """\
version: 1
agents:
  ops:
    script:
      - approval_request: {name: delete_file, arguments: {path: /tmp/x}}
      - reply: deleted DONE
    tools:
      delete_file: {result: deleted, approval_required: REQUIRED}
parent: {agent: ops}
loop:
  evaluators: [completion_marker]
steps:
  - run: clean up
  - approve: true
expect:
  never:
    - {tool: delete_file, approved: false}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_never_catches_a_call_made_without_its_approval(engine: str) -> None:
    assert _run(APPROVAL.replace("REQUIRED", "true"), engine).failures == []
    # the tool was set up without its approval: the model's call simply runs
    text = (
        APPROVAL.replace("REQUIRED", "false")
        .replace("approval_request:", "tool_call:")
        .replace("  - approve: true\n", "")
    )
    (failure,) = _run(text, engine).failures
    assert failure.location == "expect.never[0]"
    assert failure.line == text.splitlines().index("    - {tool: delete_file, approved: false}") + 1
    assert "forbidden step (tool delete_file approved=false) 1 time(s)" in failure.message
    assert ">> t=0s ops it 1" in failure.message


def test_assert_never_and_trajectory_read_approvals_from_the_host_steps() -> None:
    result = _run(APPROVAL.replace("REQUIRED", "true"))
    assert_never(result, [{"tool": "delete_file", "approved": False}])
    assert_trajectory(
        result,
        [
            {"host": "run"},
            {"host": "approve", "approved": True},
            {"tool": "delete_file", "approved": True},
            {"says": Anything()},
        ],
        mode="exact",
    )
    with pytest.raises(AssertionError, match=r"steps\[0\]: the run took a forbidden step"):
        assert_never(result, [{"tool": "delete_file"}])
    # a bare transcript has no host steps: the loop's approval_pending stop stands for it
    assert result.transcript is not None
    assert_never(result.transcript, [{"tool": "delete_file", "approved": False}])


# -- Python: assert_trajectory ----------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_assert_trajectory_on_results_and_recorded_transcripts(engine: str, tmp_path: Path) -> None:
    result = _run(TRADER + "  iterations: 1\n", engine)
    steps: list[dict[str, Any]] = [
        {"tool": "get_quote", "agent": "trader", "args": {"days": Between(1, 9)}},
        {"tool": "get_news", "result": Contains("calm")},
        {"says": Regex(r"420\.50")},
    ]
    assert_trajectory(result, steps, mode="exact")
    assert result.transcript is not None
    path = result.write_transcript(tmp_path)
    assert path is not None
    assert_trajectory(path, steps, mode="exact")  # the file, read back
    assert_trajectory(result.transcript, steps[1:], agent="trader")
    with pytest.raises(AssertionError, match=r"at step 1: tool: expected \"get_news\""):
        assert_trajectory(result, steps[1:], mode="exact")


def test_assert_trajectory_names_a_step_written_wrong() -> None:
    result = _run(TRADER + "  iterations: 1\n")
    with pytest.raises(ValueError, match=r"steps\.0: a step names exactly one of tool"):
        assert_trajectory(result, [{"agent": "trader"}])
    with pytest.raises(ValueError, match=r"steps\.0\.args\.x: not a valid regular expression"):
        assert_trajectory(result, [{"tool": "a", "args": {"x": {"regex": "("}}}])
    with pytest.raises(ValueError, match="unknown mode 'fuzzy'"):
        assert_trajectory(result, [{"tool": "a"}], mode="fuzzy")
    with pytest.raises(TypeError, match="expected a ScenarioResult"):
        steps_of(42)


# -- bad input in scenario files --------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "where", "said"),
    [
        ("trajectory: {steps: []}", "expect.trajectory.steps", "at least 1 item"),
        ("trajectory: [{tool: a}]", "expect.trajectory", "mapping"),
        (
            "trajectory: {steps: [{tool: a, says: b}]}",
            "expect.trajectory.steps[0]",
            "exactly one of",
        ),
        ("trajectory: {steps: [{tool: a, sayz: b}]}", "expect.trajectory.steps[0].sayz", "says"),
        (
            "trajectory: {steps: [{tool: {regex: '('}}]}",
            "expect.trajectory.steps[0].tool",
            "not a valid regular expression",
        ),
        ("trajectory: {steps: [{tool: {between: [3, 1]}}]}", "steps[0].tool", "is empty"),
        ("trajectory: {steps: [{tool: {contains: a, regex: b}}]}", "steps[0].tool", "one key"),
        ("trajectory: {mode: fuzzy, steps: [{tool: a}]}", "expect.trajectory.mode", "exact"),
        ("trajectory: {steps: [{tool: a, at_least: 0}]}", "steps[0]", "checks nothing"),
        ("trajectory: {steps: [{tool: a, after: 5, by: 1}]}", "steps[0]", "no time fits"),
        ("never: []", "expect.never", "forbids nothing"),
        ("never: [{tool: a, at_most: 1}]", "expect.never", "forbidden outright"),
        ("trajectories: []", "expect.trajectories", "checks nothing"),
    ],
)
def test_a_trajectory_written_wrong_is_a_located_error(block: str, where: str, said: str) -> None:
    text = TRADER + f"  {block}\n"
    with pytest.raises(loopsim.ScenarioError) as caught:
        load_scenario_text(text, path="x.loopsim.yaml")
    message = str(caught.value)
    assert message.startswith(f"x.loopsim.yaml:{TRADER.count(chr(10)) + 1}:"), message
    assert where in message
    assert said in message


def test_the_html_report_shows_the_whole_aligned_table() -> None:
    text = BACKGROUND + "  trajectory: {mode: exact, steps: [{tool: {any: true}}]}\n"
    result = _run(text)
    (failure,) = [f.render(result.path) for f in result.failures]
    page = build_report([entry_from_result(result)])
    rows = failure.splitlines()
    assert len(failure) > 2000  # longer than any other kind of failure is shown
    for row in rows[1:]:  # every row of the table, escaped as HTML
        assert html.escape(row, quote=True).strip() in page


STEPWISE = """\
version: 1
agents:
  ops:
    script:
      - tool_call: {name: look, arguments: {}}
      - approval_request: {name: delete_file, arguments: {path: /tmp/x}}
      - reply: deleted DONE
    tools:
      look: {result: a file}
      delete_file: {result: deleted, approval_required: true}
parent: {agent: ops}
loop:
  evaluators: [completion_marker]
steps:
  - run: clean up
    expect:
      trajectory: {mode: exact, kinds: [tool], steps: [{tool: look}]}
  - approve: true
    expect:
      trajectory: {mode: exact, kinds: [tool], steps: [{tool: STEP_TWO, approved: true}]}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_steps_own_trajectory_sees_only_what_that_step_did(engine: str) -> None:
    assert _run(STEPWISE.replace("STEP_TWO", "delete_file"), engine).failures == []
    (failure,) = _run(STEPWISE.replace("STEP_TWO", "look"), engine).failures
    assert failure.location == "steps[1].expect.trajectory.steps[0]"
    assert 'tool: expected "look", got "delete_file"' in failure.message


def test_a_failure_points_at_the_line_of_the_expected_step_at_fault() -> None:
    text = TRADER + (
        "  trajectory:\n"
        "    steps:\n"
        "      - {tool: get_quote}\n"
        "      - {tool: get_news, args: {symbol: AAPL}}\n"
        "      - {says: {any: true}}\n"
    )
    result = _run(text)
    (failure,) = result.failures
    assert failure.location == "expect.trajectory.steps[1]"
    assert (
        failure.line
        == text.splitlines().index("      - {tool: get_news, args: {symbol: AAPL}}") + 1
    )


SHIPPED = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.loopsim.yaml"))


@pytest.mark.parametrize(
    "path",
    [p for p in SHIPPED if "trajector" in p.read_text(encoding="utf-8")],
    ids=lambda p: p.name.split(".")[0],
)
def test_a_scenario_that_ran_still_equals_a_fresh_load_of_its_file(path: Path) -> None:
    # The compiled trajectories the models keep are part of their equality.
    ran, fresh = loopsim.load_scenario(path), loopsim.load_scenario(path)
    loopsim.run_scenario(ran)
    assert ran.scenario == fresh.scenario
    assert ran.scenario.model_dump() == fresh.scenario.model_dump()
