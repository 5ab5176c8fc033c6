"""``loopsim report``: one self-contained HTML page for one run or a whole suite.

The page needs no network and no script: CSS is inline, the task timeline is inline SVG
drawn here from the transcript's spans, model calls fold in ``<details>``. Every text
from a scenario or a model is HTML-escaped. Each scenario's part is bounded in size
(:data:`SCENARIO_BYTES_MAX`): long texts are clipped and long lists cut with a count of
what was left out, so a suite's page grows linearly with its scenario count.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._clients._recording import message_summary
from .._escape import html_text, no_surrogates
from .._files import write_atomic
from .._transcript import Transcript, TranscriptEvent
from .._transcript._render import answer_field_parts
from .._transcript._spans import Span, Spans, spans

__all__ = [
    "SCENARIO_BYTES_MAX",
    "ReportEntry",
    "build_report",
    "entry_from_transcript",
    "write_report",
]

MAX_TEXT = 300
#: Byte budgets of a scenario's parts (UTF-8, after escaping); a list that would pass
#: its budget stops there and says how many items it left out.
FAILURE_CHARS = 6000  # one failing expectation, shown whole up to this size
BUDGETS = {"failures": 30_000, "timeline": 40_000, "decisions": 30_000, "calls": 80_000}
#: The most one scenario adds to the page, in bytes (UTF-8), whatever its transcript:
#: the budgets above plus the bounded header, suite-table row and notes.
SCENARIO_BYTES_MAX = 200_000

_STATUS_COLOURS = {
    "iteration": ("#c9cdf5", "#5c64c7"),
    "running": ("#aecbfa", "#1a73e8"),
    "completed": ("#8fd19e", "#2f7d3f"),
    "failed": ("#f28b82", "#b3261e"),
    "lost": ("#fbbc04", "#b06000"),
}

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-top:1px solid #ccc;padding-top:1em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:2px 8px;
text-align:left;vertical-align:top}th{background:#f3f3f3}
.passed{color:#2f7d3f;font-weight:600}.failed{color:#b3261e;font-weight:600}
.recorded{color:#555;font-weight:600}
.failures{background:#fdecea;border:1px solid #f28b82;padding:.5em 1em}
pre{white-space:pre-wrap;word-break:break-word;margin:.2em 0;font-size:12px}
details{margin:2px 0}summary{cursor:pointer}.more{color:#777;font-style:italic}
.legend span{display:inline-block;padding:0 6px;margin-right:6px;border:1px solid}
svg.timeline text{font-size:11px;font-family:system-ui,sans-serif}
td.judged{white-space:nowrap;font-family:monospace;font-size:12px}
.answer-fields code{font-size:12px;background:#f3f3f3;padding:0 4px;margin-right:6px}
""".strip()


def _e(value: Any) -> str:
    return html_text(value)


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return (
        f"{value:.3f} s" if 0 < value < 1 else f"{value:.3g} s" if value < 100 else f"{value:.0f} s"
    )


def _fit(parts: Iterable[str], budget: int) -> tuple[list[str], int]:
    """The parts that fit in ``budget`` bytes, in order, and how many did not."""
    kept: list[str] = []
    used = 0
    left_out = 0
    for part in parts:
        size = len(part.encode("utf-8", "surrogatepass"))
        if left_out or used + size > budget:
            left_out += 1
            continue
        kept.append(part)
        used += size
    return kept, left_out


@dataclass
class ReportEntry:
    """One scenario (or one recorded run) in the report.

    ``result`` is ``passed``, ``failed`` or ``recorded`` (a transcript without a verdict);
    ``failures`` are the failing expectations as text (file:line first); ``divergence``
    the first place the run departed from what was expected (a snapshot's first
    differing lines, a replay's first divergent event), when known; ``real_time`` the
    wall seconds the test took, as the test runner measured them.
    """

    name: str
    result: str
    transcript: Transcript | None = None
    description: str = ""
    engine: str = "loopsim"
    iterations: int | None = None
    stop_reason: str | None = None
    virtual_time: float | None = None
    real_time: float | None = None
    seed: int | None = None
    backend: str | None = None
    failures: list[str] = field(default_factory=list)
    divergence: str | None = None


def _loop_facts(transcript: Transcript) -> tuple[int | None, str | None]:
    iterations: int | None = None
    reason: str | None = None
    for event in transcript.events:
        if event.kind == "loop_stop":
            value = event.data.get("iterations")
            iterations = value if isinstance(value, int) else iterations
            reason = str(event.data.get("reason"))
    return iterations, reason


def entry_from_transcript(transcript: Transcript, *, name: str | None = None) -> ReportEntry:
    """A report entry for a recorded run (no verdict: ``result`` is ``recorded``)."""
    iterations, reason = _loop_facts(transcript)
    return ReportEntry(
        name=name or transcript.scenario or "transcript",
        result="recorded",
        transcript=transcript,
        iterations=iterations,
        stop_reason=reason,
        virtual_time=transcript.events[-1].time if transcript.events else 0.0,
        seed=transcript.seed,
        backend=transcript.backend,
        engine=transcript.engine or "loopsim",  # the header names any other engine
    )


# -- the timeline ------------------------------------------------------------------------

_LANE_H = 22
_LABEL_W = 150
_PLOT_W = 760


def _bar(n: int, lane: str, bar: Span, scale: float, unit: str = "s") -> str:
    y = n * _LANE_H + 4
    fill, stroke = _STATUS_COLOURS.get(bar.status, ("#ddd", "#888"))
    x = _LABEL_W + bar.start * scale
    bar_w = max((bar.end - bar.start) * scale, 2.0)
    if unit:
        tip = f"{bar.label}: {bar.start:g} {unit} to {bar.end:g} {unit}"
    else:
        tip = f"{bar.label}: events #{bar.start:g} to #{bar.end:g}"
    if bar.detail:
        tip += f" - {_clip(bar.detail, 100)}"
    name = f"<text x='4' y='{y + 14}'>{_e(_clip(lane, 22))}</text>" if lane else ""
    label = _clip(bar.label, 60)
    label_x, anchor = _label_place(x, bar_w, label)
    return (
        f"{name}<rect class='bar status-{_e(bar.status)}' data-start='{bar.start:g}' "
        f"data-end='{bar.end:g}' x='{x:.1f}' y='{y}' width='{bar_w:.1f}' height='16' "
        f"fill='{fill}' stroke='{stroke}'><title>{_e(_clip(tip, 200))}</title></rect>"
        f"<text x='{label_x:.1f}' y='{y + 13}'{anchor}>{_e(label)}</text>"
    )


def _label_place(x: float, bar_w: float, label: str) -> tuple[float, str]:
    """Where a bar's label goes: inside the bar when it has room, else right of it, or
    left of it near the right edge (x and the text-anchor attribute)."""
    need = 6.5 * len(label) + 8
    if bar_w >= need:
        return x + 4, ""
    if x + bar_w + need <= _LABEL_W + _PLOT_W + 20:
        return x + bar_w + 4, ""
    return x - 4, " text-anchor='end'"


#: a loop run of more iterations than this draws its first and last and one folded bar
FOLD_AFTER = 3


def _folded(bars: list[Span]) -> list[Span]:
    """Each loop run's iterations as the sequence diagram folds them: the first, one bar
    for the middle ones ("iterations 2-39 (38 folded)") and the last."""
    out: list[Span] = []
    run: list[Span] = []

    def flush() -> None:
        if len(run) <= FOLD_AFTER:
            out.extend(run)
        else:
            middle = run[1:-1]
            first, last = middle[0].label.split()[1], middle[-1].label.split()[1]
            suffix = run[0].label.partition(" (")[2]
            label = f"iterations {first}-{last} ({len(middle)} folded)" + (
                f" ({suffix}" if suffix else ""
            )
            folded = Span(
                run[0].lane,
                label,
                middle[0].start,
                middle[-1].end,
                "iteration",
                f"{middle[0].ident}-{middle[-1].ident}",
                "folded: they went alike",
            )
            out.extend([run[0], folded, run[-1]])
        run.clear()

    for bar in bars:
        same_run = (
            run
            and run[-1].lane == bar.lane
            and (run[-1].label.partition(" (")[2] == bar.label.partition(" (")[2])
        )
        if not same_run:
            flush()
        run.append(bar)
    flush()
    return out


def _ordered_rows(found: Spans) -> list[tuple[str, Span]]:
    """Rows, the story first: task lanes (those with a lost or failed run first), then
    the loops' iterations, folded."""
    tasks: dict[str, list[Span]] = {}
    loops: list[Span] = []
    for bar in found.bars:
        if bar.status == "iteration":
            loops.append(bar)
        else:
            tasks.setdefault(bar.lane, []).append(bar)
    lanes = sorted(
        tasks.items(), key=lambda item: not any(b.status in ("lost", "failed") for b in item[1])
    )
    loop_lanes: dict[str, list[Span]] = {}
    for bar in _folded(loops):
        loop_lanes.setdefault(bar.lane, []).append(bar)
    return [
        (lane if i == 0 else "", bar)
        for lane, bars in [*lanes, *loop_lanes.items()]
        for i, bar in enumerate(bars)
    ]


def _in_event_order(transcript: Transcript) -> list[TranscriptEvent]:
    """The events with each one's position as its time: the axis of a run that took no
    virtual time, where every bar would start and end at 0 s."""
    return [
        TranscriptEvent.model_construct(seq=e.seq, time=float(n), kind=e.kind, data=e.data)
        for n, e in enumerate(transcript.events)
    ]


def _timeline(transcript: Transcript) -> str:
    found = spans(transcript.events)
    if not found.bars:
        return "<p class='more'>no loop iterations or background tasks</p>"
    timed = max(found.end, *(b.end for b in found.bars)) > 0
    if not timed:
        found = spans(_in_event_order(transcript))
    unit = "s" if timed else ""
    rows = _ordered_rows(found)
    end = max(found.end, *(b.end for b in found.bars)) or 1.0
    scale = _PLOT_W / end
    drawn, left_out = _fit(
        (_bar(n, lane, bar, scale, unit) for n, (lane, bar) in enumerate(rows)),
        BUDGETS["timeline"],
    )
    count = len(drawn)
    axis_y = _LANE_H * count + 8
    width = _LABEL_W + _PLOT_W + 20
    axis = "virtual time" if timed else "event order (the run took no virtual time)"
    out = [
        (
            f"<svg class='timeline' data-axis='{'time' if timed else 'events'}' "
            f"xmlns='http://www.w3.org/2000/svg' width='{width}'"
            f" height='{axis_y + 36}' role='img' aria-label='task timeline'>"
        ),
    ]
    for tick in range(6):
        value = end * tick / 5
        x = _LABEL_W + value * scale
        label = f"{value:g} s" if timed else f"#{round(value)}"
        out.append(
            f"<line x1='{x:.1f}' x2='{x:.1f}' y1='0' y2='{axis_y}' stroke='#eee'/>"
            f"<text x='{x:.1f}' y='{axis_y + 14}' text-anchor='middle'>{label}</text>"
        )
    out.append(
        f"<text class='axis' x='{_LABEL_W + _PLOT_W / 2:.1f}' y='{axis_y + 30}' "
        f"text-anchor='middle'>{axis}</text>"
    )
    out.extend(drawn)
    for when in found.restarts[:20]:
        x = _LABEL_W + when * scale
        at = f"{when:g} s" if timed else f"event #{round(when)}"
        out.append(
            f"<line class='restart' x1='{x:.1f}' x2='{x:.1f}' y1='0' y2='{axis_y}' "
            f"stroke='#202080' stroke-width='2'><title>process restart at {at}</title>"
            "</line>"
        )
    out.append("</svg>")
    if left_out:
        out.append(f"<p class='more'>{left_out} more bar(s) not drawn (size limit)</p>")
    return "".join(out)


# -- per scenario ------------------------------------------------------------------------


def _one_line(text: str, limit: int = 80) -> str:
    """The first line of ``text``, cut to ``limit`` characters (an ellipsis says so)."""
    lines = text.strip().splitlines() or [""]
    first = lines[0]
    if len(lines) > 1 or len(first) > limit:
        return first[: limit - 1].rstrip() + "\u2026"
    return first


def _judged_decisions(transcript: Transcript) -> list[tuple[int, Any, str]]:
    """Each evaluator decision with the run it belongs to (1-based, per loop: a run ends
    at its ``loop_stop``) and the text it judged (the last model answer before it)."""
    runs: dict[Any, int] = {}
    judged = ""
    found = []
    for event in transcript.events:
        if event.kind == "model_response":
            messages = [m for m in event.data.get("messages") or () if isinstance(m, dict)]
            if messages:
                judged = message_summary(messages[-1])
        elif event.kind == "evaluator_decision":
            found.append((runs.get(event.data.get("loop"), 0) + 1, event, judged))
        elif event.kind == "loop_stop":
            loop = event.data.get("loop")
            runs[loop] = runs.get(loop, 0) + 1
    return found


def _decisions(transcript: Transcript) -> str:
    rows = _judged_decisions(transcript)
    if not rows:
        return ""
    out = [
        (
            "<h3>Evaluator decisions</h3><table class='decisions'><tr><th>run</th>"
            "<th>iteration</th><th>t</th><th>evaluator</th><th>decision</th><th>judged</th>"
            "<th>feedback</th></tr>"
        )
    ]
    cells, left_out = _fit(
        (
            f"<tr><td>{run}</td><td>{_e(e.data.get('iteration'))}</td><td>{e.time:g}</td>"
            f"<td>{_e(_clip(str(e.data.get('evaluator')), 100))}</td>"
            f"<td>{_e(_clip(str(e.data.get('decision')), 40))}</td>"
            f"<td class='judged' title='{_e(_clip(judged, 300))}'>{_e(_one_line(judged))}</td>"
            f"<td>{_e(_clip(str(e.data.get('feedback') or '')))}</td></tr>"
            for run, e, judged in rows
        ),
        BUDGETS["decisions"],
    )
    out.extend(cells)
    out.append("</table>")
    if left_out:
        out.append(f"<p class='more'>{left_out} more decision(s) (size limit)</p>")
    return "".join(out)


def _summaries(messages: Iterable[Any]) -> str:
    return "\n".join(_clip(message_summary(m)) for m in messages if isinstance(m, dict))


def _answer_fields(parts: list[tuple[str, str]]) -> str:
    """The answer fields the model set, one ``name=value`` chip each (nothing for none)."""
    if not parts:
        return ""
    chips = "".join(
        f"<code data-field='{_e(name)}'>{_e(name)}={_e(value)}</code>" for name, value in parts
    )
    return f"<div class='answer-fields'>{chips}</div>"


def _model_calls(transcript: Transcript) -> str:
    calls: list[tuple[float, dict[str, Any], str, list[tuple[str, str]]]] = []
    for event in transcript.events:
        if event.kind == "model_request":
            calls.append((event.time, event.data, "", []))
        elif event.kind in ("model_response", "model_error") and calls:
            time, request, _, _ = calls[-1]
            d = event.data
            fields: list[tuple[str, str]] = []
            if event.kind == "model_error":
                answer = f"{d.get('error')}: {d.get('message')}"
            else:
                answer = _summaries(d.get("messages") or ())
                fields = answer_field_parts(d, max_text=MAX_TEXT // 2)
            calls[-1] = (time, request, _clip(answer, MAX_TEXT * 2), fields)
    if not calls:
        return ""
    out = [f"<h3>Model calls ({len(calls)})</h3>"]

    def one(
        time: float, request: dict[str, Any], answer: str, fields: list[tuple[str, str]]
    ) -> str:
        messages = list(request.get("messages") or ())
        last = _clip(message_summary(messages[-1]), 120) if messages else "<no messages>"
        return (
            f"<details class='model-call'><summary>t={time:g} "
            f"{_e(_clip(str(request.get('agent')), 60))}: {_e(last)}</summary>"
            f"<pre>{_e(_summaries(messages[-4:]))}</pre>"
            f"<b>answer</b><pre>{_e(answer)}</pre>{_answer_fields(fields)}</details>"
        )

    shown, left_out = _fit((one(*call) for call in calls), BUDGETS["calls"])
    out.extend(shown)
    if left_out:
        out.append(f"<p class='more'>{left_out} more model call(s) (size limit)</p>")
    return "".join(out)


def _failures(entry: ReportEntry) -> str:
    if not entry.failures and entry.divergence is None:
        return ""
    out = ["<div class='failures'><h3>Failing expectations</h3><ul>"]
    items, left_out = _fit(
        # room for a trajectory failure's aligned table (about 30 rows)
        (f"<li><pre>{_e(_clip(f, FAILURE_CHARS))}</pre></li>" for f in entry.failures),
        BUDGETS["failures"] - 20_000,
    )
    out.extend(items)
    out.append("</ul>")
    if left_out:
        out.append(f"<p class='more'>{left_out} more (size limit)</p>")
    if entry.divergence is not None:
        out.append(
            f"<h3>First divergence</h3><pre class='divergence'>"
            f"{_e(_clip(entry.divergence, 3000))}</pre>"  # <= 18 kB escaped
        )
    out.append("</div>")
    return "".join(out)


def _section(n: int, entry: ReportEntry) -> str:
    facts = (
        f"seed {_e(entry.seed)}, backend {_e(entry.backend)}, virtual time "
        f"{_e(_seconds(entry.virtual_time))}"
    )
    parts = [
        f"<section class='scenario' id='scenario-{n}' data-result='{_e(entry.result)}'>",
        (
            f"<h2>{_e(_clip(entry.name, 200))} <span class='{_e(entry.result)}'>"
            f"{_e(entry.result)}</span></h2>"
        ),
    ]
    if entry.description:
        parts.append(f"<p class='description'>{_e(_clip(entry.description, 1000))}</p>")
    parts.append(f"<p class='facts'>{facts}</p>")
    parts.append(_failures(entry))
    if entry.transcript is not None:
        parts.append("<h3>Timeline</h3>" + _timeline(entry.transcript))
        parts.append(_decisions(entry.transcript))
        parts.append(_model_calls(entry.transcript))
    parts.append("</section>")
    return "".join(parts)


def _suite_table(entries: Sequence[ReportEntry]) -> str:
    out = [
        (
            "<table id='suite'><tr><th>scenario</th><th>result</th><th>engine</th>"
            "<th>iterations</th><th>stop reason</th><th>virtual time</th><th>real time</th></tr>"
        )
    ]
    for n, entry in enumerate(entries, start=1):
        out.append(
            f"<tr data-result='{_e(entry.result)}'><td><a href='#scenario-{n}'>"
            f"{_e(_clip(entry.name, 200))}</a></td><td class='{_e(entry.result)}'>"
            f"{_e(entry.result)}</td><td>{_e(entry.engine)}</td>"
            f"<td>{_e('-' if entry.iterations is None else entry.iterations)}</td>"
            f"<td>{_e(entry.stop_reason or '-')}</td><td>{_e(_seconds(entry.virtual_time))}</td>"
            f"<td>{_e(_seconds(entry.real_time))}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _legend() -> str:
    return (
        "<p class='legend'>"
        + "".join(
            f"<span style='background:{fill};border-color:{stroke}'>{status}</span>"
            for status, (fill, stroke) in _STATUS_COLOURS.items()
        )
        + "<span style='border-color:#202080'>| process restart</span></p>"
    )


def build_report(entries: Sequence[ReportEntry], *, title: str = "loopsim report") -> str:
    """The whole page as text: a suite table, then one section per entry."""
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry.result] = counts.get(entry.result, 0) + 1
    summary = ", ".join(f"{count} {result}" for result, count in sorted(counts.items()))
    body = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1><p id='totals'>{len(entries)} scenario(s): {_e(summary)}</p>",
        _suite_table(entries),
        _legend(),
        *(_section(n, entry) for n, entry in enumerate(entries, start=1)),
        "</body></html>\n",
    ]
    return "".join(body)


def write_report(
    path: str | os.PathLike[str], entries: Sequence[ReportEntry], *, title: str = "loopsim report"
) -> Path:
    """Build the page and write it atomically; returns the path."""
    return write_atomic(path, no_surrogates(build_report(entries, title=title)))
