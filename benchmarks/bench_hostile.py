"""Hostile scenario files: how long each takes to end in a located ``ScenarioError``.

Usage (from the repository root)::

    python benchmarks/bench_hostile.py            # libyaml (when installed) and pure PyYAML
    python benchmarks/bench_hostile.py --repeat 5

Each figure is the median wall time of loading the text (``load_scenario_text``), until
the error is raised. The table is what docs/limits.md quotes; nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence

from loopsim import ScenarioError
from loopsim._scenario import _yaml, load_scenario_text

OK = "version: 1\nagents:\n  w: {script: [done]}\nparent: {agent: w}\nsteps:\n  - run: go\n"


def _bomb(levels: int = 10, width: int = 9) -> str:
    lines = ["version: 1", f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _agents(count: int) -> str:
    agents = "".join(f"  a{i}: {{script: [done]}}\n" for i in range(count))
    return f"version: 1\nagents:\n{agents}parent: {{agent: nobody}}\nsteps:\n  - run: go\n"


def _json_deep(depth: int) -> str:
    return '{"version": 1, "x": ' + "[" * depth + "]" * depth + "}"


CASES: dict[str, Callable[[], tuple[str, str]]] = {
    "control character (a: \\x07)": lambda: ("a: \x07\n", "yaml"),
    "scalar tag (!!float '')": lambda: ("a: !!float ''\n", "yaml"),
    "tag on a mapping (!!python/object/apply)": lambda: (
        "a: !!python/object/apply:os.system {args: [x]}\n",
        "yaml",
    ),
    "alias cycle (&a [*a])": lambda: ("&a [*a]\n", "yaml"),
    f"alias bomb ({len(_bomb())} bytes, 9^10 values)": lambda: (_bomb(), "yaml"),
    "flow nesting, 100,000 [": lambda: ("[" * 100_000, "yaml"),
    "flow nesting, 1,000 [": lambda: ("[" * 1_000, "yaml"),
    "block nesting, 300 levels": lambda: (
        "".join(" " * i + "a:\n" for i in range(300)),
        "yaml",
    ),
    "vary list_of max_size 10^8": lambda: (
        OK + "vary:\n  steps:\n    list_of: {one_of: [{run: go}]}\n    max_size: 100000000\n",
        "yaml",
    ),
    "vary one_of of 1,000 over 2,000 agents": lambda: (
        _agents(2_000).replace("nobody", "a0")
        + f"vary:\n  seed: {{one_of: [{', '.join(map(str, range(1000)))}]}}\n",
        "yaml",
    ),
    "10,000 agents, unknown parent": lambda: (_agents(10_000), "yaml"),
    "30,000 agents (over max_nodes)": lambda: (_agents(30_000), "yaml"),
    "2 MiB file (over max_bytes)": lambda: ("version: 1\n" + "#" * (2 << 20), "yaml"),
    "JSON nested 3,000 deep": lambda: (_json_deep(3_000), "json"),
    "JSON duplicate key": lambda: ('{"version": 1, "a": 1, "a": 2}', "json"),
}


def _time(text: str, fmt: str, repeat: int) -> tuple[float, str]:
    times: list[float] = []
    outcome = "loaded"
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            load_scenario_text(text, fmt=fmt)
        except ScenarioError as exc:
            outcome = exc.problem[:60]
        times.append(time.perf_counter() - started)
    return statistics.median(times), outcome


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print JSON rows instead")
    args = parser.parse_args(argv)
    fast = _yaml._FAST
    rows = []
    for name, make in CASES.items():
        text, fmt = make()
        with_libyaml = None
        if fast is not None:
            with_libyaml, outcome = _time(text, fmt, args.repeat)
        _yaml._FAST = None
        try:
            pure, outcome = _time(text, fmt, args.repeat)
        finally:
            _yaml._FAST = fast
        rows.append({"case": name, "libyaml_s": with_libyaml, "pyyaml_s": pure, "error": outcome})
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| hostile input | libyaml | pure PyYAML | ends with |")
    print("|---|---|---|---|")
    for row in rows:
        fast_text = "—" if row["libyaml_s"] is None else f"{row['libyaml_s'] * 1000:.1f} ms"
        print(f"| {row['case']} | {fast_text} | {row['pyyaml_s'] * 1000:.1f} ms | {row['error']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
