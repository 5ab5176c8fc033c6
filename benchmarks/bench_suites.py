"""Suites: 1,000 generated scenario files through the pytest plugin; hypothesis speed.

* ``pytest``: N scenario files are written to a temporary folder from a template (a
  completion-marker loop whose iteration count, delays and texts vary with the file
  number: 1-5 iterations, one of them with a background child and a wait timeout), then
  ``python -m pytest <dir> -q`` runs them in a subprocess, once serially and once with
  ``-n 2`` (pytest-xdist). The figure is the subprocess's wall time, interpreter start and
  collection included — what a CI job sees.
* ``-n`` against serial, CPU and wall for 10, 100 and 1,000 files, is
  ``bench_parallel.py``'s section.
* ``hypothesis``: examples per second of a loop property (a LoopAgent over a scripted
  agent stops exactly at the marker or the cap, for drawn scripts and caps), each example
  its own simulation, as the project's property tests are written.
* ``vary``: examples per CPU second of the same kind of LoopAgent property written as a
  scenario file (``vary:`` over the iteration cap and the evaluators' decisions, checked
  by ``always:`` and the invariants), run by ``run_vary``: the scenario path (target
  >= 1,000 examples/s, issue 28 item 5).
* ``hypothesis floor``: examples per CPU second of a property that draws what
  ``VARY_LOOP`` draws (a cap of 1-5, two lists of five decisions) and does nothing with
  them: hypothesis's own cost per example, the ceiling any ``vary:`` file can reach (a
  reference row, as the no-op YAML item is pytest's floor).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

try:
    from _common import MACHINE, Row, median
except ImportError:  # pragma: no cover
    from benchmarks._common import MACHINE, Row, median

LOOP_TEMPLATE = """\
version: 1
description: Generated loop scenario {i}.
agents:
  writer:
    script:
{script}
parent: {{agent: writer}}
loop:
  evaluators:
    - completion_marker: DONE
steps:
  - run: write part {i}
expect:
  iterations: {k}
  stop_reason: evaluators_stopped
  calls: {{writer: {k}}}
  elapsed: {elapsed}
  response:
    contains: DONE
"""

BACKGROUND_TEMPLATE = """\
version: 1
description: Generated background scenario {i}.
agents:
  boss: {{policy: coordinator}}
  slow: {{policy: {{echo: {{delay: {delay}}}}}}}
parent: {{agent: boss, background_agents: [slow], wait_timeout: {timeout}}}
steps:
  - run: go {i}
expect:
  elapsed: {delay}
  response: {{contains: "task 1 (slow)"}}
"""


def scenario_text(i: int) -> str:
    if i % 5 == 4:
        timeout = 10 + i % 50
        return BACKGROUND_TEMPLATE.format(i=i, delay=timeout * 2 + 1, timeout=timeout)
    k = 1 + i % 5
    delays = [1 + (i * 7 + j * 13) % 90 for j in range(k)]
    lines = []
    for j, d in enumerate(delays):
        reply = f"part {i} final DONE" if j == k - 1 else f"draft {j} of {i}"
        lines.append(f"      - reply: {reply}\n        delay: {d}")
    return LOOP_TEMPLATE.format(i=i, script="\n".join(lines), k=k, elapsed=sum(delays))


def write_suite(folder: Path, n: int) -> None:
    for i in range(n):
        (folder / f"gen_{i:04d}.loopsim.yaml").write_text(scenario_text(i), encoding="utf-8")


def run_pytest(folder: Path, extra: Sequence[str]) -> float:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    command = [sys.executable, "-m", "pytest", str(folder), "-q", "-p", "no:cacheprovider", *extra]
    began = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our own interpreter running pytest on our own files
        command, cwd=folder, env=env, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        msg = f"pytest failed on the generated suite ({' '.join(extra) or 'serial'}):\n{tail}"
        raise RuntimeError(msg)
    return elapsed


def hypothesis_rate(examples: int) -> tuple[float, int]:
    """(examples per second, examples run) of a LoopAgent property."""
    from hypothesis import given, settings  # noqa: PLC0415
    from hypothesis import strategies as st  # noqa: PLC0415

    import loopsim  # noqa: PLC0415

    count = [0]

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True)
    @given(
        texts=st.lists(
            st.sampled_from(["draft", "more", "ok DONE", "DONE"]), min_size=1, max_size=8
        ),
        cap=st.integers(min_value=1, max_value=8),
    )
    def loop_stops_at_marker_or_cap(texts: list[str], cap: int) -> None:
        count[0] += 1
        client = loopsim.ScriptedChatClient(texts[:cap])
        agent = loopsim.LoopAgent(
            loopsim.Agent(client, name="writer"),
            loopsim.CompletionMarkerLoopEvaluator("DONE"),
            loopsim.LoopAgentOptions(max_iterations=cap),
        )
        runs = next((i + 1 for i, t in enumerate(texts[:cap]) if "DONE" in t), None)
        if runs is None and len(texts) < cap:
            return  # the script would run out: not this property's case
        loopsim.simulate(agent.run, "write", wall_clock=False)
        assert client.turn == (runs if runs is not None else cap)

    began = time.perf_counter()
    loop_stops_at_marker_or_cap()
    elapsed = time.perf_counter() - began
    return count[0] / elapsed, count[0]


VARY_LOOP = """\
version: 1
description: A LoopAgent property as a vary scenario (benchmark).
agents:
  writer: {policy: {echo: {delay: 10, prefix: "draft for: "}}}
parent: {agent: writer}
loop:
  evaluators:
    - delegate: {decisions: [continue, continue, continue, continue, stop]}
    - delegate: {decisions: [stop, stop, stop, stop, stop]}
  max_iterations: 3
steps:
  - run: write
expect:
  iterations: 3
  stop_reason: max_iterations
vary:
  loop.max_iterations: {one_of: [1, 2, 3, 4, 5]}
  loop.evaluators[0].delegate.decisions:
    {list_of: {one_of: [continue, stop]}, min_size: 5, max_size: 5}
  loop.evaluators[1].delegate.decisions:
    {list_of: {one_of: [continue, stop]}, min_size: 5, max_size: 5}
vary_settings: {max_examples: EXAMPLES}
always:
  response: {contains: "draft for: write"}
  elapsed: {min: 10, max: 50}
  unused_turns: true
"""


def floor_rate(examples: int) -> tuple[float, int]:
    """(examples per CPU second, examples run) of a property drawing ``VARY_LOOP``'s values
    and doing nothing with them."""
    from hypothesis import given, settings  # noqa: PLC0415
    from hypothesis import strategies as st  # noqa: PLC0415

    drawn: list[tuple[int, list[str], list[str]]] = []
    decisions = st.lists(st.sampled_from(["continue", "stop"]), min_size=5, max_size=5)

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True)
    @given(cap=st.sampled_from([1, 2, 3, 4, 5]), first=decisions, second=decisions)
    def draws_only(cap: int, first: list[str], second: list[str]) -> None:
        drawn.append((cap, first, second))

    began = time.process_time()
    draws_only()
    elapsed = time.process_time() - began
    return len(drawn) / elapsed, len(drawn)


def vary_rate(examples: int) -> tuple[float, int]:
    """(examples per CPU second, examples run) of ``VARY_LOOP`` through ``run_vary``."""
    from loopsim._scenario import load_scenario, run_vary  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="loopsim-bench-") as tmp:
        path = Path(tmp) / "vary_loop.loopsim.yaml"
        path.write_text(VARY_LOOP.replace("EXAMPLES", str(examples)), encoding="utf-8")
        loaded = load_scenario(path)
        run_vary(loaded, max_examples=5, seeded=True)  # warm up
        began = time.process_time()
        done = run_vary(loaded, seeded=True)
        elapsed = time.process_time() - began
    if not done.result.passed:
        msg = f"the vary benchmark scenario failed:\n{done.result.report()}"
        raise RuntimeError(msg)
    return done.examples / elapsed, done.examples


def run(
    *,
    files: int = 1000,
    repeat: int = 1,
    examples: int = 500,
    log: Callable[[str], None] = print,
) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="loopsim-bench-") as tmp:
        folder = Path(tmp)
        write_suite(folder, files)
        for label, extra in (("serial", []), ("-n 2", ["-n", "2"])):
            t = median([run_pytest(folder, extra) for _ in range(repeat)])
            rows.append(
                Row(
                    section="suites",
                    case=f"pytest {files} scenario files ({label})",
                    value=t,
                    unit="s",
                    extra={"ms_per_file": t / files * 1e3},
                )
            )
            log(f"{rows[-1].case}: {t:.2f} s ({t / files * 1e3:.2f} ms/file)")
    rate, ran = hypothesis_rate(examples)
    rows.append(
        Row(
            section="suites",
            case=f"hypothesis LoopAgent property ({ran} examples)",
            value=rate,
            unit="examples/s",
        )
    )
    log(f"{rows[-1].case}: {rate:.0f} examples/s")
    rate, ran = vary_rate(examples)
    rows.append(
        Row(
            section="suites",
            case=f"vary: LoopAgent property, scenario path ({ran} examples)",
            value=rate,
            unit="examples/s (CPU)",
            target=">= 1000",
            met=rate >= 1000,
            note=MACHINE,
        )
    )
    log(f"{rows[-1].case}: {rate:.0f} examples/s")
    floor, ran = floor_rate(examples)
    rows.append(
        Row(
            section="suites",
            case=f"hypothesis floor: vary's draws, a property doing nothing ({examples} examples)",
            value=floor,
            unit="examples/s (CPU)",
            target="(reference)",
            note=f"{MACHINE}; {ran} examples: hypothesis's own cost, the ceiling of vary:",
        )
    )
    log(f"{rows[-1].case}: {floor:.0f} examples/s")
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--examples", type=int, default=500)
    args = parser.parse_args(argv)
    run(files=args.files, examples=args.examples)


if __name__ == "__main__":
    main()
