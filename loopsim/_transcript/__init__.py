"""Transcripts: the record of a run, its file format, diff, replay support and renderings."""

from ._codec import TranscriptLimits
from ._diff import Divergence, diff_transcripts
from ._mermaid import render_mermaid, render_timeline
from ._model import (
    FORMAT,
    READS,
    VERSION,
    Transcript,
    TranscriptEvent,
    read_transcript,
    write_transcript,
)
from ._recorder import Recorder, record
from ._render import render_text

__all__ = [
    "FORMAT",
    "READS",
    "VERSION",
    "Divergence",
    "Recorder",
    "Transcript",
    "TranscriptEvent",
    "TranscriptLimits",
    "diff_transcripts",
    "read_transcript",
    "record",
    "render_mermaid",
    "render_text",
    "render_timeline",
    "write_transcript",
]
