"""``loopsim check-evaluator module:Class [--options JSON] [--max-examples N]``.

The target may also be an agent_framework-style loop: a ``should_continue`` predicate
(with ``--next-message module:function``), an ``AgentLoopMiddleware``, or a function
returning one (a ``with_judge`` setup); ``--engine agent_framework`` runs a
LoopEvaluator's scripted loop around a real ``agent_framework.Agent``.

Exit codes: 0 every check passed, 1 a check failed or did not run (the report shows
each shrunk counterexample), 2 a bad import path, bad options, or a target that is
neither a ``LoopEvaluator`` nor an agent_framework loop (or whose constructor fails).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = [
    "add_check_evaluator_parser",
    "cmd_check_evaluator",
    "import_check_target",
    "import_evaluator",
    "import_object",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
#: the names of _checker's ALL_CHECKS and BACKGROUND_RULES (kept here so the parser does not
#: import hypothesis; a test keeps them equal)
CHECK_NAMES = (
    "returns_evaluation",
    "deterministic",
    "no_mutation",
    "odd_responses",
    "within_budget",
    "lets_loop_stop",
    "keeps_going",
    "waits_for_background",
)
BACKGROUND_RULE_NAMES = ("none", "wait-for-running", "same-as-builtin")


def add_check_evaluator_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``check-evaluator`` subcommand to ``subparsers`` (returns its parser)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "check-evaluator",
        help="check a LoopEvaluator offline against generated contexts and scripted loops",
        description=(
            "Check a LoopEvaluator subclass offline: it returns a LoopEvaluation, the same "
            "context gives the same decision, it does not change the context, it tolerates "
            "empty, tool-only and approval responses, it does not block on the virtual clock, "
            "and it lets a scripted agent that completes stop the loop before its cap. "
            "The module is imported as scenario files import theirs: the current folder "
            "and the rootdir found from it (the nearest folder upwards with pytest.ini, "
            "pyproject.toml, tox.ini or setup.cfg) are importable."
        ),
    )
    parser.add_argument(
        "target",
        metavar="module:Class",
        help="the evaluator class to check, or an agent_framework should_continue predicate, "
        "AgentLoopMiddleware or with_judge setup",
    )
    parser.add_argument(
        "--next-message",
        default=None,
        metavar="module:function",
        help="the next_message callable of an agent_framework-style predicate",
    )
    parser.add_argument(
        "--engine",
        choices=("loopsim", "agent_framework"),
        default="loopsim",
        help="where a LoopEvaluator's scripted loop runs its agent (default loopsim)",
    )
    parser.add_argument(
        "--options", default=None, help="keyword arguments for the class, as a JSON object"
    )
    parser.add_argument(
        "--max-examples", type=int, default=50, help="generated cases per check (default 50)"
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="virtual seconds one evaluate may take (default 60)",
    )
    parser.add_argument(
        "--call-time-limit",
        type=float,
        default=1.0,
        help="real seconds one evaluate may take (default 1); the first slower call fails "
        "within_budget and ends the checks",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=300.0,
        help="real seconds all checks together may take (default 300)",
    )
    parser.add_argument(
        "--marker",
        default="DONE",
        help="text the scripted agent's completing reply contains (default DONE)",
    )
    parser.add_argument(
        "--background-rule",
        choices=BACKGROUND_RULE_NAMES,
        default="none",
        help="what the evaluator promises about background tasks: wait-for-running (never "
        "stop while a task runs) or same-as-builtin (continue exactly while a task runs, "
        "as BackgroundTaskCompletionLoopEvaluator); generated agents then carry a "
        "BackgroundAgentsProvider (default none)",
    )
    parser.add_argument(
        "--check",
        action="append",
        default=None,
        choices=CHECK_NAMES,
        metavar="NAME",
        help=f"run only this check (repeatable; default all): {', '.join(CHECK_NAMES)}",
    )
    parser.set_defaults(command=cmd_check_evaluator)
    return parser


def import_evaluator(target: str) -> Any:
    """Import ``module:Class`` as scenario files import their evaluators: the current
    folder and the rootdir found from it go to the front of ``sys.path`` (see
    ``loopsim._scenario._imports``). Raises ``ValueError`` saying what is wrong, whatever
    the module raised while importing."""
    from .._loop import LoopEvaluator  # noqa: PLC0415

    found = import_object(target)
    if not (isinstance(found, type) and issubclass(found, LoopEvaluator)):
        raise ValueError(f"{target} is not a LoopEvaluator subclass")  # noqa: TRY004 - one error kind for the CLI
    return found


def import_check_target(target: str) -> Any:
    """Import a LoopEvaluator subclass or an agent_framework loop; ``ValueError`` if neither."""
    from .._loop import LoopEvaluator  # noqa: PLC0415

    found = import_object(target)
    if isinstance(found, type) and issubclass(found, LoopEvaluator):
        return found
    if isinstance(found, type) or not callable(getattr(found, "should_continue", found)):
        raise ValueError(  # noqa: TRY004 - one error kind for the CLI
            f"{target} is not a LoopEvaluator subclass, nor an agent_framework loop "
            "(a should_continue predicate, an AgentLoopMiddleware or a function returning one)"
        )
    try:
        import agent_framework  # noqa: F401, PLC0415 - an agent_framework loop needs the package
    except ImportError:
        raise ValueError(
            f"{target} is not a LoopEvaluator subclass; checking an agent_framework loop needs "
            "the package: pip install 'pytest-loopsim[agent-framework]'"
        ) from None
    return found


def import_object(target: str) -> Any:
    """Import ``module:attribute`` as scenario files import user code; ``ValueError`` if not."""
    from .._scenario import _imports  # noqa: PLC0415

    try:
        return _imports.import_object(target, _imports.user_folders(None))
    except _imports.UserCodeError as exc:
        raise ValueError(str(exc)) from None


def cmd_check_evaluator(args: argparse.Namespace) -> int:
    """Run :func:`loopsim.testing.check_evaluator` and print its report."""
    from .._supervise import phase  # noqa: PLC0415

    with phase("check", module=args.target.partition(":")[0], scenario=_label(args), bound=None):
        return _check(args)


def _label(args: argparse.Namespace) -> str:
    return f"check-evaluator {args.target}"


def _check(args: argparse.Namespace) -> int:
    from .._supervise import bounds, phase  # noqa: PLC0415
    from .._usercode import user_code_failure  # noqa: PLC0415
    from ._af_loops import resolve_af_loop  # noqa: PLC0415
    from ._checker import check_evaluator  # noqa: PLC0415 - hypothesis loads only when used

    try:
        factory = import_check_target(args.target)
        next_message = None if args.next_message is None else import_object(args.next_message)
    except ValueError as exc:
        print(f"loopsim check-evaluator: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return EXIT_USAGE
    options: Any = {}
    if args.options is not None:
        try:
            options = json.loads(args.options)
        except json.JSONDecodeError as exc:
            print(  # noqa: T201 - CLI output
                f"loopsim check-evaluator: --options is not valid JSON: {exc}", file=sys.stderr
            )
            return EXIT_USAGE
        if not isinstance(options, dict):
            print(  # noqa: T201 - CLI output
                "loopsim check-evaluator: --options must be a JSON object of keyword arguments",
                file=sys.stderr,
            )
            return EXIT_USAGE
    if args.max_examples < 1:
        print("loopsim check-evaluator: --max-examples must be >= 1", file=sys.stderr)  # noqa: T201
        return EXIT_USAGE
    for flag, value in (
        ("--call-time-limit", args.call_time_limit),
        ("--time-limit", args.time_limit),
    ):
        if not value > 0:
            print(f"loopsim check-evaluator: {flag} must be > 0 seconds", file=sys.stderr)  # noqa: T201
            return EXIT_USAGE
    try:
        with phase("factory", module=args.target, bound=bounds().factory):
            if isinstance(factory, type):
                factory(**options)
            resolve_af_loop(factory, options, next_message)
    except BaseException as exc:  # noqa: BLE001 - the user's constructor: reported, never fatal
        error = user_code_failure(exc)  # a real Ctrl-C is re-raised
        print(  # noqa: T201 - CLI output
            f"loopsim check-evaluator: cannot build {args.target}(**{options!r}): "
            f"{type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    bound = args.time_limit + bounds().grace
    with phase("check", module=args.target.partition(":")[0], scenario=_label(args), bound=bound):
        report = check_evaluator(
            factory,
            options=options,
            max_examples=args.max_examples,
            budget=args.budget,
            marker=args.marker,
            import_path=args.target,
            next_message=next_message,
            engine=args.engine,
            call_time_limit=args.call_time_limit,
            time_limit=args.time_limit,
            background_rule=args.background_rule,
            checks=args.check,
        )
    print(report.render())  # noqa: T201 - CLI output
    return EXIT_OK if report.passed else EXIT_FAILED
