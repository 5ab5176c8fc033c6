"""``loopsim show`` and ``loopsim replay``: command functions the CLI module registers.

Exit codes follow the CLI: 0 ok / identical, 1 divergence, 2 unreadable file or usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from .._errors import LoopsimError, TranscriptError
from ._mermaid import render_mermaid, render_timeline
from ._model import Transcript, read_transcript
from ._render import render_text
from ._verdict import Replayed, ReplayVerdict, compare_replay

__all__ = [
    "FORMATS",
    "ReplayVerdict",
    "Replayed",
    "Rerun",
    "WrongRecordingError",
    "add_replay_parser",
    "add_show_parser",
    "cmd_replay",
    "cmd_show",
]

EXIT_OK = 0
EXIT_DIVERGED = 1
EXIT_UNREADABLE = 2

#: ``loopsim show --format`` choices.
FORMATS: dict[str, Callable[[Transcript], str]] = {
    "text": render_text,
    "mermaid": render_mermaid,
    "timeline": render_timeline,
}

#: Re-runs the program a transcript recorded and returns the new transcript (or what the
#: re-run produced, with the error that stopped it).
Rerun = Callable[[Transcript], "Transcript | Replayed"]


class WrongRecordingError(LoopsimError):
    """The recording given to ``loopsim replay`` belongs to another scenario."""


def _read(path: str) -> Transcript | None:
    try:
        return read_transcript(path)
    except TranscriptError as exc:
        print(f"loopsim: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
    except OSError as exc:
        print(f"loopsim: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)  # noqa: T201
    return None


def add_show_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``show TRANSCRIPT [--format text|mermaid|timeline]``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "show",
        help="render a transcript as text, a Mermaid sequence diagram or a task timeline",
        description="Render a *.transcript.json file: text (one event per line), mermaid "
        "(sequence diagram: host calls, loops, agents, task provider, evaluators) or "
        "timeline (Mermaid gantt of loop iterations and background-task runs).",
    )
    parser.add_argument("transcript", metavar="TRANSCRIPT", help="a *.transcript.json file")
    parser.add_argument("--format", choices=sorted(FORMATS), default="text")
    parser.add_argument(
        "--max-events",
        type=int,
        default=None,
        metavar="N",
        help="show only the first N events (a last line or note says how many were left out)",
    )
    parser.add_argument(
        "--absolute-times",
        action="store_true",
        help="text: show the virtual time since the start on every line instead of the "
        "seconds since the previous event",
    )
    parser.add_argument(
        "--no-fold",
        action="store_true",
        help="mermaid: draw repeated timed-out waits and alike iterations one by one",
    )
    parser.set_defaults(command=cmd_show)
    return parser


def cmd_show(args: argparse.Namespace) -> int:
    """Print the transcript in the chosen format; 2 when it cannot be read."""
    transcript = _read(args.transcript)
    if transcript is None:
        return EXIT_UNREADABLE
    chosen = getattr(args, "format", "text") or "text"
    limit: int | None = getattr(args, "max_events", None)
    if limit is not None and limit < 0:
        print("loopsim show: --max-events must be 0 or more", file=sys.stderr)  # noqa: T201
        return EXIT_UNREADABLE
    if chosen == "mermaid":
        fold = not getattr(args, "no_fold", False)
        sys.stdout.write(render_mermaid(transcript, max_events=limit, fold=fold))
        return EXIT_OK
    left_out = 0
    if limit is not None and limit < len(transcript.events):
        left_out = len(transcript.events) - limit
        transcript = transcript.model_copy(update={"events": transcript.events[:limit]})
    if chosen == "text" and getattr(args, "absolute_times", False):
        sys.stdout.write(render_text(transcript, times="absolute"))
    else:
        sys.stdout.write(FORMATS[chosen](transcript))
    if left_out:
        mark = "#" if chosen == "text" else "%%"
        sys.stdout.write(f"{mark} ... {left_out} more event(s) not shown (--max-events {limit})\n")
    return EXIT_OK


def add_replay_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``replay TRANSCRIPT [--scenario FILE]``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "replay",
        help="re-run a recorded transcript and report what was compared and any divergence",
        description="Re-run the program that recorded TRANSCRIPT with every model call "
        "answered from the recording, and compare what the code under test did: prints "
        "'identical: ...' with what was compared, or 'diverged: ...' with each divergence "
        "and the first divergent event (exit code 1).",
    )
    parser.add_argument("transcript", metavar="TRANSCRIPT", help="a *.transcript.json file")
    parser.add_argument(
        "--scenario", metavar="FILE", default=None, help="the scenario file to re-run"
    )
    parser.add_argument(
        "--report-drift",
        metavar="NEW",
        default=None,
        help="instead of replaying, run the scenario against its real models, record that "
        "run into NEW (never into TRANSCRIPT) and print per model call what changed "
        "(exit code 1 when something did); needs --scenario",
    )
    parser.set_defaults(command=cmd_replay)
    return parser


def cmd_replay(args: argparse.Namespace, *, rerun: Rerun | None = None) -> int:
    """Re-run and compare: 0 identical, 1 diverged, 2 unreadable or nothing to re-run with.

    ``rerun`` (or ``args.rerun``, set by whoever wires the CLI) re-runs the recorded
    program and returns its new transcript, or a :class:`Replayed` (the live transcript,
    the error that stopped it, a fresh run for model-side notes); the scenario runner
    provides it. The report says what was compared (see :class:`ReplayVerdict`).
    """
    transcript = _read(args.transcript)
    if transcript is None:
        return EXIT_UNREADABLE
    rerun = rerun or getattr(args, "rerun", None)
    if rerun is None:
        print(  # noqa: T201 - CLI output
            "loopsim replay: no scenario runner is available to re-run this transcript",
            file=sys.stderr,
        )
        return EXIT_UNREADABLE
    try:
        live: Transcript | Replayed = rerun(transcript)
    except WrongRecordingError as exc:
        print(f"loopsim replay: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return EXIT_UNREADABLE
    except LoopsimError as exc:
        # A strict replay stops at the first request that differs: that is a divergence.
        live = Replayed(None, error=exc)
    verdict = compare_replay(transcript, live)
    sys.stdout.write(verdict.text)
    return EXIT_OK if verdict.identical else EXIT_DIVERGED
