"""Properties of the loop over generated evaluator decisions, caps and approvals.

For any decision table (per iteration, per evaluator: continue with feedback, continue
without, continue with messages, or stop), any cap 1..12 and an optional approval
iteration:

* inner invocations == min(first all-stop iteration, cap, first approval iteration);
* evaluators are asked in order and none after the first that continues; none on the
  capped or approval iteration;
* the caller's input reaches the inner agent exactly once (unless fresh context);
* streaming and non-streaming agree on decisions, inputs and final messages;
* the run report (loop_stop) names the right reason and iteration count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import (
    AgentResponse,
    AgentResponseUpdate,
    FunctionApprovalRequestContent,
    FunctionCallContent,
    LoopAgent,
    LoopAgentOptions,
    LoopContext,
    LoopEvaluation,
    LoopEvaluator,
    Message,
    _trace,
)

MAX_ROWS = 12
# a decision: None = stop, "" = continue without feedback, "@..." = explicit messages,
# anything else = continue with that feedback
decision = st.one_of(
    st.none(), st.just(""), st.sampled_from(["fix a", "fix b", "@explicit"]), st.just("  ")
)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    n_evaluators = draw(st.integers(1, 3))
    table = draw(
        st.lists(
            st.lists(decision, min_size=n_evaluators, max_size=n_evaluators),
            min_size=MAX_ROWS,
            max_size=MAX_ROWS,
        )
    )
    return {
        "table": table,
        "cap": draw(st.integers(1, MAX_ROWS)),
        "approval": draw(st.none() | st.integers(1, MAX_ROWS)),
        "fresh": draw(st.booleans()),
        "author": draw(st.sampled_from([None, "loop"])),
        "exclude": draw(st.booleans()),
        "backend": draw(st.sampled_from(["asyncio", "trio"])),
    }


class Tabled(LoopEvaluator):
    def __init__(self, index: int, table: list[list[str | None]], log: list[tuple[int, int]]):
        self.index = index
        self.table = table
        self.log = log

    async def evaluate(self, context: LoopContext) -> LoopEvaluation:
        self.log.append((context.iteration, self.index))
        choice = self.table[context.iteration - 1][self.index]
        if choice is None:
            return LoopEvaluation.stop()
        if choice.startswith("@"):
            return LoopEvaluation.continue_with_messages([Message.user(choice[1:])])
        return LoopEvaluation.continue_with_feedback(choice)


@dataclass
class Recorder(loopsim.BaseAgent):
    approval: int | None

    def __post_init__(self) -> None:
        super().__init__(name="inner")
        self.inputs: list[list[Message]] = []

    def _reply(self, messages: list[Message]) -> AgentResponse:
        self.inputs.append(list(messages))
        n = len(self.inputs)
        if n == self.approval:
            call = FunctionCallContent(call_id="c", name="t", arguments={})
            content: Any = FunctionApprovalRequestContent(id="c", function_call=call)
        else:
            content = f"answer {n}"
        return AgentResponse(
            Message("assistant", [content], message_id=f"a{n}"), response_id=f"r{n}"
        )

    async def _run(self, messages: list[Message], session: Any, options: Any) -> AgentResponse:
        return self._reply(messages)

    async def _run_stream(self, messages: list[Message], session: Any, options: Any) -> Any:
        response = self._reply(messages)
        for m in response.messages:
            yield AgentResponseUpdate(
                m.role, m.contents, message_id=m.message_id, response_id=response.response_id
            )


def expected_invocations(s: dict[str, Any]) -> tuple[int, str]:
    for iteration in range(1, MAX_ROWS + 1):
        if iteration == s["approval"]:
            return iteration, "approval_pending"
        if iteration >= s["cap"]:
            return iteration, "max_iterations"
        if all(choice is None for choice in s["table"][iteration - 1]):
            return iteration, "evaluators_stopped"
    raise AssertionError("unreachable: cap <= MAX_ROWS")


def run_once(s: dict[str, Any], *, streaming: bool) -> dict[str, Any]:
    log: list[tuple[int, int]] = []
    n = len(s["table"][0])
    inner = Recorder(s["approval"])
    agent = LoopAgent(
        inner,
        [Tabled(i, s["table"], log) for i in range(n)],
        LoopAgentOptions(
            max_iterations=s["cap"],
            fresh_context_per_iteration=s["fresh"],
            on_behalf_of_author_name=s["author"],
            exclude_on_behalf_of_messages=s["exclude"],
        ),
    )
    task = Message.user("the task")
    events: list[_trace.Event] = []

    async def main() -> AgentResponse:
        _trace.current().subscribe(events.append)
        if streaming:
            response_stream = agent.run_stream([task])
            async for _ in response_stream:
                pass
            return await response_stream.get_final_response()
        return await agent.run([task])

    result = loopsim.simulate(main, backend=s["backend"])
    stops = [e.data for e in events if e.kind == "loop_stop"]
    return {"log": log, "inner": inner, "result": result, "task": task, "stops": stops}


@settings(deadline=None)
@given(scenarios())
def test_loop_agent_invariants(s: dict[str, Any]) -> None:
    outcome = run_once(s, streaming=False)
    inner: Recorder = outcome["inner"]
    invocations, reason = expected_invocations(s)
    assert len(inner.inputs) == invocations
    assert outcome["stops"] == [{"loop": "inner", "reason": reason, "iterations": invocations}]

    # evaluators asked in order, none after the winner, none on the last iteration
    expected_log: list[tuple[int, int]] = []
    for iteration in range(1, invocations):
        for index, choice in enumerate(s["table"][iteration - 1]):
            expected_log.append((iteration, index))
            if choice is not None:
                break
    if reason == "evaluators_stopped":
        expected_log += [(invocations, i) for i in range(len(s["table"][0]))]
    assert outcome["log"] == expected_log

    # each re-invocation sends what the winner asked for, built as upstream builds it
    winners = [next(c for c in s["table"][i - 1] if c is not None) for i in range(1, invocations)]
    bullets: list[str] = []
    for choice, sent_messages in zip(winners, inner.inputs[1:], strict=True):
        texts = [m.text for m in sent_messages]
        if choice.startswith("@"):
            assert texts == [choice[1:]]
            continue
        if choice.strip():
            bullets.append(choice)
        if s["fresh"]:
            feedback = ["## Feedback\n" + "".join(f"\n- {b}" for b in bullets)] if bullets else []
            assert texts == ["the task", *feedback]
        else:
            assert texts == ([choice] if choice.strip() else [])

    # the caller's input reaches the inner agent exactly once unless fresh context
    task = outcome["task"]
    sent = sum(1 for messages in inner.inputs for m in messages if m is task)
    if s["fresh"]:
        explicit = [
            next(c for c in s["table"][i - 1] if c is not None).startswith("@")
            for i in range(1, invocations)
        ]
        assert sent == 1 + explicit.count(False)
    else:
        assert sent == 1


@settings(deadline=None)
@given(scenarios())
def test_streaming_and_non_streaming_agree(s: dict[str, Any]) -> None:
    plain = run_once(s, streaming=False)
    streamed = run_once(s, streaming=True)
    assert plain["log"] == streamed["log"]
    assert plain["stops"] == streamed["stops"]

    def inputs(outcome: dict[str, Any]) -> list[list[tuple[str, str, str | None]]]:
        return [[(m.role, m.text, m.author_name) for m in i] for i in outcome["inner"].inputs]

    def shape(response: AgentResponse) -> list[tuple[str, str, str | None]]:
        return [(m.role, m.text, m.author_name) for m in response.messages]

    assert inputs(plain) == inputs(streamed)
    assert shape(plain["result"]) == shape(streamed["result"])


@settings(deadline=None)
@given(
    stops=st.lists(st.booleans(), min_size=MAX_ROWS, max_size=MAX_ROWS),
    cap=st.none() | st.integers(1, MAX_ROWS),
    approval=st.none() | st.integers(1, MAX_ROWS),
    streaming=st.booleans(),
    backend=st.sampled_from(["asyncio", "trio"]),
)
def test_middleware_invocations(
    stops: list[bool], cap: int | None, approval: int | None, streaming: bool, backend: str
) -> None:
    stops[-1] = True  # the loop always ends within the table
    asked: list[int] = []

    def should_continue(iteration: int, **kw: Any) -> bool:
        asked.append(iteration)
        return not stops[iteration - 1]

    replies: list[Any] = []
    for n in range(1, MAX_ROWS + 1):
        if n == approval:
            call = FunctionCallContent(call_id="c", name="delete", arguments={})
            replies.append(Message("assistant", [call]))
        else:
            replies.append(f"answer {n}")

    @loopsim.tool(approval_mode="always_require")
    def delete() -> str:
        return "deleted"

    client = loopsim.ScriptedChatClient(replies)
    agent = loopsim.Agent(
        client,
        name="worker",
        tools=[delete],
        middleware=[loopsim.AgentLoopMiddleware(should_continue, max_iterations=cap)],
    )

    async def main() -> None:
        if streaming:
            async for _ in agent.run_stream("task"):
                pass
        else:
            await agent.run("task")

    loopsim.simulate(main, backend=backend)
    first_stop = stops.index(True) + 1
    limits = [first_stop]
    if cap is not None:
        limits.append(cap)
    if approval is not None:
        limits.append(approval)
    invocations = min(limits)
    assert len(client.requests) == invocations
    asked_until = (
        invocations
        if invocations == first_stop and invocations not in (cap, approval)
        else invocations - 1
    )
    assert asked == list(range(1, asked_until + 1))
