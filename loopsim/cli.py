"""The ``loopsim`` command line: run, validate and scaffold scenarios, print the schema,
show and replay transcripts, check evaluators.

Exit codes: 0 everything passed / was valid, 1 a scenario (or test) failed, 2 usage error
or invalid scenario files.

Example:
    $ loopsim new checkout-flow        # writes checkout-flow.loopsim.yaml
    $ loopsim validate scenarios/
    $ loopsim run scenarios/ -n auto --junit-xml=report.xml
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import itertools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._clients import ReplayChatClient
from ._errors import ReplayMismatchError, ScenarioError
from ._files import sync_folders, write_atomic
from ._report._cli import add_report_parser
from ._transcript._commands import Replayed, add_replay_parser, add_show_parser, cmd_show
from ._transcript._commands import cmd_replay as transcript_replay
from .testing._commands import add_check_evaluator_parser

if TYPE_CHECKING:
    from ._transcript import Transcript

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

SCENARIO_SUFFIXES = (".loopsim.yaml", ".loopsim.yml", ".loopsim.json")

Command = Callable[[argparse.Namespace], int]


def scenario_files(paths: Sequence[str | Path]) -> Iterator[Path]:
    """The scenario files named by ``paths``: files as given, folders searched recursively."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.name.endswith(SCENARIO_SUFFIXES))
            yield from found
        else:
            yield path


# -- schema -------------------------------------------------------------------------------------


def _add_schema(sub: Any) -> None:
    parser = sub.add_parser(
        "schema",
        help="print the JSON Schema of scenario files",
        description="Print the JSON Schema of scenario files (for editors and CI checks).",
    )
    parser.add_argument("-o", "--output", help="write the schema to this file instead")
    parser.set_defaults(command=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    """Print (or write) the JSON Schema."""
    from ._scenario._jsonschema import render_json_schema  # noqa: PLC0415 - keep startup light

    text = render_json_schema()
    if args.output:
        write_atomic(args.output, text)
        print(f"wrote {args.output}")  # noqa: T201 - CLI output
    else:
        sys.stdout.write(text)
    return EXIT_OK


# -- validate -----------------------------------------------------------------------------------


def _add_validate(sub: Any) -> None:
    parser = sub.add_parser(
        "validate",
        help="check scenario files without running them",
        description="Load every scenario file, import and call its factories (running "
        "nothing), and report its problems (up to 20 per file), each with file, line and "
        "field.",
    )
    parser.add_argument("paths", nargs="+", help="scenario files or folders")
    parser.set_defaults(command=cmd_validate)


def _validate_one(file: Path) -> bool:
    """Load one file, build its ``factory:`` agents (running nothing), and print ``ok`` or
    its located errors; True when it is valid."""
    from ._scenario import load_scenario  # noqa: PLC0415 - keep startup light
    from ._scenario._dry_build import factory_problems  # noqa: PLC0415 - keep startup light

    try:
        loaded = load_scenario(file)
    except ScenarioError as exc:
        print(f"invalid  {exc}")  # noqa: T201 - CLI output
        for other in exc.others:
            print(f"         {other}")  # noqa: T201 - CLI output
        if exc.omitted:
            print(f"         … and {exc.omitted} more problem(s) in this file")  # noqa: T201
        return False
    problems = factory_problems(loaded)
    if problems:
        first, *others = problems
        print(f"invalid  {first}")  # noqa: T201 - CLI output
        for other in others:
            print(f"         {other}")  # noqa: T201 - CLI output
        return False
    print(f"ok       {file} ({loaded.name})")  # noqa: T201 - CLI output
    return True


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate files; exit 2 when any is invalid (or none was found)."""
    files = list(scenario_files(args.paths))
    if not files:
        print("loopsim validate: no scenario files found", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    from ._supervise import phase  # noqa: PLC0415

    invalid = 0
    for file in files:
        with phase("validate", scenario=str(file), bound=None):
            invalid += not _validate_one(file)
    total = len(files)
    print(  # noqa: T201 - CLI output
        f"\n{total} scenario file{'s' if total != 1 else ''}: {total - invalid} valid, "
        f"{invalid} invalid"
    )
    return EXIT_USAGE if invalid else EXIT_OK


# -- new ------------------------------------------------------------------------------------------


STARTER = """\
# yaml-language-server: $schema={schema}
#
# A loopsim scenario: agents with scripted model turns, the parent the host talks to,
# the loop around it, the host's steps and what must hold at the end.
# Format reference: docs/scenarios.md. Check it with `loopsim validate {file}`,
# run it with `loopsim run {file}` (or plain `pytest`).
version: 1
name: {name}
description: >-
  A writer drafts, is told to continue, and finishes with the completion marker.
seed: 0                      # same seed + same scenario = byte-identical transcript
backend: asyncio             # or trio

agents:
  writer:
    instructions: Write the answer; say DONE when it is complete.
    script:                  # one item per model turn; the fake fails loudly past the end
      - reply: Here is a first draft.
        delay: 20            # virtual seconds the model "thinks" (costs no real time)
      - reply: Here is the final answer. DONE
        delay: 30
        usage: {{input_tokens: 120, output_tokens: 40}}

parent:
  agent: writer              # the agent the host runs
  history_store: in_memory   # or service_conversation / service_response_chain

loop:
  evaluators:                # asked in order; the loop stops when all stop
    - completion_marker: DONE
  max_iterations: 5

steps:                       # what the host does, in order
  - run: Write a haiku about virtual time.

expect:
  iterations: 2
  stop_reason: evaluators_stopped
  calls: {{writer: 2}}
  elapsed: 50                # virtual seconds
  response:
    contains: DONE
"""


def _add_new(sub: Any) -> None:
    parser = sub.add_parser(
        "new",
        help="write a commented starter scenario",
        description="Write NAME.loopsim.yaml, a commented starter scenario (never overwrites).",
    )
    parser.add_argument("name", help="scenario name or path (.loopsim.yaml is added)")
    parser.set_defaults(command=cmd_new)


def _schema_reference(target: Path) -> str:
    """A relative path to the nearest ``loopsim.schema.json`` (written next to the file if
    there is none above it)."""
    from ._scenario._jsonschema import SCHEMA_FILE_NAME, render_json_schema  # noqa: PLC0415

    folder = target.parent.resolve()
    for candidate_dir in (folder, *folder.parents):
        for candidate in (
            candidate_dir / SCHEMA_FILE_NAME,
            candidate_dir / "scenarios" / SCHEMA_FILE_NAME,
        ):
            if candidate.is_file():
                try:
                    return Path(_relpath(candidate, folder)).as_posix()
                except ValueError:
                    return candidate.as_uri()
    schema = folder / SCHEMA_FILE_NAME
    write_atomic(schema, render_json_schema())
    print(f"wrote {schema}")  # noqa: T201 - CLI output
    return SCHEMA_FILE_NAME


def _relpath(path: Path, start: Path) -> str:
    import os  # noqa: PLC0415

    return os.path.relpath(path, start)


def cmd_new(args: argparse.Namespace) -> int:
    """Write a starter scenario; refuse to overwrite."""
    raw = str(args.name)
    target = Path(raw if raw.endswith(SCENARIO_SUFFIXES) else raw + ".loopsim.yaml")
    if target.exists():
        print(f"loopsim new: {target} already exists; not overwriting it", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    if not target.parent.is_dir():
        print(f"loopsim new: folder {target.parent} does not exist", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    name = target.name
    for suffix in SCENARIO_SUFFIXES:
        name = name.removesuffix(suffix)
    text = STARTER.format(schema=_schema_reference(target), name=name, file=target)
    with target.open("x", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    print(f"wrote {target}; run it with: loopsim run {target}")  # noqa: T201 - CLI output
    return EXIT_OK


# -- run ------------------------------------------------------------------------------------------


def _add_run(sub: Any) -> None:
    parser = sub.add_parser(
        "run",
        help="run scenarios (and tests) through pytest",
        description="Run scenario files through pytest with the loopsim plugin. Any pytest "
        "option works after the paths: -k, -x, -n auto, --junit-xml=FILE, "
        "--loopsim-seed=N, --loopsim-backend=trio, --loopsim-transcripts=DIR, "
        "--loopsim-max-examples=N, --loopsim-record-mode=once, --snapshot-update. "
        "With -n, a suite of fewer than 2,000 scenario files, none with vary: and no "
        "Python tests, runs serially (workers would be slower; it says so); --parallel "
        "keeps -n. With "
        "pytest-split installed "
        "(pytest-loopsim[shard]) --splits N --group I runs one share of the suite.",
        add_help=True,
    )
    parser.add_argument("paths", nargs="*", default=[], help="scenario files or folders")
    parser.add_argument(
        "--engine",
        choices=("loopsim", "agent_framework", "both"),
        default=None,
        help="run on this engine instead of each file's own; `both` runs each scenario on "
        "both engines and reports the first divergence (same as --loopsim-engine)",
    )
    parser.set_defaults(command=cmd_run)


_PLUGIN = "loopsim.pytest_plugin"


def _plugin_loads_itself(arguments: Sequence[str]) -> bool:
    """Whether pytest will load our plugin without being handed it: by ``-p``, by
    ``PYTEST_PLUGINS``, or by its entry point unless autoloading is switched off."""
    if f"-p{_PLUGIN}" in arguments or any(
        flag == "-p" and value == _PLUGIN for flag, value in itertools.pairwise(arguments)
    ):
        return True
    if _PLUGIN in os.environ.get("PYTEST_PLUGINS", "").split(","):
        return True
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") or "--disable-plugin-autoload" in arguments:
        return False
    try:
        points = metadata.entry_points(group="pytest11")
    except Exception:  # noqa: BLE001 - broken metadata: load the plugin ourselves
        return False
    return any(point.value == _PLUGIN for point in points)


class _Summary:
    """Counts scenario reports (also those forwarded by xdist workers) for the summary."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0
        self.invalid = 0
        self.skipped = 0
        self.virtual = 0.0

    def pytest_runtest_logreport(self, report: Any) -> None:
        props = dict(getattr(report, "user_properties", ()) or ())
        if "loopsim_scenario" not in props:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.passed:
                self.passed += 1
            elif report.skipped:
                self.skipped += 1
            elif props.get("loopsim_invalid"):
                self.invalid += 1
            else:
                self.failed += 1
            self.virtual += float(props.get("loopsim_elapsed", 0.0) or 0.0)

    def line(self, *, interrupted: bool = False) -> str:
        total = self.passed + self.failed + self.invalid + self.skipped
        parts = [f"{self.passed} passed"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.invalid:
            parts.append(f"{self.invalid} invalid")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        if interrupted:
            parts.append("then interrupted")
        return (
            f"loopsim: {total} scenario{'s' if total != 1 else ''}: {', '.join(parts)} "
            f"({_hours(self.virtual)} of virtual time)"
        )


def _hours(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:g} s"


def _engine_option(arguments: Sequence[str]) -> list[str]:
    """``--engine X`` (our spelling) → ``--loopsim-engine=X`` (the plugin's option)."""
    out: list[str] = []
    items = iter(arguments)
    for item in items:
        if item == "--engine":
            out.append(f"--loopsim-engine={next(items, '')}")
        elif item.startswith("--engine="):
            out.append(f"--loopsim-engine={item.removeprefix('--engine=')}")
        else:
            out.append(item)
    return out


def cmd_run(args: argparse.Namespace, extra: Sequence[str] = ()) -> int:
    """Run pytest on the paths with the plugin; map pytest's exit code to ours."""
    import pytest  # noqa: PLC0415 - only `run` needs pytest

    from ._parallel import serial_when_small  # noqa: PLC0415 - only `run` needs it

    summary = _Summary()
    plugins: list[object] = [summary]
    arguments, serially = serial_when_small([*args.paths, *_engine_option(extra)])
    if serially is not None:
        print(serially, file=sys.stderr)  # noqa: T201 - CLI output
    if not _plugin_loads_itself(arguments):
        plugins.append(importlib.import_module(_PLUGIN))
    # loopsim is imported already (this is it), so pytest cannot assertion-rewrite the
    # plugin module; that warning is expected here and must not become an error.
    quiet = ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    code = int(pytest.main([*quiet, *arguments], plugins=plugins))
    interrupted = code == int(pytest.ExitCode.INTERRUPTED)
    print(summary.line(interrupted=interrupted))  # noqa: T201 - CLI output
    if interrupted:
        print(  # noqa: T201
            "loopsim run: interrupted (Ctrl-C): the scenario running then and those after it "
            "did not finish",
            file=sys.stderr,
        )
    if code == int(pytest.ExitCode.OK):
        return EXIT_OK
    if code == int(pytest.ExitCode.TESTS_FAILED):
        return EXIT_USAGE if summary.invalid and not summary.failed else EXIT_FAILED
    if code == int(pytest.ExitCode.NO_TESTS_COLLECTED):
        print("loopsim run: no scenarios or tests were collected", file=sys.stderr)  # noqa: T201
    return EXIT_USAGE


# -- replay ---------------------------------------------------------------------------------------


def _report_drift(args: argparse.Namespace, loaded: Any, scenario_file: str) -> int:
    """``--report-drift NEW``: record the scenario against its real models into NEW and
    print per model call what changed against the recording (0 none, 1 drift, 2 usage)."""
    from ._errors import LoopsimError  # noqa: PLC0415 - keep startup light
    from ._scenario import BACKENDS, run_scenario  # noqa: PLC0415
    from ._transcript import read_transcript  # noqa: PLC0415
    from ._transcript._cassette import Cassette  # noqa: PLC0415
    from ._transcript._commands import WrongRecordingError  # noqa: PLC0415
    from ._transcript._drift import drift_report  # noqa: PLC0415

    source, target = Path(args.transcript), Path(args.report_drift)
    if target.resolve() == source.resolve():
        print(  # noqa: T201 - CLI output
            f"loopsim replay: --report-drift writes a new recording and never overwrites "
            f"{source}: name another file",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        recorded = read_transcript(source)
        _same_scenario(recorded, loaded, args.transcript, scenario_file)
    except (LoopsimError, OSError) as exc:
        prefix = "" if isinstance(exc, WrongRecordingError) else f"cannot read {source}: "
        print(f"loopsim replay: {prefix}{exc}", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    cassette = Cassette(target, "all")
    backend = recorded.backend if recorded.backend in BACKENDS else None
    result = run_scenario(loaded, seed=recorded.seed, backend=backend, models=cassette.client)
    cassette.finish()  # the new recording, written whether or not the run passed
    report = drift_report(recorded, read_transcript(target))
    sys.stdout.write(report.text)
    sys.stdout.write(
        f"new recording: {target} (the scenario {'passed' if result.passed else 'failed'} on it)\n"
    )
    return 1 if report.drifted else 0


def _same_scenario(recorded: Transcript, loaded: Any, shown: str, scenario_file: str) -> None:
    """A cassette (model calls only) must be one of this scenario: its name, its agents."""
    from ._transcript._commands import WrongRecordingError  # noqa: PLC0415 - keep startup light
    from ._transcript._verdict import is_cassette  # noqa: PLC0415

    if not is_cassette(recorded):
        return
    agents = sorted({str(e.data.get("agent")) for e in recorded.events})
    unknown = [a for a in agents if a not in loaded.scenario.agents]
    if recorded.scenario not in (None, loaded.name) or unknown:
        recorded_as = f"scenario {recorded.scenario!r}" if recorded.scenario else "no scenario"
        msg = (
            f"{shown} is a cassette of {recorded_as} (agents {', '.join(agents)}), not of "
            f"{scenario_file} (scenario {loaded.name!r}, agents "
            f"{', '.join(loaded.scenario.agents)}); pass that scenario's cassette "
            f"(cassettes/{loaded.name}.transcript.json next to it)"
        )
        raise WrongRecordingError(msg)


def cmd_replay(args: argparse.Namespace, *, replay: Callable[..., int]) -> int:
    """``loopsim replay TRANSCRIPT --scenario FILE``: re-run the scenario with the recorded
    seed and backend, every agent's model answering from the recording, and compare
    (0 identical, 1 diverged, 2 unreadable or invalid files)."""
    scenario_file = getattr(args, "scenario", None)
    if scenario_file is None:
        if getattr(args, "report_drift", None) is not None:
            print("loopsim replay: --report-drift needs --scenario FILE", file=sys.stderr)  # noqa: T201
            return EXIT_USAGE
        return replay(args)
    from ._scenario import BACKENDS, load_scenario, run_scenario  # noqa: PLC0415 - keep startup light
    from ._scenario._model import model_agents  # noqa: PLC0415

    try:
        loaded = load_scenario(scenario_file)
    except ScenarioError as exc:
        print(f"loopsim replay: invalid scenario file: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    except OSError as exc:
        print(f"loopsim replay: cannot read {scenario_file}: {exc}", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE

    if getattr(args, "report_drift", None) is not None:
        return _report_drift(args, loaded, scenario_file)

    def rerun(recorded: Transcript) -> Replayed:
        _same_scenario(recorded, loaded, args.transcript, scenario_file)
        # Each agent's model answers from the recording (strict): a request that differs
        # from the recorded one is the divergence, reported at its event. A fresh run of
        # the scenario's own models tells model-side changes apart (reported as
        # "answered from the recording").
        backend = recorded.backend if recorded.backend in BACKENDS else None
        result = run_scenario(
            loaded,
            seed=recorded.seed,
            backend=backend,
            models=lambda name, _client: ReplayChatClient(recorded, name),
        )
        # (not for real models: `model:` agents are never called by a replay)
        fresh = (
            None
            if model_agents(loaded.scenario)
            else run_scenario(loaded, seed=recorded.seed, backend=backend).transcript
        )
        error = result.error if isinstance(result.error, ReplayMismatchError) else None
        return Replayed(result.transcript, error=error, fresh=fresh)

    return replay(args, rerun=rerun)


# -- entry point ----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``loopsim``."""
    from ._version import __version__  # noqa: PLC0415

    parser = argparse.ArgumentParser(
        prog="loopsim",
        description="Test and simulate agent loops on a virtual clock.",
    )
    parser.add_argument("--version", action="version", version=f"loopsim {__version__}")
    sub = parser.add_subparsers(dest="subcommand", metavar="COMMAND")
    _add_run(sub)
    _add_validate(sub)
    _add_new(sub)
    _add_schema(sub)
    # show/replay come from the transcript layer (replay gets the scenario runner through
    # cmd_replay); check-evaluator from loopsim.testing.
    add_show_parser(sub).set_defaults(command=cmd_show)
    add_replay_parser(sub).set_defaults(
        command=functools.partial(cmd_replay, replay=transcript_replay)
    )
    add_check_evaluator_parser(sub)
    add_report_parser(sub)
    return parser


#: Commands that run user code: from a shell, each runs in a supervised child process
#: (``loopsim._supervise``), so that user code cannot decide the exit status.
SUPERVISED = ("run", "validate", "check-evaluator", "replay")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it).

    Called without ``argv`` (the console script, ``python -m loopsim``), the commands
    that run user code run in a supervised child process whose verdict is the exit
    code (docs/limits.md, "User code and the exit status"); with ``argv`` they run here.
    """
    if argv is None:
        arguments = sys.argv[1:]
        if arguments[:1] and arguments[0] in SUPERVISED:
            from ._supervise import supervise  # noqa: PLC0415 - only commands running user code

            return supervise(functools.partial(_cli, arguments), command=arguments[0])
    return _cli(argv)


def _cli(argv: Sequence[str] | None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a file name with undecodable bytes still prints
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")
    try:
        try:
            code = _main(argv)
        finally:
            sync_folders()  # every folder written into, flushed once (see write_atomic)
        sys.stdout.flush()  # inside the try: a closed pipe shows here, not at exit
    except BrokenPipeError:
        # The reader went away (`loopsim validate … | head -1`): stop quietly, as the
        # Python docs advise: point stdout at devnull so the exit flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    return code


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if arguments[:1] == ["run"]:
        # Everything pytest understands is passed through: split paths from options.
        rest = arguments[1:]
        if rest[:1] in (["-h"], ["--help"]):
            try:
                parser.parse_args(arguments)
            except SystemExit:
                return EXIT_OK
        return cmd_run(argparse.Namespace(paths=[]), rest)
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exc:
        return EXIT_OK if exc.code in (0, None) else EXIT_USAGE
    command: Command | None = getattr(args, "command", None)
    if command is None:
        parser.print_help()
        return EXIT_USAGE
    return command(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
