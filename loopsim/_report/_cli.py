"""``loopsim report PATH... [-o FILE]``: the HTML report of transcripts and scenario files."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._errors import ScenarioError, TranscriptError
from .._transcript import read_transcript
from ._entries import entry_from_result
from ._html import ReportEntry, entry_from_transcript, write_report

__all__ = ["DEFAULT_OUTPUT", "add_report_parser", "cmd_report"]

DEFAULT_OUTPUT = "loopsim-report.html"
_SCENARIO_SUFFIXES = (".loopsim.yaml", ".loopsim.yml", ".loopsim.json")
_TRANSCRIPT_SUFFIX = ".transcript.json"


def add_report_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``report PATH... [-o FILE]``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="write a self-contained HTML report of transcripts or scenario runs",
        description="Build one HTML page (no network needed to open it) from "
        "*.transcript.json files (recorded runs) and *.loopsim.yaml scenario files (run "
        "here, with their verdicts); folders are searched for both. For a whole test "
        "suite use `loopsim run --loopsim-report=FILE`.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="transcripts, scenarios, folders")
    parser.add_argument(
        "-o", "--output", default=DEFAULT_OUTPUT, metavar="FILE", help="the HTML file to write"
    )
    parser.set_defaults(command=cmd_report)
    return parser


def _files(paths: list[str]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = [
                p
                for p in sorted(path.rglob("*"))
                if p.is_file() and p.name.endswith((*_SCENARIO_SUFFIXES, _TRANSCRIPT_SUFFIX))
            ]
            yield from found
        else:
            yield path


def _entry(path: Path) -> ReportEntry:
    if path.name.endswith(_SCENARIO_SUFFIXES):
        from .._scenario import load_scenario, run_scenario  # noqa: PLC0415 - keep startup light

        loaded = load_scenario(path)
        started = time.perf_counter()
        result = run_scenario(loaded)
        took = time.perf_counter() - started
        return entry_from_result(
            result, description=loaded.scenario.description or "", real_time=took
        )
    return entry_from_transcript(read_transcript(path))


def cmd_report(args: argparse.Namespace) -> int:
    """Write the report; 0 when written, 2 when an input cannot be read (nothing written)."""
    entries: list[ReportEntry] = []
    path: Path | None = None
    try:
        for path in _files(list(args.paths)):
            entries.append(_entry(path))
    except (ScenarioError, TranscriptError) as exc:
        print(f"loopsim report: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return 2
    except OSError as exc:
        reason = exc.strerror or exc
        print(f"loopsim report: cannot read {path}: {reason}", file=sys.stderr)  # noqa: T201
        return 2
    if not entries:
        print("loopsim report: no transcripts or scenario files found", file=sys.stderr)  # noqa: T201
        return 2
    written = write_report(args.output, entries)
    print(f"loopsim report: {len(entries)} run(s) -> {written}")  # noqa: T201 - CLI output
    return 0
