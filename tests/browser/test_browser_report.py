"""The HTML report in headless Chromium: it loads with no console message, needs no
network, and its DOM has the key elements; user text stays text (no injected script)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from chromium_page import load

from loopsim._report import build_report, entry_from_result
from loopsim._scenario import load_scenario, load_scenario_text, run_scenario

SCENARIOS = sorted((Path(__file__).parents[2] / "scenarios").glob("*.loopsim.yaml"))
HOSTILE = (
    "version: 1\n"
    "description: \"<script>document.title='pwned'</script><img src=x onerror=alert(1)>\"\n"
    'agents:\n  writer: {script: ["<b onmouseover=alert(2)>hi</b>", two, three]}\n'
    "parent: {agent: writer}\n"
    "loop: {evaluators: [completion_marker], max_iterations: 3}\n"
    'steps: [{run: "</pre><script>alert(3)</script>"}]\n'
    "expect: {iterations: 4}\n"
)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    entries = []
    for path in SCENARIOS:
        loaded = load_scenario(path)
        entries.append(
            entry_from_result(run_scenario(loaded), description=loaded.scenario.description)
        )
    hostile = load_scenario_text(HOSTILE, path="hostile.loopsim.yaml")
    entries.append(
        entry_from_result(run_scenario(hostile), description=hostile.scenario.description)
    )
    target = tmp_path_factory.mktemp("report") / "report.html"
    target.write_text(build_report(entries), encoding="utf-8")
    loaded_page = load(target)
    return loaded_page.dom, loaded_page.console


def test_the_report_loads_without_a_console_message(page: tuple[str, list[str]]) -> None:
    dom, console = page
    assert console == []
    assert "<title>loopsim report</title>" in dom  # the hostile description changed nothing


def test_the_dom_has_the_suite_table_and_every_section(page: tuple[str, list[str]]) -> None:
    dom, _ = page
    rows = re.findall(r'<tr data-result="(\w+)">', dom)
    assert len(rows) == len(SCENARIOS) + 1
    assert rows.count("failed") == 1
    sections = re.findall(r'<section class="scenario" id="scenario-(\d+)"', dom)
    assert sections == [str(n) for n in range(1, len(SCENARIOS) + 2)]
    # a run with neither loop iterations nor background tasks has a note, not a timeline
    timelines = dom.count('<svg class="timeline"')
    assert timelines + dom.count("no loop iterations or background tasks") == len(SCENARIOS) + 1
    assert timelines > len(SCENARIOS) // 2
    assert len(re.findall(r'<rect class="bar status-(\w+)"', dom)) > len(SCENARIOS)
    for status in ("completed", "failed", "lost", "running", "iteration"):
        assert f'class="bar status-{status}"' in dom, status
    assert dom.count('<details class="model-call">') > len(SCENARIOS)
    assert '<table class="decisions">' in dom
    assert dom.count('<div class="failures">') == 1
    assert 'class="restart"' in dom


def test_user_text_is_inert(page: tuple[str, list[str]]) -> None:
    dom, _ = page
    assert "<script" not in dom  # the report has no script at all, none was injected
    assert "<img" not in dom
    assert "onmouseover=" not in dom.replace("onmouseover=alert(2)&gt;", "")
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in dom


def test_nothing_is_loaded_from_elsewhere(page: tuple[str, list[str]]) -> None:
    dom, _ = page
    assert not re.search(r"""(src|href)=["'](?!#)""", dom)
    assert "@import" not in dom
    assert "url(" not in dom


def test_the_timeline_story_and_event_axis_in_chromium(tmp_path: Path) -> None:
    """The research run's timeline (tasks and the lost one first, iterations folded) and a
    run with no virtual time (an event-order axis), as Chromium draws them; the
    screenshot is kept in the test's folder for looking at by hand."""
    from chromium_page import screenshot

    root = Path(__file__).parents[2] / "scenarios"
    entries = []
    for name in ("research_coordinator", "max_iterations_cap"):
        loaded = load_scenario(root / f"{name}.loopsim.yaml")
        entries.append(
            entry_from_result(run_scenario(loaded), description=loaded.scenario.description)
        )
    target = tmp_path / "timeline.html"
    target.write_text(build_report(entries), encoding="utf-8")
    loaded_page = load(target)
    assert loaded_page.console == []
    dom = loaded_page.dom
    assert dom.count('<svg class="timeline"') == 2
    assert 'data-axis="time"' in dom
    assert 'data-axis="events"' in dom
    assert "event order (the run took no virtual time)" in dom
    assert "folded)" in dom
    first_svg = dom[dom.index('<svg class="timeline"') : dom.index("</svg>")]
    statuses = re.findall(r'class="bar status-(\w+)"', first_svg)
    assert statuses.index("lost") < statuses.index("iteration")
    assert len(statuses) <= 15
    png = screenshot(target, tmp_path / "timeline.png", width=1100, height=1400)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
