"""Every shipped scenario's diagrams, rendered by Mermaid 11 in headless Chromium.

One browser process renders all diagrams (one page). For each: Mermaid raised no error;
every timeline bar sits where its virtual times say (x and width fitted to one linear
time scale, read from the rendered SVG), with the class of its status; restarts are
vertical lines at their instant; sequence texts show no literal ``\\n``; every host call
is drawn with its input; long runs fold to a bounded height.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mermaid_page import render_all

import loopsim
from loopsim._scenario import load_scenario, load_scenario_text, run_scenario
from loopsim._transcript._mermaid import host_calls
from loopsim._transcript._spans import spans

SCENARIOS = sorted((Path(__file__).parents[2] / "scenarios").glob("*.loopsim.yaml"))

DRAFTS = ", ".join(f"draft {n}" for n in range(1, 25))
LONG_LOOP = f"""
version: 1
agents:
  writer: {{script: [{DRAFTS}]}}
parent: {{agent: writer}}
loop: {{evaluators: [completion_marker], max_iterations: 24}}
steps: [{{run: write}}]
"""

MANY_WAITS = """
version: 1
agents:
  boss: {policy: {coordinator: {max_waits: 20}}}
  slow: {policy: {echo: {delay: 10000}}}
parent: {agent: boss, background_agents: [slow], wait_timeout: 5}
steps: [{run: go}]
"""

#: What the timeline used to write (``dateFormat X``, seconds): Mermaid 11 misplaces it.
SECONDS_CONTROL = """gantt
    dateFormat X
    axisFormat %s
    section s
    a : t1, 0, 10
    b : t2, 15, 35
    c : t3, 40, 60
"""

#: Mermaid 11's gantt classes per status (see loopsim._transcript._mermaid._TAGS).
CLASSES = {
    "iteration": "task",
    "running": "active",
    "completed": "done",
    "failed": "crit",
    "lost": "doneCrit",
}


def _transcripts() -> dict[str, loopsim.Transcript]:
    out: dict[str, loopsim.Transcript] = {}
    for path in SCENARIOS:
        result = run_scenario(load_scenario(path))
        assert result.transcript is not None
        out[path.name.removesuffix(".loopsim.yaml")] = result.transcript
    out["empty"] = loopsim.Transcript()
    agent = loopsim.Agent(loopsim.ScriptedChatClient(["hi"]), name="plain")
    out["plain_agent"] = loopsim.record(agent.run, "hello")[1]
    for name, text in (("long_loop", LONG_LOOP), ("many_waits", MANY_WAITS)):
        result = run_scenario(load_scenario_text(text, path=f"{name}.loopsim.yaml"))
        assert result.transcript is not None
        out[name] = result.transcript
    return out


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    transcripts = _transcripts()
    diagrams: dict[str, str] = {}
    for name, transcript in transcripts.items():
        diagrams[f"{name}.sequence"] = loopsim.render_mermaid(transcript)
        diagrams[f"{name}.timeline"] = loopsim.render_timeline(transcript)
    diagrams["control.timeline"] = SECONDS_CONTROL
    results, page = render_all(diagrams, tmp_path_factory.mktemp("mermaid"))
    return {"transcripts": transcripts, "results": results, "console": page.console}


def test_mermaid_renders_every_diagram_without_an_error(rendered: dict[str, Any]) -> None:
    results = rendered["results"]
    assert len(results) == 2 * len(rendered["transcripts"]) + 1
    errors = {name: r["error"] for name, r in results.items() if r["error"] is not None}
    assert errors == {}
    assert rendered["console"] == []


def _fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares x = a + b * t."""
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mx = sum(x for _, x in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    b = 0.0 if var == 0 else sum((t - mt) * (x - mx) for t, x in points) / var
    return mx - b * mt, b


def test_timeline_bars_sit_at_their_virtual_times(rendered: dict[str, Any]) -> None:
    scaled = 0
    for name, transcript in rendered["transcripts"].items():
        found = spans(transcript.events)
        drawn = rendered["results"][f"{name}.timeline"]
        by_id = {item["id"].split("-", 1)[1]: item for item in drawn["bars"] + drawn["milestones"]}
        points: list[tuple[float, float]] = []
        for bar in found.bars:
            item = by_id.pop(f"{bar.status}_{bar.ident}")
            classes = {re.sub(r"\d+$", "", c) for c in item["cls"].split()[1:]}
            assert CLASSES[bar.status] in classes, (name, bar, item)
            if bar.start == bar.end:
                assert "milestone" in item["cls"]
                points.append((bar.start, item["x"] + item["width"] / 2))
            else:
                points += [(bar.start, item["x"]), (bar.end, item["x"] + item["width"])]
        for n, when in enumerate(found.restarts, start=1):
            points.append((when, by_id.pop(f"restart_{n}")["x"]))
        by_id.pop("none", None)  # the placeholder of a run without bars
        assert by_id == {}, f"{name}: bars drawn that the run does not have"
        if not points:
            continue
        a, b = _fit(points)
        worst = max(abs(a + b * t - x) for t, x in points)
        assert worst <= 1.5, f"{name}: a bar is {worst:.1f} px from its time"
        if len({t for t, _ in points}) > 1:
            assert b > 0
            scaled += 1
    assert scaled >= 5  # many scenarios have bars at different times


def test_statuses_have_distinct_colours(rendered: dict[str, Any]) -> None:
    fills: dict[str, set[str]] = {}
    for name, transcript in rendered["transcripts"].items():
        drawn = rendered["results"][f"{name}.timeline"]["bars"]
        for bar in spans(transcript.events).bars:
            for item in drawn:
                if item["id"].endswith(f"-{bar.status}_{bar.ident}"):
                    fills.setdefault(bar.status, set()).add(item["fill"])
    assert {"completed", "failed", "lost", "running"} <= fills.keys()
    colours = [fills[s] for s in ("completed", "failed", "lost", "running")]
    assert all(len(c) == 1 for c in colours)
    assert len(set.union(*colours)) == 4


def test_sequence_shows_every_host_call_with_its_input(rendered: dict[str, Any]) -> None:
    for name, transcript in rendered["transcripts"].items():
        messages = rendered["results"][f"{name}.sequence"]["messages"]
        runs = [m for m in messages if " run" in m and m.startswith("t=")]
        calls = host_calls(transcript.events)
        if name == "empty":
            assert calls == []
        else:
            assert calls, f"{name}: no host call found"
        assert len([m for m in runs if m.split(" ", 2)[1] == "run"]) == len(calls), name
        for call in calls:
            assert any(json.dumps(call.input)[:20] in m for m in runs), (name, call)
    restart = rendered["results"]["restart_lost_recovery.sequence"]["messages"]
    assert 't=0 run "start the work"' in restart
    assert 't=10 run "collect"' in restart
    assert "t=10 task 1 lost" in restart


def test_no_literal_backslash_n_anywhere(rendered: dict[str, Any]) -> None:
    for name, result in rendered["results"].items():
        for text in result["messages"] + result["notes"]:
            assert "\\n" not in text, (name, text)


def test_long_runs_fold(rendered: dict[str, Any]) -> None:
    results = rendered["results"]
    long_loop = results["long_loop.sequence"]
    assert any("iterations 2-22 went like iteration 1" in n for n in long_loop["notes"]), long_loop[
        "notes"
    ]
    assert long_loop["height"] < 1500
    waits = results["many_waits.sequence"]["messages"]
    assert any("timed out 20 times" in m for m in waits), waits
    assert results["many_waits.sequence"]["height"] < 1200
    unfolded = loopsim.render_mermaid(rendered["transcripts"]["long_loop"], fold=False)
    assert unfolded.count("->>A1: t=") == 24


def test_the_position_check_catches_a_misread_time_format(rendered: dict[str, Any]) -> None:
    # The same check as above, on what `dateFormat X` makes of three bars: it fails.
    bars = {b["id"].split("-", 1)[1]: b for b in rendered["results"]["control.timeline"]["bars"]}
    times = {"t1": (0, 10), "t2": (15, 35), "t3": (40, 60)}
    points = [(times[k][0], b["x"]) for k, b in bars.items()]
    points += [(times[k][1], b["x"] + b["width"]) for k, b in bars.items()]
    a, b = _fit(points)
    assert max(abs(a + b * t - x) for t, x in points) > 20
