"""Virtual time: the wall cost of a scenario must not depend on how long it simulates.

The scenario: a coordinator starts one slow background child, waits with a timeout of
W virtual seconds (the wait times out), waits again and collects the result when the
child finishes at 1.5 W. W is 1 second, 1 hour and 1 day. Two rows per W:

* ``api``: loopsim's public API — a ``BackgroundAgentsProvider`` whose tools are called
  directly, the child a ``loopsim.Agent`` on a ``ScriptedChatClient`` with a delayed
  turn — the simple case (target < 5 ms per scenario);
* ``scenario``: the same story as a scenario file run by the scenario runner (YAML
  parsing and validation, recorder, expectations and invariants included).

Each figure is the median CPU time (``time.process_time``) of a fresh simulation
(``wall_clock=False``), measured outside it; the three durations of a kind run in the
same alternating rounds, so the ``cost 1 day / 1 second`` row is a paired ratio (the
median of the per-round ratios, with its bootstrap interval). The ms rows are
machine-dependent.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from functools import partial

import loopsim
from loopsim import AgentSession, BackgroundAgentsProvider, SessionContext, Turn
from loopsim._invariants import is_wait_timeout
from loopsim._scenario import load_scenario_text, run_scenario

try:
    from _common import MACHINE, Row, interleaved, interval_note, median, paired_ratio
except ImportError:  # pragma: no cover
    from benchmarks._common import (
        MACHINE,
        Row,
        interleaved,
        interval_note,
        median,
        paired_ratio,
    )

DURATIONS = {"1 second": 1, "1 hour": 3600, "1 day": 86400}

TEMPLATE = """\
version: 1
description: A slow child, one wait timeout, then the result ({label}).
agents:
  boss: {{policy: coordinator}}
  slow: {{policy: {{echo: {{delay: {delay}}}}}}}
parent: {{agent: boss, background_agents: [slow], wait_timeout: {timeout}}}
steps:
  - run: go
expect:
  elapsed: {delay}
  response: {{contains: "task 1 (slow)"}}
"""


async def _api_scenario(timeout: int) -> float:
    delay = 1.5 * timeout
    child = loopsim.Agent(
        loopsim.ScriptedChatClient([Turn("slow result", delay=delay)]), name="slow"
    )
    provider = BackgroundAgentsProvider([child], wait_timeout_seconds=timeout)
    session = AgentSession()
    context = SessionContext(input_messages=[])
    state = session.state.setdefault(provider.source_id, {})
    await provider.before_run(agent=None, session=session, context=context, state=state)  # type: ignore[arg-type]
    tools = {t.name: t for t in context.tools}
    await tools["background_agents_start_task"].invoke(
        {"agent_name": "slow", "input": "go", "description": "slow job"}
    )
    first = await tools["background_agents_wait_for_first_completion"].invoke({"task_ids": [1]})
    assert is_wait_timeout(first), first
    second = await tools["background_agents_wait_for_first_completion"].invoke({"task_ids": [1]})
    assert second.endswith("completed."), second
    result = await tools["background_agents_get_task_results"].invoke({"task_id": 1})
    assert result == "slow result", result
    return delay


def api_once(timeout: int) -> None:
    clock = loopsim.VirtualClock(wall_clock=False)
    clock.run(_api_scenario, timeout)
    assert clock.elapsed == 1.5 * timeout, clock.elapsed


def scenario_once(label: str, timeout: int) -> None:
    text = TEMPLATE.format(label=label, delay=1.5 * timeout, timeout=timeout)
    result = run_scenario(load_scenario_text(text))
    assert not result.failures, [f.message for f in result.failures]
    assert result.elapsed == 1.5 * timeout


def run(*, repeat: int = 21, log: Callable[[str], None] = print) -> list[Row]:
    rows: list[Row] = []
    api_once(1)  # warm up
    scenario_once("warm-up", 1)
    for kind in ("api", "scenario"):
        fns: list[Callable[[], object]] = [
            partial(api_once, timeout) if kind == "api" else partial(scenario_once, label, timeout)
            for label, timeout in DURATIONS.items()
        ]
        samples = dict(zip(DURATIONS, interleaved(fns, repeat), strict=True))
        simple = kind == "api"
        for label, timeout in DURATIONS.items():
            t = median(samples[label])
            rows.append(
                Row(
                    section="virtual time",
                    case=f"{kind}: wait {label} (+timeout)",
                    value=t * 1e3,
                    unit="ms/scenario",
                    target="< 5 ms" if simple else "",
                    met=(t < 0.005) if simple else None,
                    note=MACHINE,
                    extra={"virtual_seconds": 1.5 * timeout},
                )
            )
            log(f"{rows[-1].case}: {t * 1e3:.2f} ms")
        growth, low, high = paired_ratio(samples["1 day"], samples["1 second"])
        rows.append(
            Row(
                section="virtual time",
                case=f"{kind}: cost 1 day / 1 second",
                value=growth,
                unit="x",
                target="flat (<= 1.2x)",
                met=growth <= 1.2,
                note=interval_note(low, high, repeat),
            )
        )
        log(f"{rows[-1].case}: x{growth:.2f}")
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args(argv)
    run(repeat=args.repeat)


if __name__ == "__main__":
    main()
