"""Hostile scenario input: every file loads or ends in one located ScenarioError, fast.

The single-error cases live in the corpus (tests/data/invalid_scenarios); here are the
behaviours around them: the YAML 1.2 core schema, aliases and their bounds, the limits as
a setting, every error of a file at once, bounded messages, names that are file names.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ConfigDict, create_model

import loopsim
from loopsim import ScenarioError, ScenarioLimits
from loopsim._scenario import DEFAULT_LIMITS, load_scenario_text, run_scenario
from loopsim.cli import main

BASE = """\
version: 1
agents:
  writer:
    tools:
      probe: {{result: {value}}}
    script:
      - tool_call: {{name: probe}}
      - reply: done
parent: {{agent: writer}}
steps:
  - run: go
"""


def _result(value: str) -> Any:
    loaded = load_scenario_text(BASE.format(value=value))
    return loaded.scenario.agents["writer"].tools["probe"].result


# -- YAML 1.2 core schema (issue 13, item 9) ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e3", 1000.0),
        ("-2.5E-1", -0.25),
        (".5", 0.5),
        ("12", 12),
        ("012", 12),  # core schema: decimal, not YAML 1.1 octal
        ("0o17", 15),
        ("0x1F", 31),
        ("1_000", "1_000"),  # YAML 1.1 read this as 1000
        ("on", "on"),
        ("off", "off"),
        ("yes", "yes"),
        ("no", "no"),
        ("y", "y"),
        ("True", True),
        ("FALSE", False),
        ("~", None),
        ("null", None),
        ("2024-01-01", "2024-01-01"),  # no timestamps
        ("'1e3'", "1e3"),  # quoted: always text
        ("!!str 12", "12"),
        ("!!float 1", 1.0),
        ("!!int 0x10", 16),
        ("! 12", "12"),
    ],
)
def test_scalars_follow_the_yaml_1_2_core_schema(text: str, value: Any) -> None:
    got = _result(text)
    assert got == value
    assert type(got) is type(value)


def test_infinity_is_a_number_but_not_a_tool_result() -> None:
    with pytest.raises(ScenarioError) as info:
        _result(".inf")
    assert info.value.location == "agents.writer.tools.probe.result"
    assert "JSON has no NaN or infinity" in info.value.problem


def test_an_on_key_is_text_and_a_delay_of_1e3_runs_1000_seconds() -> None:
    text = """\
version: 1
agents:
  writer:
    tools:
      switch: {}
    script:
      - tool_call: {name: switch, arguments: {on: yes, off: no}}
      - reply: done
        delay: 1e3
parent: {agent: writer}
steps:
  - run: go
expect:
  elapsed: 1000
"""
    loaded = load_scenario_text(text)
    call = loaded.scenario.agents["writer"].script[0].calls[0]  # type: ignore[index] # a script
    assert call.arguments == {"on": "yes", "off": "no"}
    result = run_scenario(loaded)
    assert result.passed, result.report()
    assert result.elapsed == 1000


# -- aliases --------------------------------------------------------------------------------------


def test_aliases_and_merge_keys_still_work_and_give_independent_copies() -> None:
    text = """\
version: 1
agents:
  first: &agent
    script: [done]
    description: the first
  second:
    <<: *agent
    description: the second
parent: {agent: first, background_agents: [second]}
steps:
  - run: go
"""
    loaded = load_scenario_text(text)
    agents = loaded.data["agents"]
    assert agents["second"] == {"script": ["done"], "description": "the second"}
    assert agents["first"]["script"] is not agents["second"]["script"]


def _bomb(levels: int, width: int = 9) -> str:
    lines = ["version: 1", f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_by_node_count_at_its_line() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario_text(_bomb(10))
    assert "more than 100,000 values" in info.value.problem
    assert info.value.line is not None
    assert info.value.line <= 10
    assert info.value.expected is not None
    assert "ScenarioLimits.max_nodes" in info.value.expected


def test_the_limits_are_a_setting() -> None:
    small = _bomb(4, width=4)  # 4 + 16 + 64 + 256 expanded values
    with pytest.raises(ScenarioError, match="more than 300 values"):
        load_scenario_text(small, limits=ScenarioLimits(max_nodes=300))
    # with a larger bound the same file gets past the reader (and fails on the schema)
    with pytest.raises(ScenarioError, match='missing required key "agents"'):
        load_scenario_text(small, limits=ScenarioLimits(max_nodes=1000))


def test_depth_counts_through_aliases() -> None:
    text = "version: 1\na: &a [[[1]]]\nb: [[*a]]\n"
    with pytest.raises(ScenarioError) as info:
        load_scenario_text(text, limits=ScenarioLimits(max_depth=5))
    assert info.value.location == "b[0][0]"
    assert info.value.line == 3
    with pytest.raises(ScenarioError, match='missing required key "agents"'):
        load_scenario_text(text, limits=ScenarioLimits(max_depth=6))


def test_a_file_over_the_size_limit_is_refused_before_parsing() -> None:
    text = "version: 1\ndescription: " + "x" * 5000 + "\n"
    with pytest.raises(ScenarioError, match="more than the 1,000 a scenario may have"):
        load_scenario_text(text, limits=ScenarioLimits(max_bytes=1000))


# -- every error of a file (issue 13, item 8) -------------------------------------------------


THREE_PROBLEMS = """\
version: 1
agents:
  writer:
    script:
      - reply: one
        delay: soon
      - reply: two
        delay: -1
parent: {agent: writer}
steps:
  - run: go
  - advance: later
"""


def test_every_schema_error_of_a_file_is_reported_in_order_each_located() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario_text(THREE_PROBLEMS, path="three.yaml")
    errors = info.value.errors
    assert [(e.line, e.location) for e in errors] == [
        (6, "agents.writer.script[0].delay"),
        (8, "agents.writer.script[1].delay"),
        (12, "steps[1].advance"),
    ]
    assert all(e.path == Path("three.yaml") for e in errors)
    assert str(info.value) == str(errors[0])  # the first alone, as before


def test_every_reference_error_is_reported_and_the_list_is_capped() -> None:
    calls = ", ".join(f"ghost{i}: 1" for i in range(30))
    text = (
        "version: 1\nagents:\n  writer: {script: [done]}\nparent: {agent: writer}\n"
        f"steps:\n  - run: go\nexpect:\n  calls: {{{calls}}}\n"
    )
    with pytest.raises(ScenarioError) as info:
        load_scenario_text(text)
    assert len(info.value.errors) == 20
    assert info.value.omitted == 10
    assert [e.location for e in info.value.errors[:2]] == [
        "expect.calls.ghost0",
        "expect.calls.ghost1",
    ]
    limited = ScenarioLimits(max_errors=3)
    with pytest.raises(ScenarioError) as again:
        load_scenario_text(text, limits=limited)
    assert (len(again.value.errors), again.value.omitted) == (3, 27)


def test_validate_prints_every_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "three.loopsim.yaml"
    file.write_text(THREE_PROBLEMS, encoding="utf-8")
    assert main(["validate", str(file)]) == 2
    out = capsys.readouterr().out
    for line, where in ((6, "script[0].delay"), (8, "script[1].delay"), (12, "steps[1].advance")):
        assert f"{file}:{line}: " in out
        assert where in out


def test_validate_says_how_many_more_errors_it_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = ", ".join(f"ghost{i}: 1" for i in range(25))
    file = tmp_path / "ghosts.loopsim.yaml"
    file.write_text(
        "version: 1\nagents:\n  writer: {script: [done]}\nparent: {agent: writer}\n"
        f"steps:\n  - run: go\nexpect:\n  calls: {{{calls}}}\n",
        encoding="utf-8",
    )
    assert main(["validate", str(file)]) == 2
    out = capsys.readouterr().out
    assert out.count("unknown agent") == 20
    assert "… and 5 more problem(s) in this file" in out


def test_errors_survive_pickling_with_their_companions() -> None:
    import pickle

    with pytest.raises(ScenarioError) as info:
        load_scenario_text(THREE_PROBLEMS)
    clone = pickle.loads(pickle.dumps(info.value))  # noqa: S301 - our own object, just pickled
    assert [e.location for e in clone.errors] == [e.location for e in info.value.errors]


# -- bounded messages (issue 14, item 13) -----------------------------------------------------


def test_a_message_about_10000_agents_stays_short() -> None:
    agents = "".join(f"  a{i}: {{script: [done]}}\n" for i in range(10_000))
    text = f"version: 1\nagents:\n{agents}parent: {{agent: nobody}}\nsteps:\n  - run: go\n"
    with pytest.raises(ScenarioError) as info:
        load_scenario_text(text)
    assert info.value.location == "parent.agent"
    assert "… and 9980 more" in info.value.problem
    assert len(str(info.value)) < 1000


# -- names (issue 14, items 7 and 13) ---------------------------------------------------------

FAILING = """\
version: 1
name: {name}
agents:
  writer: {{script: [done]}}
parent: {{agent: writer}}
steps:
  - run: go
expect:
  response: {{equals: not this}}
"""


@pytest.mark.parametrize(
    "name",
    ['"../../escaped"', '"/tmp/absolute"', '"' + "long" * 100 + '"', '".."', '"a/b\\\\c"'],
    ids=["traversal", "absolute", "over-255-bytes", "dot-dot", "separators"],
)
def test_a_name_never_writes_outside_the_transcript_folder(tmp_path: Path, name: str) -> None:
    loaded = load_scenario_text(FAILING.format(name=name))
    result = run_scenario(loaded)
    assert not result.passed
    folder = tmp_path / "transcripts"
    written = result.write_transcript(folder)
    assert written is not None
    assert written.parent == folder
    assert written.is_file()
    assert len(written.name.encode()) <= 255
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [written.name]
    assert loaded.name in result.report(transcript_path=written)


def test_a_run_with_a_hostile_name_reports_its_real_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "hostile.loopsim.yaml"
    file.write_text(FAILING.format(name='"../../' + "x" * 300 + '"'), encoding="utf-8")
    out_dir = tmp_path / "out"
    code = main(
        ["run", str(file), "-q", "-p", "no:cacheprovider", f"--loopsim-transcripts={out_dir}"]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "expected the response to equal" in out or "not this" in out
    assert "Traceback" not in out
    written = list(out_dir.iterdir())
    assert len(written) == 1
    assert written[0].name.endswith(".transcript.json")
    assert not [p for p in tmp_path.parent.iterdir() if p.name.startswith("xxxx")]


# -- tool calls (issue 14, item 10) -------------------------------------------------------------


def test_tool_arguments_may_have_any_json_name(backend: str) -> None:
    text = f"""\
version: 1
backend: {backend}
agents:
  writer:
    tools:
      save: {{result: saved, parameters: [path]}}
    script:
      - tool_call:
          name: save
          arguments: {{class: report, file-name: a.txt, _hidden: 1, model_fields: 2}}
      - reply: done
parent: {{agent: writer}}
steps:
  - run: go
expect:
  calls: {{writer: 2}}
"""
    result = run_scenario(load_scenario_text(text))
    assert result.passed, result.report()
    (event,) = [e for e in result.events if e.kind == "tool_call"]
    assert event.data["arguments"] == {
        "class": "report",
        "file-name": "a.txt",
        "_hidden": 1,
        "model_fields": 2,
    }
    (outcome,) = [e for e in result.events if e.kind == "tool_result"]
    assert outcome.data["result"] == "saved"
    assert outcome.data["error"] is None


def test_a_finite_float_tool_result_is_fine() -> None:
    assert math.isclose(_result("2.5"), 2.5)


# -- the limits page tells the truth -------------------------------------------------------------

LIMITS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "limits.md"


def test_the_limits_page_gives_the_defaults() -> None:
    section = LIMITS_PAGE.read_text(encoding="utf-8").split("## Scenario files", 1)[1]
    for one in dataclasses.fields(ScenarioLimits):
        match = re.search(rf"\(`{one.name}`\) \| ([\d,]+)", section)
        assert match is not None, f"{one.name} is not in docs/limits.md"
        assert int(match.group(1).replace(",", "")) == getattr(DEFAULT_LIMITS, one.name)


def test_the_limits_page_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    text = LIMITS_PAGE.read_text(encoding="utf-8")
    # the page has examples of other limits too: this is the one about ScenarioLimits
    (code,) = [
        c for c in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if "ScenarioLimits" in c
    ]
    monkeypatch.chdir(LIMITS_PAGE.parent.parent)
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/limits.md", "exec"), namespace)  # noqa: S102 - the page's example
    assert namespace["loaded"].scenario.agents


def test_both_engines_pass_argument_names_that_are_no_identifiers() -> None:
    upstream_package = pytest.importorskip(
        "agent_framework", reason="agent-framework-core (the bench extra) is not installed"
    )
    arguments = {"class": "report", "file-name": "a.txt"}
    ours: dict[str, Any] = {}
    theirs: dict[str, Any] = {}

    def keep_ours(**kwargs: Any) -> str:
        ours.update(kwargs)
        return "ok"

    def keep_theirs(**kwargs: Any) -> str:
        theirs.update(kwargs)
        return "ok"

    model = create_model(
        "save_arguments",
        __config__=ConfigDict(extra="forbid"),
        **dict.fromkeys(arguments, (Any, None)),
    )
    mine = loopsim.FunctionTool(keep_ours, name="save", input_model=model)
    upstream = upstream_package.FunctionTool(
        name="save",
        func=keep_theirs,
        input_model={"type": "object", "properties": {name: {} for name in arguments}},
    )

    async def both() -> None:
        await mine.invoke(arguments)
        await upstream.invoke(arguments=arguments)

    anyio.run(both)
    assert ours == theirs == arguments


VARIED = """\
version: 1
agents:
  writer: {script: [done]}
parent: {agent: writer}
steps:
  - run: go
vary:
  seed: {one_of: [1, 2, 3, 4, 5, 6, 7, 8]}
  agents.writer.script[0]: {one_of: [a, b]}
"""


def test_the_draws_validate_checks_are_bounded_by_their_work() -> None:
    load_scenario_text(VARIED)  # 10 draws of a 27-value document: well inside the default
    with pytest.raises(ScenarioError) as info:
        load_scenario_text(VARIED, limits=ScenarioLimits(max_vary_values=100))
    assert info.value.location == "vary.seed"
    assert "validates 8 copies of a 27-value document (216 values)" in info.value.problem
    assert info.value.line == 8
    with pytest.raises(ScenarioError) as second:  # the first fits, the budget runs out after
        load_scenario_text(VARIED, limits=ScenarioLimits(max_vary_values=250))
    assert second.value.location == "vary[agents.writer.script[0]]"
