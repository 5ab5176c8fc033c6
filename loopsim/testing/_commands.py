"""``loopsim check-evaluator module:Class [--options JSON] [--max-examples N]``.

Exit codes: 0 every check passed, 1 a check failed (the report shows each shrunk
counterexample), 2 a bad import path, bad options, or a class that is not a
``LoopEvaluator``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_check_evaluator_parser", "cmd_check_evaluator", "import_evaluator"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


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
    parser.add_argument("target", metavar="module:Class", help="the evaluator class to check")
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
        "--marker",
        default="DONE",
        help="text the scripted agent's completing reply contains (default DONE)",
    )
    parser.set_defaults(command=cmd_check_evaluator)
    return parser


def import_evaluator(target: str) -> Any:
    """Import ``module:Class`` as scenario files import their evaluators: the current
    folder and the rootdir found from it go to the front of ``sys.path`` (see
    ``loopsim._scenario._imports``). Raises ``ValueError`` saying what is wrong, whatever
    the module raised while importing."""
    from .._loop import LoopEvaluator  # noqa: PLC0415
    from .._scenario._imports import UserCodeError, import_object, user_folders  # noqa: PLC0415

    try:
        found = import_object(target, user_folders(None))
    except UserCodeError as exc:
        raise ValueError(str(exc)) from None
    if not (isinstance(found, type) and issubclass(found, LoopEvaluator)):
        raise ValueError(f"{target} is not a LoopEvaluator subclass")  # noqa: TRY004 - one error kind for the CLI
    return found


def cmd_check_evaluator(args: argparse.Namespace) -> int:
    """Run :func:`loopsim.testing.check_evaluator` and print its report."""
    from ._checker import check_evaluator  # noqa: PLC0415 - hypothesis loads only when used

    try:
        factory = import_evaluator(args.target)
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
    try:
        factory(**options)
    except (TypeError, ValueError) as exc:
        print(  # noqa: T201 - CLI output
            f"loopsim check-evaluator: cannot build {args.target}(**{options!r}): {exc}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    report = check_evaluator(
        factory,
        options=options,
        max_examples=args.max_examples,
        budget=args.budget,
        marker=args.marker,
        import_path=args.target,
    )
    print(report.render())  # noqa: T201 - CLI output
    return EXIT_OK if report.passed else EXIT_FAILED
