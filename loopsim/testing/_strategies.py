"""Hypothesis strategies for loopsim: messages, scripts, decisions, delays and whole scenarios.

Every strategy draws plain, immutable-enough values; each example builds its own agents
and runs synchronously through :func:`loopsim.simulate` or :func:`loopsim.run_scenario`
(hypothesis cannot drive async tests or share an event loop between examples).

Example:
    >>> from hypothesis import given, settings
    >>> import loopsim
    >>> from loopsim.testing import scenarios, loaded
    >>> @settings(max_examples=5, deadline=None)
    ... @given(scenarios(kinds=("loop",)))
    ... def test_generated_runs_keep_the_invariants(scenario):
    ...     result = loopsim.run_scenario(loaded(scenario))
    ...     assert result.passed, result.report()
    >>> test_generated_runs_keep_the_invariants()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml
from hypothesis import strategies as st

from .._clients import Turn
from .._clients._scripted import ScriptItem
from .._messages import FunctionCallContent, Message, Usage
from .._scenario import BACKENDS, Backend, LoadedScenario, Scenario, load_scenario_text

__all__ = [
    "DONE_MARKER",
    "child_delays",
    "evaluator_decisions",
    "failures",
    "loaded",
    "messages",
    "restart_points",
    "scenario_yaml",
    "scenarios",
    "scripts",
]

#: The completion marker generated scripts end with (``CompletionMarkerLoopEvaluator``'s).
DONE_MARKER = "DONE"

_WORDS = ("plan", "draft", "check", "fix", "the", "report", "tests", "ok", "more", "ünïcode")
_HISTORY_STORES = ("in_memory", "service_conversation", "service_response_chain")


def _text(max_words: int = 5) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(_WORDS), min_size=0, max_size=max_words).map(" ".join)


def messages(
    *, roles: Sequence[str] = ("user", "assistant"), max_words: int = 5
) -> st.SearchStrategy[Message]:
    """Messages of the given roles holding short text (possibly empty).

    Example:
        >>> from hypothesis import given
        >>> from loopsim.testing import messages
        >>> @given(messages(roles=["user"]))
        ... def test_text_round_trips(message):
        ...     assert type(message).model_validate_json(message.model_dump_json()) == message
        >>> test_text_round_trips()
    """
    return st.builds(
        lambda role, text, author: Message(role, text, author_name=author),
        st.sampled_from(list(roles)),
        _text(max_words),
        st.sampled_from([None, None, "reviewer"]),
    )


def failures() -> st.SearchStrategy[BaseException]:
    """Exceptions a scripted turn (or a tool) raises: ``RuntimeError``, ``ValueError``...

    Put one into a :class:`~loopsim.ScriptedChatClient` script and the turn raises it.
    """
    return st.builds(
        lambda kind, text: kind(f"scripted failure: {text}"),
        st.sampled_from([RuntimeError, ValueError, ConnectionError, TimeoutError]),
        _text(3),
    )


def child_delays(*, max_delay: float = 600.0) -> st.SearchStrategy[float]:
    """Virtual seconds a child (or a model turn) takes: often 0 or round values, ties likely.

    Ties matter: several children finishing at the same virtual instant is where
    completion-order bugs hide, so the draw prefers a few shared values.
    """
    common = [d for d in (0.0, 1.0, 5.0, 30.0, 60.0, 300.0) if d <= max_delay]
    return st.one_of(
        st.sampled_from(common),
        st.integers(0, int(max_delay)).map(float),
    )


def _usage() -> st.SearchStrategy[Usage | None]:
    counts = st.none() | st.integers(0, 5000)
    return st.none() | st.builds(
        lambda i, o: Usage(
            input_tokens=i, output_tokens=o, total_tokens=None if i is None or o is None else i + o
        ),
        counts,
        counts,
    )


@st.composite
def scripts(
    draw: st.DrawFn,
    *,
    min_replies: int = 1,
    max_replies: int = 5,
    tool_names: Sequence[str] = (),
    approval_tool_names: Sequence[str] = (),
    include_failures: bool = False,
    delays: bool = True,
    usage: bool = True,
    final: str | None = None,
) -> list[ScriptItem]:
    """Scripts for :class:`~loopsim.ScriptedChatClient`: items an :class:`~loopsim.Agent` uses.

    A script is a run of *answers*: each answer is zero or more tool-call turns (calling
    ``tool_names``) followed by a text reply, so every agent run ends. An answer may
    instead end with a call of an ``approval_tool_names`` tool (the agent then returns an
    approval request) or, with ``include_failures``, a turn that raises. Turns may carry a
    virtual ``delay`` and ``usage`` (:class:`~loopsim.Turn`). ``final``: the last reply
    contains this text (e.g. ``"DONE"`` for a completion marker).

    Example:
        >>> from hypothesis import given
        >>> import loopsim
        >>> from loopsim.testing import scripts
        >>> @given(scripts(final="DONE"))
        ... def test_script_ends_done(script):
        ...     client = loopsim.ScriptedChatClient(script)
        ...     agent = loopsim.Agent(client, name="w")
        ...     async def main():
        ...         while client.remaining:
        ...             response = await agent.run("go")
        ...         return response.text
        ...     assert loopsim.simulate(main).endswith("DONE")
        >>> test_script_ends_done()
    """
    answers = draw(st.integers(min_replies, max_replies))
    items: list[ScriptItem] = []
    call_number = 0

    def wrap(item: Any) -> ScriptItem:
        delay = draw(child_delays(max_delay=120.0)) if delays and draw(st.booleans()) else 0.0
        used = draw(_usage()) if usage else None
        if delay == 0.0 and used is None:
            return item  # type: ignore[no-any-return] # a bare str, Message or exception
        return Turn(item, delay=delay, usage=used)

    for index in range(answers):
        last = index == answers - 1
        for _ in range(draw(st.integers(0, 2)) if tool_names else 0):
            call_number += 1
            call = FunctionCallContent(
                call_id=f"call-{call_number}",
                name=draw(st.sampled_from(list(tool_names))),
                arguments=draw(st.dictionaries(st.sampled_from(["q", "n"]), _text(2), max_size=2)),
            )
            items.append(wrap(Message("assistant", [call])))
        ending = "reply"
        if not last or final is None:
            kinds = ["reply", "reply", "reply"]
            if approval_tool_names:
                kinds.append("approval")
            if include_failures:
                kinds.append("failure")
            ending = draw(st.sampled_from(kinds))
        if ending == "approval":
            call_number += 1
            call = FunctionCallContent(
                call_id=f"call-{call_number}",
                name=draw(st.sampled_from(list(approval_tool_names))),
                arguments={},
            )
            items.append(wrap(Message("assistant", [call])))
        elif ending == "failure":
            items.append(wrap(draw(failures())))
        else:
            text = draw(_text())
            if last and final is not None:
                text = f"{text} {final}".strip()
            items.append(wrap(text))
    return items


DecisionSpec = str | dict[str, str]


def _decision(*, feedback: bool) -> st.SearchStrategy[DecisionSpec]:
    plain: st.SearchStrategy[DecisionSpec] = st.sampled_from(["stop", "continue"])
    if not feedback:
        return plain
    return plain | _text(4).filter(str.strip).map(lambda text: {"continue": text})


def evaluator_decisions(
    evaluators: int = 1,
    *,
    min_size: int = 1,
    max_size: int = 6,
    feedback: bool = True,
) -> st.SearchStrategy[list[list[DecisionSpec]]]:
    """One decision list per evaluator, as a scenario's ``delegate: {decisions: [...]}``.

    Each decision is ``"stop"``, ``"continue"`` or ``{"continue": "feedback"}``. All lists
    have the same length (one decision per iteration), between ``min_size`` and
    ``max_size``.

    Example:
        >>> from hypothesis import given
        >>> from loopsim.testing import evaluator_decisions
        >>> @given(evaluator_decisions(2, max_size=3))
        ... def test_shape(table):
        ...     assert len(table) == 2 and len(table[0]) == len(table[1]) <= 3
        >>> test_shape()
    """
    one = _decision(feedback=feedback)
    return st.integers(min_size, max_size).flatmap(
        lambda size: st.lists(
            st.lists(one, min_size=size, max_size=size), min_size=evaluators, max_size=evaluators
        )
    )


def restart_points(steps: int, *, max_restarts: int = 1) -> st.SearchStrategy[list[int]]:
    """Where to restart the simulated process among ``steps`` host steps.

    Draws a sorted list of distinct positions in ``1..steps``: "restart after step
    ``n``" (never before the first step, which is the first ``run``). May be empty.
    """
    if steps < 1:
        return st.just([])
    return st.lists(st.integers(1, steps), unique=True, max_size=min(max_restarts, steps)).map(
        sorted
    )


# -- whole scenarios --------------------------------------------------------------------------


@st.composite
def _loop_scenario(
    draw: st.DrawFn, backend: st.SearchStrategy[Backend], streaming: st.SearchStrategy[bool]
) -> dict[str, Any]:
    cap = draw(st.integers(1, 5))
    runs = draw(st.integers(1, 2))
    approvals = draw(st.booleans())
    tools: dict[str, Any] = {"lookup": {"result": "found"}}
    if draw(st.booleans()):
        tools["flaky"] = {"error": "the service is down"}
    if approvals:
        tools["deploy"] = {"approval_required": True}
    segments = runs * cap + 1  # enough answers for every iteration of every run
    script: list[dict[str, Any]] = []
    for _ in range(segments):
        for _ in range(draw(st.integers(0, 1))):
            name = draw(st.sampled_from(sorted(n for n in tools if n != "deploy")))
            script.append(_turn(draw, {"tool_call": {"name": name, "arguments": {"q": "x"}}}))
        end = draw(
            st.sampled_from(["work", "work", "done", "approval"] if approvals else ["work", "done"])
        )
        if end == "approval":
            script.append(_turn(draw, {"approval_request": {"name": "deploy"}}))
        else:
            text = draw(_text(3))
            reply = f"{text} {DONE_MARKER}".strip() if end == "done" else text or "working"
            script.append(_turn(draw, {"reply": reply}))
    evaluators: list[Any] = []
    delegates = draw(st.integers(0, 2))
    if draw(st.booleans()) or delegates == 0:
        evaluators.append({"completion_marker": DONE_MARKER})
    table = draw(evaluator_decisions(delegates, min_size=runs * cap, max_size=runs * cap))
    evaluators.extend({"delegate": {"decisions": decisions}} for decisions in table)
    order = draw(st.permutations(evaluators))
    steps: list[Any] = [{"run": "do the task"}]
    if runs == 2:
        steps.append({"approve": draw(st.booleans())} if approvals else {"run": "again"})
    expect: dict[str, Any] = {"unused_turns": True}
    if "flaky" in tools:  # it raises on purpose, at most once per scripted call of it
        calls = sum(1 for t in script if t.get("tool_call", {}).get("name") == "flaky")
        expect["tool_errors"] = [
            {"tool": "flaky", "error": "the service is down", "count": {"max": calls}}
        ]
    return {
        "version": 1,
        "name": "generated-loop",
        "seed": draw(st.integers(0, 3)),
        "backend": draw(backend),
        "streaming": draw(streaming),
        "agents": {"worker": {"script": script, "tools": tools}},
        "parent": {
            "agent": "worker",
            "history_store": draw(st.sampled_from(_HISTORY_STORES)),
        },
        "loop": {
            "evaluators": list(order),
            "max_iterations": cap,
            "fresh_context_per_iteration": draw(st.booleans()),
            "on_behalf_of_author_name": draw(st.sampled_from([None, "loop"])),
        },
        "steps": steps,
        "expect": expect,
    }


def _turn(draw: st.DrawFn, turn: dict[str, Any]) -> dict[str, Any]:
    delay = draw(st.sampled_from([0.0, 0.0, 1.0, 30.0]))
    if delay:
        turn["delay"] = delay
    if draw(st.integers(0, 3)) == 0:
        turn["usage"] = {"input_tokens": draw(st.integers(0, 100)), "output_tokens": 7}
    return turn


@st.composite
def _background_scenario(
    draw: st.DrawFn, backend: st.SearchStrategy[Backend], streaming: st.SearchStrategy[bool]
) -> dict[str, Any]:
    count = draw(st.integers(1, 3))
    agents: dict[str, Any] = {}
    children = [f"child{n}" for n in range(1, count + 1)]
    for name in children:
        if draw(st.integers(0, 4)) == 0:
            agents[name] = {
                "script": [
                    {"failure": "the child crashed", "delay": draw(child_delays(max_delay=100.0))}
                    for _ in range(3)
                ]
            }
        else:
            agents[name] = {"policy": {"echo": {"delay": draw(child_delays(max_delay=200.0))}}}
    detach = draw(st.booleans())
    coordinator: dict[str, Any] = {"detach": detach, "restart_lost": draw(st.booleans())}
    if draw(st.booleans()):
        coordinator["max_waits"] = draw(st.integers(1, 3))
    agents["boss"] = {"policy": {"coordinator": coordinator}}
    steps: list[Any] = [{"run": "start the work"}]
    if draw(st.booleans()):
        steps.append({"advance": draw(child_delays(max_delay=200.0))})
    steps.append({"run": "collect"})
    for offset, point in enumerate(draw(restart_points(len(steps) - 1))):
        steps.insert(point + offset, "restart")
    if draw(st.integers(0, 3)) == 0:
        # cancel_running: false raises while a task runs (as upstream): not a generated case
        steps.append("release_session")
    scenario: dict[str, Any] = {
        "version": 1,
        "name": "generated-background",
        "seed": draw(st.integers(0, 3)),
        "backend": draw(backend),
        "streaming": draw(streaming),
        "agents": agents,
        "parent": {
            "agent": "boss",
            "background_agents": children,
            "wait_timeout": draw(st.sampled_from([1, 30, 60, 300])),
        },
        "steps": steps,
        "expect": {"unused_turns": True},
    }
    if draw(st.booleans()):
        scenario["loop"] = {
            "evaluators": ["background_task_completion"],
            "max_iterations": draw(st.integers(1, 4)),
        }
    return scenario


def scenarios(
    *,
    kinds: Sequence[str] = ("loop", "background"),
    backends: Sequence[Backend] = BACKENDS,
    streaming: bool | None = None,
) -> st.SearchStrategy[Scenario]:
    """Whole valid :class:`~loopsim.Scenario` objects that load and run.

    ``kinds``:

    * ``"loop"`` — a scripted agent (replies, tool calls, failing tools, approval
      requests, delays, usage) in a LoopAgent with a completion marker and/or scripted
      delegate evaluators in any order, any cap, fresh context on or off, any history
      store, one or two runs (the second may answer an approval);
    * ``"background"`` — a coordinator parent with 1-3 children (echo or failing) on
      generated delays and wait timeouts, detached or not, with restarts at generated
      points, an optional release and an optional background-completion loop.

    Generated scenarios set ``expect.unused_turns: true`` (scripts are long enough for
    any path) and keep the invariants on, so ``run_scenario(loaded(s)).passed`` must
    hold for every draw. ``streaming``: force it on/off (None: drawn).
    """
    backend = st.sampled_from(list(backends))
    stream = st.booleans() if streaming is None else st.just(streaming)
    builders = {"loop": _loop_scenario, "background": _background_scenario}
    unknown = set(kinds) - set(builders)
    if unknown or not kinds:
        msg = f"kinds must be a non-empty subset of {sorted(builders)}, got {list(kinds)}"
        raise ValueError(msg)
    return st.one_of([builders[k](backend, stream) for k in kinds]).map(Scenario.model_validate)


def _dump_step(step: Any) -> Any:
    data = step.model_dump(mode="json", exclude_none=True)
    if data == {"restart": True}:
        return "restart"
    if data == {"release_session": True, "cancel_running": True}:
        return "release_session"
    return data


def _dump_evaluator(evaluator: Any) -> Any:
    chosen = evaluator.chosen
    if chosen.kind == "custom":  # written as the file says it: `- module:Class: {options}`
        return {chosen.import_path: chosen.options} if chosen.options else chosen.import_path
    return evaluator.model_dump(mode="json", exclude_defaults=True)


def scenario_yaml(scenario: Scenario) -> str:
    """The scenario as a scenario file (YAML text that loads back to an equal scenario)."""
    data = scenario.model_dump(mode="json", exclude_defaults=True)
    data = {"version": scenario.version, **data}
    data["steps"] = [_dump_step(step) for step in scenario.steps]
    for agent in data["agents"].values():
        if "script" in agent:  # `- "reply"` short form for plain replies
            agent["script"] = [
                turn["reply"] if set(turn) == {"reply"} else turn for turn in agent["script"]
            ]
    if scenario.loop is not None and scenario.loop.evaluators:
        data["loop"]["evaluators"] = [_dump_evaluator(e) for e in scenario.loop.evaluators]
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def loaded(scenario: Scenario) -> LoadedScenario:
    """Load ``scenario`` through the file loader (so reports point at lines of its YAML)."""
    return load_scenario_text(scenario_yaml(scenario))
