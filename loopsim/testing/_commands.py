"""``loopsim check-evaluator module:Class [--options JSON] [--max-examples N]``.

Exit codes: 0 every check passed, 1 a check failed or did not run (the report shows
each shrunk counterexample), 2 a bad import path, bad options, or a class that is not a
``LoopEvaluator`` (or whose constructor fails).
"""

from __future__ import annotations

import argparse
import importlib
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
            "The current directory is importable."
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
    parser.set_defaults(command=cmd_check_evaluator)
    return parser


def import_evaluator(target: str) -> Any:
    """Import ``module:Class``; raises ``ValueError`` saying what is wrong."""
    from .._loop import LoopEvaluator  # noqa: PLC0415

    module_name, _, attr = target.partition(":")
    if not module_name or not attr or not all(p.isidentifier() for p in module_name.split(".")):
        raise ValueError(f"bad import path {target!r}: expected module:Class")
    if "" not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: the current directory is importable
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(found, part):
            raise ValueError(f"module {module_name!r} has no attribute {attr!r}")
        found = getattr(found, part)
    if not (isinstance(found, type) and issubclass(found, LoopEvaluator)):
        raise ValueError(f"{target} is not a LoopEvaluator subclass")  # noqa: TRY004 - one error kind for the CLI
    return found


def cmd_check_evaluator(args: argparse.Namespace) -> int:
    """Run :func:`loopsim.testing.check_evaluator` and print its report."""
    from .._usercode import user_code_failure  # noqa: PLC0415
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
    for flag, value in (
        ("--call-time-limit", args.call_time_limit),
        ("--time-limit", args.time_limit),
    ):
        if not value > 0:
            print(f"loopsim check-evaluator: {flag} must be > 0 seconds", file=sys.stderr)  # noqa: T201
            return EXIT_USAGE
    try:
        factory(**options)
    except BaseException as exc:  # noqa: BLE001 - the user's constructor: reported, never fatal
        error = user_code_failure(exc)  # a real Ctrl-C is re-raised
        print(  # noqa: T201 - CLI output
            f"loopsim check-evaluator: cannot build {args.target}(**{options!r}): "
            f"{type(error).__name__}: {error}",
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
        call_time_limit=args.call_time_limit,
        time_limit=args.time_limit,
    )
    print(report.render())  # noqa: T201 - CLI output
    return EXIT_OK if report.passed else EXIT_FAILED
