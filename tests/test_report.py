"""``loopsim report`` and ``--loopsim-report``: content, escaping, size bound, CLI, plugin."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

import loopsim
from loopsim._report import (
    SCENARIO_BYTES_MAX,
    ReportEntry,
    build_report,
    entry_from_dict,
    entry_from_result,
    entry_from_transcript,
    entry_to_dict,
)
from loopsim._scenario import load_scenario_text, run_scenario
from loopsim.cli import main

pytest_plugins = ["pytester"]

ROOT = Path(__file__).parent.parent
SCENARIOS = ROOT / "scenarios"
HOSTILE = "<script>alert('x')</script>"

CAP = (SCENARIOS / "max_iterations_cap.loopsim.yaml").read_text(encoding="utf-8")
FAILING = CAP.replace("iterations: 3\n  stop", "iterations: 4\n  stop").replace(
    "description: A loop", f"description: {HOSTILE} A loop"
)


def _entry(text: str, name: str = "s") -> ReportEntry:
    loaded = load_scenario_text(text, path=f"{name}.loopsim.yaml")
    return entry_from_result(run_scenario(loaded), description=loaded.scenario.description or "")


def test_suite_table_has_one_row_per_scenario_with_its_facts() -> None:
    page = build_report([_entry(CAP, "cap"), _entry(FAILING, "cap_failing")])
    table = page[page.index("<table id='suite'>") : page.index("</table>")]
    headers = re.findall(r"<th>(.*?)</th>", table)
    assert headers == [
        "scenario",
        "result",
        "engine",
        "iterations",
        "stop reason",
        "virtual time",
        "real time",
    ]
    rows = re.findall(r"<tr data-result='(\w+)'>(.*?)</tr>", table)
    assert [result for result, _ in rows] == ["passed", "failed"]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", rows[0][1])
    assert cells[1:5] == ["passed", "loopsim", "3", "max_iterations"]


def test_a_failure_shows_its_failing_expectations() -> None:
    page = build_report([_entry(FAILING, "cap_failing")])
    failures = page[page.index("<div class='failures'>") :]
    assert "expect.iterations: expected 4 iteration(s), got 3" in failures
    assert "cap_failing.loopsim.yaml:" in failures


def test_a_snapshot_failure_shows_the_first_divergence(tmp_path: Path) -> None:
    source = SCENARIOS / "completion_marker.loopsim.yaml"
    (tmp_path / "__snapshots__").mkdir()
    snapshot = (SCENARIOS / "__snapshots__" / "completion_marker.transcript.txt").read_text()
    changed = snapshot.replace("a first draft", "another draft")
    assert changed != snapshot
    (tmp_path / "__snapshots__" / "completion_marker.transcript.txt").write_text(changed)
    copy = tmp_path / "completion_marker.loopsim.yaml"
    copy.write_text(source.read_text())
    entry = entry_from_result(run_scenario(loopsim.load_scenario(copy)))
    assert entry.result == "failed"
    assert entry.divergence is not None
    assert "another draft" in entry.divergence
    assert "a first draft" in entry.divergence
    page = build_report([entry])
    assert "<h3>First divergence</h3>" in page


def test_user_text_is_escaped_everywhere() -> None:
    text = FAILING.replace("script: [one, two, three]", f'script: ["{HOSTILE}", two, three]')
    page = build_report([_entry(text, "x<u>y")])
    assert "<script" not in page
    assert "<u>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "x&lt;u&gt;y" in page


def test_model_calls_are_expandable_and_decisions_listed() -> None:
    page = build_report([_entry(CAP, "cap")])
    assert page.count("<details class='model-call'>") == 3
    decisions = page[page.index("<table class='decisions'>") :]
    assert decisions.count("<td>CompletionMarkerLoopEvaluator</td>") == 2  # the 3rd hits the cap


def _huge_transcript(calls: int, text: int) -> loopsim.Transcript:
    events: list[loopsim.TranscriptEvent] = []
    long = "x" * text
    for n in range(calls):
        base = {"agent": "a", "session": "s1"}
        message = {"role": "user", "contents": [{"type": "text", "text": f"{n} {long}"}]}
        events.append(
            loopsim.TranscriptEvent(
                seq=len(events) + 1,
                time=float(n),
                kind="model_request",
                data={**base, "messages": [message] * 8, "tools": []},
            )
        )
        events.append(
            loopsim.TranscriptEvent(
                seq=len(events) + 1,
                time=float(n),
                kind="task_status",
                data={
                    "provider": "p",
                    "session": "s1",
                    "task_id": n,
                    "agent": "c",
                    "description": long,
                    "status": "running",
                },
            )
        )
        events.append(
            loopsim.TranscriptEvent(
                seq=len(events) + 1,
                time=float(n),
                kind="evaluator_decision",
                data={
                    "loop": "l",
                    "iteration": n,
                    "index": 0,
                    "evaluator": "e",
                    "decision": "continue",
                    "feedback": long,
                },
            )
        )
    return loopsim.Transcript(scenario="huge" + long, events=events)


@pytest.mark.parametrize(("calls", "text"), [(3, 10), (500, 5000)])
def test_each_scenario_adds_at_most_the_size_bound(calls: int, text: int) -> None:
    empty = len(build_report([]).encode())
    entry = entry_from_transcript(_huge_transcript(calls, text))
    entry.description = "d" * 100_000
    entry.failures = ["f" * 10_000] * 500
    entry.divergence = "v" * 100_000
    one = len(build_report([entry]).encode()) - empty
    assert one <= SCENARIO_BYTES_MAX
    two = len(build_report([entry, entry]).encode()) - empty
    assert two - one <= SCENARIO_BYTES_MAX


def test_an_entry_crosses_xdist_as_json_data() -> None:
    entry = _entry(FAILING, "cap_failing")
    again = entry_from_dict(entry_to_dict(entry))
    assert again == entry


def test_cli_report_of_scenarios_and_transcripts(tmp_path: Path) -> None:
    transcript = run_scenario(loopsim.load_scenario(SCENARIOS / "wait_timeout.loopsim.yaml"))
    assert transcript.write_transcript(tmp_path) is not None
    out = tmp_path / "r.html"
    code = main(
        ["report", str(SCENARIOS / "failed_child.loopsim.yaml"), str(tmp_path), "-o", str(out)]
    )
    assert code == 0
    page = out.read_text(encoding="utf-8")
    assert re.findall(r"<tr data-result='(\w+)'>", page) == ["passed", "recorded"]
    assert "failed_child" in page
    assert "wait_timeout" in page


def test_cli_report_refuses_unreadable_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.transcript.json"
    bad.write_text("{not json")
    out = tmp_path / "r.html"
    assert main(["report", str(bad), "-o", str(out)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    assert not out.exists()
    assert main(["report", str(tmp_path / "missing.transcript.json"), "-o", str(out)]) == 2
    assert main(["report", str(tmp_path / "nothing_here"), "-o", str(out)]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", str(empty), "-o", str(out)]) == 2
    assert "no transcripts or scenario files" in capsys.readouterr().err


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_pytest_option_writes_the_suite_report(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    (pytester.path / "cap.loopsim.yaml").write_text(CAP)
    (pytester.path / "cap_failing.loopsim.yaml").write_text(FAILING)
    (pytester.path / "broken.loopsim.yaml").write_text("version: 1\nagents: 3\n")
    result = pytester.runpytest(
        *workers, "--loopsim-report=out/report.html", "--junit-xml=out/junit.xml"
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*loopsim report: 3 scenario(s) -> *report.html*"])
    page = (pytester.path / "out" / "report.html").read_text(encoding="utf-8")
    rows = re.findall(r"<tr data-result='(\w+)'><td><a href='#scenario-\d'>(\w+)</a>", page)
    assert rows == [("invalid", "broken"), ("passed", "cap"), ("failed", "cap_failing")]
    assert "<script" not in page
    real = re.findall(r"<td>([0-9.]+) s</td></tr>", page)
    assert len(real) == 3  # the real time of each test, as pytest measured it
    junit = (pytester.path / "out" / "junit.xml").read_text(encoding="utf-8")
    assert 'name="loopsim_scenario"' in junit
    assert "loopsim_report" not in junit  # the entry is not dumped into JUnit XML


def test_show_max_events_limits_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_scenario(loopsim.load_scenario(SCENARIOS / "wait_timeout.loopsim.yaml"))
    path = result.write_transcript(tmp_path)
    assert path is not None
    assert result.transcript is not None
    total = len(result.transcript.events)
    assert main(["show", str(path), "--max-events", "4"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert len([line for line in text if not line.startswith("#")]) == 4  # event lines
    assert text[-1] == f"# ... {total - 4} more event(s) not shown (--max-events 4)"
    assert main(["show", str(path), "--format", "mermaid", "--max-events", "6"]) == 0
    assert f"{total - 6} more event(s) not drawn (max 6)" in capsys.readouterr().out
    assert main(["show", str(path), "--format", "timeline", "--max-events", "6"]) == 0
    assert capsys.readouterr().out.endswith(
        f"%% ... {total - 6} more event(s) not shown (--max-events 6)\n"
    )
    assert main(["show", str(path), "--max-events", "-1"]) == 2


def test_cli_help_lists_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert re.search(r"^\s+report\s", capsys.readouterr().out, flags=re.MULTILINE)


def test_the_decision_table_has_the_run_and_the_judged_text_on_one_line() -> None:
    two_runs = (
        "version: 1\n"
        'agents:\n  writer:\n    script: [one, "two\\nmore lines", three, four, '
        f"{'x' * 120}, six]\n"
        "parent: {agent: writer}\n"
        "loop: {evaluators: [completion_marker], max_iterations: 3}\n"
        "steps: [{run: first}, {run: second}]\n"
        "expect: {stop_reason: max_iterations}\n"
    )
    loaded = load_scenario_text(two_runs, path="two.loopsim.yaml")
    result = run_scenario(loaded)
    page = build_report([entry_from_result(result)])
    table = page[page.index("<table class='decisions'>") :]
    table = table[: table.index("</table>")]
    assert re.findall(r"<th>(.*?)</th>", table) == [
        "run",
        "iteration",
        "t",
        "evaluator",
        "decision",
        "judged",
        "feedback",
    ]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in table.split("<tr>")[2:]]
    runs = [(cells[0], cells[1]) for cells in rows]
    assert runs[0] == ("1", "1")
    assert ("2", "1") in runs  # the second run starts counting its iterations again
    judged = [cells[5] for cells in rows]
    assert all(text.startswith("assistant: ") for text in judged), judged
    assert all("\n" not in text and len(html.unescape(text)) <= 80 for text in judged)
    assert judged[1] == "assistant: &quot;two\\nmore lines&quot;"  # a line break shown as \\n
    assert judged[-1].endswith("\u2026")  # cut at 80 characters


def test_one_line_cuts_long_and_multi_line_text() -> None:
    from loopsim._report._html import _one_line

    assert _one_line("short") == "short"
    assert _one_line("first\nsecond") == "first\u2026"
    assert _one_line("x" * 200) == "x" * 79 + "\u2026"


def test_failure_paths_are_relative_to_the_rootdir(tmp_path: Path) -> None:
    folder = tmp_path / "suite" / "deep"
    folder.mkdir(parents=True)
    path = folder / "cap_failing.loopsim.yaml"
    path.write_text(FAILING, encoding="utf-8")
    result = run_scenario(loopsim.load_scenario(path))
    page = build_report([entry_from_result(result, root=tmp_path)])
    failures = page[page.index("<div class='failures'>") :]
    assert str(tmp_path) not in page
    assert "suite/deep/cap_failing.loopsim.yaml:" in failures


def test_a_recorded_run_is_labelled_with_its_engine(tmp_path: Path) -> None:
    pytest.importorskip("agent_framework")
    loaded = loopsim.load_scenario(SCENARIOS / "max_iterations_cap.loopsim.yaml")
    for engine in ("loopsim", "agent_framework"):
        written = run_scenario(loaded, engine=engine).write_transcript(tmp_path / engine)
        assert written is not None
        entry = entry_from_transcript(loopsim.read_transcript(written))
        assert entry.engine == engine
        page = build_report([entry])
        assert f"<td>{engine}</td>" in page[page.index("<table id='suite'>") :]
    # a built-in run's file is as it was: no engine key
    assert (
        '"engine"' not in (tmp_path / "loopsim" / "max_iterations_cap.transcript.json").read_text()
    )


def _timeline_rows(page: str) -> list[tuple[str, str]]:
    """(status, label) of each timeline bar, top to bottom."""
    svg = page[page.index("<svg class='timeline'") : page.index("</svg>")]
    return re.findall(r"<rect class='bar status-(\w+)'.*?</rect><text[^>]*>(.*?)</text>", svg)


def test_the_timeline_folds_a_long_loop_and_puts_the_tasks_first() -> None:
    research = loopsim.load_scenario(SCENARIOS / "research_coordinator.loopsim.yaml")
    page = build_report([entry_from_result(run_scenario(research))])
    rows = _timeline_rows(page)
    statuses = [status for status, _ in rows]
    first_iteration = statuses.index("iteration")
    assert "lost" in statuses[:first_iteration]  # the story (the lost task) comes first
    assert set(statuses[first_iteration:]) == {"iteration"}
    folded = [label for _, label in rows if "folded" in label]
    assert folded, rows
    assert len(rows) <= 15  # not one row per iteration


def test_a_loop_of_many_iterations_draws_first_folded_last() -> None:
    long_cap = CAP.replace("[one, two, three]", str([f"draft {n}" for n in range(12)])).replace(
        "max_iterations: 3", "max_iterations: 12"
    )
    page = build_report([_entry(long_cap, "long")])
    labels = [label for _, label in _timeline_rows(page)]
    assert labels == ["iteration 1", "iterations 2-11 (10 folded)", "iteration 12"]


def test_a_run_without_virtual_time_gets_an_event_order_axis() -> None:
    timed = build_report(
        [_entry(CAP.replace("[one, two, three]", "[{reply: one, delay: 5}, two, three]"), "t")]
    )
    assert "data-axis='time'" in timed
    instant = build_report([_entry(CAP, "cap")])
    assert "data-axis='events'" in instant
    assert "event order (the run took no virtual time)" in instant
    starts = [float(x) for x in re.findall(r"data-start='([0-9.]+)'", instant)]
    assert starts == sorted(starts)
    assert len(set(starts)) == 3  # three iterations side by side, not stacked at 0
