"""The HTML report of one run or a suite (``loopsim report``, ``--loopsim-report``)."""

from ._entries import entry_from_dict, entry_from_result, entry_to_dict
from ._html import (
    SCENARIO_BYTES_MAX,
    ReportEntry,
    build_report,
    entry_from_transcript,
    write_report,
)

__all__ = [
    "SCENARIO_BYTES_MAX",
    "ReportEntry",
    "build_report",
    "entry_from_dict",
    "entry_from_result",
    "entry_from_transcript",
    "entry_to_dict",
    "write_report",
]
