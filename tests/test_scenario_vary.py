"""``vary:`` scenarios: paths, draws, shrinking, reproducer files and ``always:``."""

from __future__ import annotations

import copy
import gc
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from loopsim._clock._gc import SIMULATION_THRESHOLDS
from loopsim._errors import ScenarioError
from loopsim._scenario import (
    load_scenario,
    load_scenario_text,
    run_scenario,
    run_vary,
    write_reproducer,
)
from loopsim._scenario._source import LoadedScenario
from loopsim._scenario._vary import strategy
from loopsim._scenario._vary_paths import DrawValidator, apply_draw, concrete, parse_path

ROOT = Path(__file__).parent.parent
VARY_SCENARIOS = sorted((ROOT / "scenarios").glob("vary_*.loopsim.yaml"))

DELAYED = """\
version: 1
agents:
  boss: {policy: coordinator}
  worker: {policy: {echo: {delay: 5}}}
parent: {agent: boss, background_agents: [worker]}
steps:
  - run: go
vary:
  agents.worker.policy.echo.delay: {between: [0, 600]}
vary_settings: {max_examples: 60}
always:
  elapsed: {max: 100}
"""

TIED = """\
version: 1
agents:
  boss: {policy: coordinator}
  left: {policy: {echo: {delay: 7}}}
  right: {policy: {echo: {delay: 7}}}
parent: {agent: boss, background_agents: [left, right]}
ties: [0]
steps:
  - run: go
vary:
  agents.left.policy.echo.prefix: {one_of: ["echo: ", "said: "]}
vary_settings: {max_examples: 30}
always:
  response: {contains: ["task 1 (left)", "task 2 (right)"]}
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.loopsim.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("agents.worker.policy.echo.delay", ("agents", "worker", "policy", "echo", "delay")),
        ("steps[2]", ("steps", 2)),
        (
            "loop.evaluators[0].delegate.decisions[3]",
            ("loop", "evaluators", 0, "delegate", "decisions", 3),
        ),
        ("agents..worker", None),
        ("steps[x]", None),
        ("", None),
    ],
)
def test_paths_are_dotted_keys_with_indices(text: str, parts: tuple[object, ...] | None) -> None:
    assert parse_path(text) == parts


def test_at_least_five_shipped_scenarios_vary() -> None:
    assert len(VARY_SCENARIOS) >= 5
    for path in VARY_SCENARIOS:
        scenario = load_scenario(path).scenario
        assert scenario.vary
        assert scenario.vary_settings is not None
        assert scenario.vary_settings.max_examples is not None
        assert scenario.vary_settings.max_examples <= 25


@pytest.mark.parametrize("path", VARY_SCENARIOS, ids=[p.name.split(".")[0] for p in VARY_SCENARIOS])
def test_shipped_vary_scenarios_hold_for_every_draw(path: Path) -> None:
    loaded = load_scenario(path)
    run = run_vary(loaded, seeded=True)
    assert run.result.passed, run.result.report(tail=0)
    assert run.document is None
    settings = loaded.scenario.vary_settings
    assert settings is not None
    assert run.examples >= min(5, settings.max_examples or 5)
    # no draw failed on the way: nothing was shrunk (a draw hypothesis ended part-way
    # while a tie was drawn once read as a failure and was shrunk on)
    assert run.shrinks == 0


def test_a_failing_draw_is_shrunk_to_the_boundary(tmp_path: Path) -> None:
    run = run_vary(load_scenario(_write(tmp_path, "delayed", DELAYED)), seeded=True)
    result = run.result
    assert not result.passed
    assert result.draw == {"agents.worker.policy.echo.delay": 101}
    assert [f.location for f in result.failures] == ["always.elapsed.max"]
    assert result.failures[0].line == 12
    assert "shrunk draw:" in result.report()
    assert "agents.worker.policy.echo.delay: 101" in result.report()


def test_seeded_runs_repeat(tmp_path: Path) -> None:
    loaded = load_scenario(_write(tmp_path, "delayed", DELAYED))
    first, second = (run_vary(loaded, seeded=True) for _ in range(2))
    assert first.examples == second.examples
    assert first.result.draw == second.result.draw


def test_the_reproducer_alone_fails_the_same_way(tmp_path: Path) -> None:
    loaded = load_scenario(_write(tmp_path, "delayed", DELAYED))
    run = run_vary(loaded, seeded=True)
    folder = tmp_path / "reproducers"
    written = write_reproducer(loaded, run.result, run.document, folder)
    assert written == folder / "delayed.loopsim.yaml"
    assert (folder / "delayed.transcript.json").is_file()
    assert not list(folder.glob(".*"))  # the temporary file was renamed, not left behind
    data = yaml.safe_load(written.read_text(encoding="utf-8"))
    assert "vary" not in data
    assert "always" not in data
    assert data["expect"] == {"elapsed": {"max": 100}}
    assert data["agents"]["worker"]["policy"]["echo"]["delay"] == 101
    again = run_scenario(load_scenario(written))
    assert [f.message for f in again.failures] == [f.message for f in run.result.failures]
    assert [f.location for f in again.failures] == ["expect.elapsed.max"]
    assert again.transcript is not None
    assert run.result.transcript is not None
    assert again.transcript.to_json() == run.result.transcript.to_json()


def test_tie_choices_are_drawn_and_pinned_in_the_reproducer(tmp_path: Path) -> None:
    loaded = load_scenario(_write(tmp_path, "tied", TIED))
    assert run_scenario(loaded, blocks=("always",)).ties  # the tie exists in every draw
    run = run_vary(loaded, seeded=True)
    assert not run.result.passed
    assert run.result.ties == [1]  # right seen first: task 2 collected before task 1
    assert run.result.draw == {"agents.left.policy.echo.prefix": "echo: "}
    written = write_reproducer(loaded, run.result, run.document, tmp_path / "out")
    assert yaml.safe_load(written.read_text(encoding="utf-8"))["ties"] == [1]
    again = run_scenario(load_scenario(written))
    assert [f.message for f in again.failures] == [f.message for f in run.result.failures]
    assert again.transcript is not None
    assert run.result.transcript is not None  # the draws ran unrecorded; this one again
    assert again.transcript.to_json() == run.result.transcript.to_json()
    # on both engines: each engine's transcript of the failing draw is there
    both = run_vary(loaded, seeded=True, engine="both").result
    assert both.ties == [1]
    assert both.transcript is not None
    assert both.other is not None
    assert both.other.transcript is not None


def test_the_file_as_written_is_checked_first_against_expect_and_always(tmp_path: Path) -> None:
    text = DELAYED.replace("always:\n  elapsed: {max: 100}", "expect: {elapsed: 6}\nalways: {}")
    run = run_vary(load_scenario(_write(tmp_path, "base", text)), seeded=True)
    assert run.examples == 1
    assert run.result.draw is None
    assert [f.location for f in run.result.failures] == ["expect.elapsed"]


def test_always_without_vary_is_checked_on_the_one_run() -> None:
    text = DELAYED.split("vary:", maxsplit=1)[0] + "always: {elapsed: 4}\n"
    result = run_scenario(load_scenario_text(text))
    assert [(f.location, f.message) for f in result.failures] == [
        ("always.elapsed", "expected 4s of virtual time, got 5s")
    ]


def test_draws_without_always_still_check_errors_and_invariants(tmp_path: Path) -> None:
    text = DELAYED.replace("always:\n  elapsed: {max: 100}\n", "").replace(
        "{between: [0, 600]}", "{one_of: [5, 10]}"
    )
    text = text.replace("policy: coordinator", "script: [{reply: one}]")
    text = text.replace("steps:\n  - run: go", "steps:\n  - run: go\n  - run: again")
    run = run_vary(load_scenario(_write(tmp_path, "errors", text)), seeded=True)
    assert not run.result.passed
    assert run.result.failures[0].kind == "error"


STRICT = """\
version: 1
strict: true
agents:
  worker: {policy: {echo: {delay: 5}}}
parent: {agent: worker}
steps:
  - run: go
  - advance: 3
expect:
  elapsed: {min: 8}
  response: {contains: "echo: go"}
vary:
  agents.worker.policy.echo.delay: {between: [0, 600]}
vary_settings: {max_examples: 25}
always:
  response: {contains: "echo: go"}
"""


def test_a_strict_files_draws_are_not_run_again_without_each_step(tmp_path: Path) -> None:
    # A draw checks `always:`; whether a step matters is a question about the file's
    # `expect:`, asked of the file as written. A draw with delay >= 8 needs no advance
    # to reach `elapsed: {min: 8}`: that must not fail the draw.
    loaded = load_scenario(_write(tmp_path, "strict", STRICT))
    for engine in ("loopsim", "agent_framework"):
        run = run_vary(loaded, seeded=True, engine=engine)
        assert run.result.passed, run.result.report()
        assert run.examples > 1
    # the file as written is still looked at: there the advance matters, or it fails
    weak = STRICT.replace("elapsed: {min: 8}", "elapsed: {min: 5}")
    for engine in ("loopsim", "agent_framework"):
        base = run_vary(load_scenario(_write(tmp_path, "weak", weak)), seeded=True, engine=engine)
        assert base.examples == 1
        assert [f.location for f in base.result.failures] == ["steps[1]"]


SHARED = """\
version: 1
agents:
  worker: {policy: {echo: {delay: 5, prefix: "echo: "}}}
parent: {agent: worker}
steps:
  - run: go
vary:
  agents.worker.policy.echo.delay: {one_of: [5, 50]}
  agents.worker.policy.echo.prefix: {one_of: ["echo: ", "said: "]}
  steps: {list_of: {one_of: [{run: go}, {run: again}]}, min_size: 1, max_size: 2}
vary_settings: {max_examples: 40}
always:
  response: {not_contains: "said: again"}
  elapsed: {max: 20}
"""


def test_draws_leave_the_file_as_written_unchanged(tmp_path: Path) -> None:
    # two paths through the same mapping, and a drawn list of mappings: each draw applies
    # all of them to its own copy, and the loaded document is left as it was
    loaded = load_scenario(_write(tmp_path, "shared", SHARED))
    before = yaml.safe_dump(loaded.data)
    run = run_vary(loaded, seeded=True)
    assert yaml.safe_dump(loaded.data) == before
    assert not run.result.passed
    assert run.result.draw is not None
    echo = run.document["agents"]["worker"]["policy"]["echo"]
    assert echo == {
        "delay": run.result.draw["agents.worker.policy.echo.delay"],
        "prefix": run.result.draw["agents.worker.policy.echo.prefix"],
    }
    assert run.document["steps"] == run.result.draw["steps"]
    assert run.document["steps"] is not run.result.draw["steps"]
    assert run_scenario(loaded).passed  # the file as written still runs as written
    again = run_scenario(
        load_scenario(write_reproducer(loaded, run.result, run.document, tmp_path / "out"))
    )
    assert [f.message for f in again.failures] == [f.message for f in run.result.failures]


def test_the_collector_thresholds_hold_for_the_whole_property(tmp_path: Path) -> None:
    # raised between the draws too (hypothesis's own work), restored after, pass or fail
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        seen: set[tuple[int, ...]] = set()
        for text in (DELAYED, DELAYED.replace("{max: 100}", "{max: 700}")):
            loaded = load_scenario(_write(tmp_path, "delayed", text))
            run_vary(loaded, seeded=True, progress=lambda *_: seen.add(gc.get_threshold()))
            assert gc.get_threshold() == (700, 10, 10)
        assert seen == {SIMULATION_THRESHOLDS}
    finally:
        gc.set_threshold(*saved)


def _vary_files() -> list[LoadedScenario]:
    texts = [DELAYED, TIED, SHARED, STRICT]
    return [*(load_scenario(p) for p in VARY_SCENARIOS), *map(load_scenario_text, texts)]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_draw_validated_section_by_section_is_the_whole_documents_scenario(
    data: st.DataObject,
) -> None:
    # DrawValidator validates only the sections a draw changes; it must give exactly
    # the scenario validating the whole drawn document gives
    loaded = data.draw(st.sampled_from(_vary_files()))
    paths = [
        (parse_path(text) or (), strategy(spec)) for text, spec in loaded.scenario.vary.items()
    ]
    document = copy.deepcopy(loaded.data)
    document.pop("ties", None)
    for parts, values in paths:
        apply_draw(document, parts, copy.deepcopy(data.draw(values)))
    whole = concrete(loaded, document).scenario
    drawn = DrawValidator(loaded, [parts for parts, _ in paths])(document).scenario
    assert drawn == whole
    assert drawn.model_dump() == whole.model_dump()
    assert drawn.model_fields_set == whole.model_fields_set


def test_an_invalid_draw_is_reported_as_the_whole_document_reports_it() -> None:
    loaded = load_scenario_text(DELAYED)
    check = DrawValidator(loaded, [("agents", "worker", "policy", "echo", "delay")])
    document = copy.deepcopy(loaded.data)
    document["agents"]["worker"]["policy"]["echo"]["delay"] = -5
    with pytest.raises(ScenarioError) as whole:
        concrete(loaded, document)
    with pytest.raises(ScenarioError) as drawn:
        check(document)
    assert str(drawn.value) == str(whole.value)
    assert "agents.worker.policy.echo.delay" in str(drawn.value)
