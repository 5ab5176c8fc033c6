"""Run every benchmark, print one table and write it as JSON (and Markdown).

Usage (from the repository root, in an environment with the ``bench`` extra, e.g.
``tox -e bench`` or ``pip install -e '.[bench]'``)::

    python benchmarks/run.py                 # all sections, ~5 minutes on 2 cores
    python benchmarks/run.py --quick         # smaller sizes, a smoke run (~1 minute)
    python benchmarks/run.py --sections loop scale
    python benchmarks/run.py --sections af   # the agent_framework engine (issue 11)
    python benchmarks/run.py --readme        # also refresh the table in README.md

Every row with a target shows it and a yes/NO (and the run ends with the list of NO
rows); ratio rows are paired alternating rounds, medians of ratios with a bootstrap
interval in the note; absolute rows say they are machine-dependent (see ``_common``).
The ``last runs`` column is that row's verdict in the latest full runs, oldest first
(up to :data:`HISTORY` of them, carried over in results.json), and the run ends with the
rows whose verdict changed in them. A full run is every section, without ``--quick``;
other runs neither read nor extend the history.

Writes ``benchmarks/results.json`` (rows + machine), ``benchmarks/results.md`` (the table)
and, with the ``profile`` section, ``benchmarks/profile.txt`` (pyinstrument call tree of
the loop benchmark). A run of some sections only writes ``results.partial.json`` and
``.md`` instead (not kept in git), so that it never replaces the full table; ``--readme``
takes a full run. Ratios are loopsim against agent-framework-core measured in this
same process run; when that package is missing its columns stay empty.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_af  # noqa: E402
import bench_faults  # noqa: E402
import bench_loop  # noqa: E402
import bench_memory  # noqa: E402
import bench_overheads  # noqa: E402
import bench_parallel  # noqa: E402
import bench_recording  # noqa: E402
import bench_report  # noqa: E402
import bench_scale  # noqa: E402
import bench_stages  # noqa: E402
import bench_startup  # noqa: E402
import bench_suites  # noqa: E402
import bench_time  # noqa: E402
import bench_trajectory  # noqa: E402
from _common import Row, upstream_available  # noqa: E402

SECTIONS = (
    "loop",
    "time",
    "scale",
    "stages",
    "suites",
    "report",
    "profile",
    "af",
    "recording",
    "faults",
    "trajectory",
    "memory",
    "startup",
    "parallel",
    "overheads",
)
#: How many full runs' verdicts a row keeps (issue 28: a verdict must hold in three).
HISTORY = 3
README_START = "<!-- benchmarks:start -->"
README_END = "<!-- benchmarks:end -->"


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, object]:
    return {
        # a benchmark report's date is the real one (this is not simulation code)
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "loopsim": _version("pytest-loopsim"),  # the distribution's name
        "agent-framework-core": _version("agent-framework-core"),
    }


def _fmt(value: float | None) -> str:
    if value is None:
        return ""
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _verdict(met: bool | None) -> str:
    return "" if met is None else ("yes" if met else "NO")


def _key(section: str, case: str) -> str:
    """What a row's verdict history is kept under (its case names no measured figure)."""
    return f"{section}: {case}"


def _was_full(payload: object) -> bool:
    """A results.json of a full run (every section, not --quick)."""
    if not isinstance(payload, dict):
        return False
    if "full" in payload:
        return payload["full"] is True
    return payload.get("quick") is False  # written before the "full" key


def with_history(rows: Sequence[Row], previous: Path, *, full: bool) -> None:
    """Give each targeted row its verdicts of the latest full runs (``extra["verdicts"]``,
    oldest first, this run's last), from the rows of ``previous`` (the last results.json).

    Only full runs count: a run that is not one, or a previous file that is missing,
    unreadable or not of a full run, starts no history from it.
    """
    before: dict[str, list[bool]] = {}
    if full:
        try:
            payload = json.loads(previous.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            payload = {}
        if _was_full(payload):
            for old in payload.get("rows", []):
                verdicts = old.get("extra", {}).get("verdicts")
                if isinstance(verdicts, list):
                    before[_key(old["section"], old["case"])] = verdicts
    for row in rows:
        if row.met is None:
            continue
        row.extra["verdicts"] = [*before.get(_key(row.section, row.case), []), row.met][-HISTORY:]


def unsettled(rows: Sequence[Row]) -> list[Row]:
    """The targeted rows whose verdict changed within their recorded runs."""
    return [r for r in rows if len(set(r.extra.get("verdicts", ()))) > 1]


def table(rows: Sequence[Row]) -> list[list[str]]:
    out = [
        [
            "section",
            "case",
            "loopsim",
            "unit",
            "upstream",
            "x faster",
            "target",
            "met",
            "last runs",
            "note",
        ]
    ]
    for r in rows:
        ratio = "" if r.ratio is None else f"{r.ratio:.1f}x"
        out.append(
            [
                r.section,
                r.case,
                _fmt(r.value),
                r.unit,
                _fmt(r.upstream),
                ratio,
                r.target,
                _verdict(r.met),
                " ".join(_verdict(v) for v in r.extra.get("verdicts", ())),
                r.note,
            ]
        )
    return out


def render_text(cells: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    lines = []
    for index, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def render_markdown(cells: list[list[str]], info: dict[str, object]) -> str:
    head = (
        f"Measured {info['date']} on {info['cpu']} ({info['cores']} cores), "
        f"Python {info['python']}, {info['platform']}; loopsim {info['loopsim']}, "
        f"agent-framework-core {info['agent-framework-core'] or '(not installed)'}."
    )
    lines = [head, "", "| " + " | ".join(cells[0]) + " |", "|" + "---|" * len(cells[0])]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells[1:]]
    return "\n".join(lines)


def update_readme(markdown: str, readme: Path) -> None:
    text = readme.read_text(encoding="utf-8")
    if README_START not in text or README_END not in text:
        print(f"{readme}: no {README_START} ... {README_END} markers; left unchanged")
        return
    before, rest = text.split(README_START, 1)
    _, after = rest.split(README_END, 1)
    readme.write_text(f"{before}{README_START}\n{markdown}\n{README_END}{after}", encoding="utf-8")


def default_output(sections: Sequence[str]) -> Path:
    """results.json for every section; results.partial.json for some (never the table)."""
    return HERE / ("results.json" if set(sections) == set(SECTIONS) else "results.partial.json")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sections", nargs="*", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a smoke run")
    parser.add_argument("--no-upstream", action="store_true", help="skip agent-framework-core")
    parser.add_argument(
        "--output",
        type=Path,
        help="the JSON file to write (default: results.json, or results.partial.json "
        "for a run of some sections)",
    )
    parser.add_argument("--readme", action="store_true", help="refresh the table in README.md")
    args = parser.parse_args(argv)
    partial = set(args.sections) != set(SECTIONS)
    if args.readme and (partial or args.quick):
        parser.error("--readme refreshes the whole table: it takes every section, not --quick")
    if args.output is None:
        args.output = default_output(args.sections)

    upstream = not args.no_upstream
    if upstream and not upstream_available():
        print(
            "agent-framework-core is not installed: upstream columns stay empty "
            "(pip install -e '.[bench]')"
        )
        upstream = False
    quick = args.quick
    rows: list[Row] = []
    began = time.perf_counter()

    def log(text: str) -> None:
        print(f"  [{time.perf_counter() - began:6.1f}s] {text}", flush=True)

    if "loop" in args.sections:
        print("loop overhead ...", flush=True)
        rows += bench_loop.run(
            (10, 100) if quick else (10, 100, 1000),
            repeat=3 if quick else 5,
            upstream=upstream,
            log=log,
        )
    if "time" in args.sections:
        print("virtual time ...", flush=True)
        rows += bench_time.run(repeat=5 if quick else 21, log=log)
    if "scale" in args.sections:
        print("scale ...", flush=True)
        rows += bench_scale.run(
            (100, 1000) if quick else (1_000, 10_000),
            # the growth row's paired ratio sits near its target: seven rounds (~10 s)
            repeat=1 if quick else 7,
            upstream=upstream,
            upstream_size=100 if quick else 1_000,
            log=log,
        )
    if "stages" in args.sections:
        print("stages of a scenario file ...", flush=True)
        rows += bench_stages.run(
            # five rounds: the --loopsim-transcripts ratio sits near its 1.3x target
            files=100 if quick else 1000,
            rounds=1 if quick else 5,
            log=log,
        )
    if "suites" in args.sections:
        print("suites ...", flush=True)
        rows += bench_suites.run(
            files=100 if quick else 1000, examples=100 if quick else 500, log=log
        )
    if "report" in args.sections:
        print("report ...", flush=True)
        rows += bench_report.run(n=100 if quick else 1000, log=log)
    if "af" in args.sections:
        if upstream:
            print("agent_framework engine ...", flush=True)
            rows += bench_af.run(repeat=5 if quick else 81, log=log)
        else:
            print("agent_framework engine skipped: agent-framework-core is not installed")
    if "memory" in args.sections:
        print("memory across runs ...", flush=True)
        engines = ("loopsim", "agent_framework") if upstream else ("loopsim",)
        rows += bench_memory.run(engines, runs=300 if quick else 2000, log=log)
        print("memory per iteration of a long loop ...", flush=True)
        sizes = {"loopsim": [10, 100, 1000], "agent_framework": [10, 100, 200]}
        rows += bench_memory.iteration_rows(engines, sizes, log=log)
    if "overheads" in args.sections:
        print("overheads: zero-touch tracing, live session state ...", flush=True)
        rows += bench_overheads.run(repeat=5 if quick else 21, log=log)
    if "profile" in args.sections:
        try:
            import profile_loop  # noqa: PLC0415

            text = "\n".join(
                f"=== {case} ===\n{profile_loop.profile(case, 200 if quick else 1000)}"
                for case in profile_loop.CASES
            )
        except ImportError as exc:
            print(f"profile skipped ({exc}); pip install pyinstrument")
        else:
            (HERE / "profile.txt").write_text(text, encoding="utf-8")
            print(f"profile written to {HERE / 'profile.txt'}")

    if "recording" in args.sections:
        print("recording ...", flush=True)
        rows += bench_recording.run(
            (10, 100) if quick else (10, 100, 1000), repeat=3 if quick else 5, log=log
        )
    if "faults" in args.sections:
        print("faults ...", flush=True)
        rows += bench_faults.run(20, repeat=5 if quick else 21, log=log)
    if "trajectory" in args.sections:
        print("trajectory ...", flush=True)
        rows += bench_trajectory.run(repeat=3 if quick else 15, log=log)
    if "startup" in args.sections:
        print("start-up and the wall clock per test ...", flush=True)
        rows += bench_startup.run(rounds=5 if quick else 9, log=log)
    if "parallel" in args.sections:
        print("parallel runs ...", flush=True)
        rows += bench_parallel.run(
            sizes=(10, 100) if quick else (10, 100, 1000), rounds=1 if quick else 3, log=log
        )
    info = machine()
    full = not quick and not partial
    with_history(rows, args.output, full=full)
    cells = table(rows)
    print()
    print(render_text(cells))
    targeted = [r for r in rows if r.met is not None]
    missed = [r for r in targeted if not r.met]
    print(f"\ntargets: {len(targeted) - len(missed)} of {len(targeted)} met")
    for r in missed:
        print(f"  NO  {r.section}: {r.case} = {_fmt(r.value)} {r.unit} (target {r.target})")
    changed = unsettled(rows)
    runs = max((len(r.extra.get("verdicts", ())) for r in targeted), default=0)
    if full:
        print(f"verdicts changed within the last {runs} full run(s): {len(changed)}")
    for r in changed:
        history = " ".join(_verdict(v) for v in r.extra["verdicts"])
        print(f"  {history}  {_key(r.section, r.case)}")
    payload = {
        "machine": info,
        "quick": quick,
        "full": full,  # only a full run's verdicts carry on (with_history)
        "sections": list(args.sections),
        "rows": [r.as_dict() for r in rows],
    }
    args.output.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    markdown = render_markdown(cells, info)
    args.output.with_suffix(".md").write_text(markdown + "\n", encoding="utf-8")
    print(
        f"\nwrote {args.output} and {args.output.with_suffix('.md')} "
        f"({time.perf_counter() - began:.0f} s)"
    )
    if args.readme:
        update_readme(markdown, HERE.parent / "README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
