"""Transcripts: the record of a run, its file format, diff, replay support and renderings."""

from ._diff import Divergence, diff_transcripts
from ._mermaid import render_mermaid, render_timeline
from ._model import FORMAT, VERSION, Transcript, TranscriptEvent, read_transcript, write_transcript
from ._recorder import Recorder, record
from ._render import render_text

__all__ = [
    "FORMAT",
    "VERSION",
    "Divergence",
    "Recorder",
    "Transcript",
    "TranscriptEvent",
    "diff_transcripts",
    "read_transcript",
    "record",
    "render_mermaid",
    "render_text",
    "render_timeline",
    "write_transcript",
]
