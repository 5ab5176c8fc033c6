"""The ``--loopsim-report=FILE`` collector: gathers each scenario's entry, writes the page.

Scenario items put their entry (JSON data) in their report's ``user_properties``, so it
reaches the controlling process under pytest-xdist too; the collector runs there only,
adds the test's duration as the real time and writes the page when the session ends,
scenarios in node-id order (the same page whatever the worker scheduling).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._entries import entry_from_dict
from ._html import ReportEntry, write_report

__all__ = ["ReportCollector"]


class ReportCollector:
    """A pytest plugin object: one per session, registered when the option is given."""

    def __init__(self, target: str) -> None:
        self.target = Path(target)
        self.entries: dict[str, ReportEntry] = {}
        self.written: Path | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties or ())
        if "loopsim_scenario" not in props:
            return
        data = props.get("loopsim_report")
        if data is not None:
            # The entry is for this collector only: keep it out of JUnit XML properties.
            report.user_properties = [
                (k, v) for k, v in report.user_properties if k != "loopsim_report"
            ]
        if report.when == "call" and isinstance(data, dict):
            entry = entry_from_dict(data)
            entry.real_time = report.duration
            self.entries[report.nodeid] = entry
        elif report.when == "call" and props.get("loopsim_invalid"):
            self.entries[report.nodeid] = ReportEntry(
                name=str(props["loopsim_scenario"]),
                result="invalid",
                failures=[_text(report.longrepr)],
                real_time=report.duration,
            )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        del session
        entries = [self.entries[k] for k in sorted(self.entries)]
        self.written = write_report(self.target, entries, title="loopsim suite report")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.written is not None:
            terminalreporter.write_line(
                f"loopsim report: {len(self.entries)} scenario(s) -> {self.written}"
            )


def _text(longrepr: Any) -> str:
    return str(longrepr) if longrepr is not None else "invalid scenario file"
