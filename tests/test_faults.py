"""Faults on the virtual clock: every kind, on both engines where both build it.

Each test runs one program on loopsim's built-in ``Agent`` and on the real
``agent_framework.Agent`` (behind ``as_chat_client``): a model fault raises loopsim's
simulated service error on the first and what agent_framework's OpenAI clients raise on
the second (``ChatClientException`` caused by the ``openai`` SDK's error), so a user's
retry and ``except`` code runs as in production.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import agent_framework as af
import anyio
import openai
import pytest
from agent_framework.exceptions import ChatClientException
from agent_framework_openai import OpenAIContentFilterException

import loopsim
from loopsim import Fault, FaultyChatClient, Message, ScriptedChatClient, When
from loopsim.agent_framework import as_chat_client

pytestmark = pytest.mark.filterwarnings(
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)

ENGINES = ("loopsim", "agent_framework")


def quote(symbol: str) -> float:
    """The price of ``symbol``."""
    return 420.5


def agent_on(engine: str, client: Any, tools: tuple[Any, ...] = (quote,)) -> Any:
    if engine == "loopsim":
        return loopsim.Agent(client, name="trader", tools=[loopsim.tool(t) for t in tools])
    return af.Agent(client=as_chat_client(client), name="trader", tools=[af.tool(t) for t in tools])


async def run(engine: str, agent: Any, text: str = "price?", *, stream: bool = False) -> Any:
    if not stream:
        return await agent.run(text)
    updates = agent.run_stream(text) if engine == "loopsim" else agent.run(text, stream=True)
    return [u async for u in updates]


def raised(engine: str, call: Any) -> BaseException:
    """What ``call`` raised on ``engine``, unwrapped to the SDK's (or loopsim's) error."""
    clock = loopsim.VirtualClock()
    with pytest.raises(Exception) as info:
        clock.run(call)
    exc = info.value
    if engine == "agent_framework":
        assert isinstance(exc, ChatClientException), type(exc)
        assert exc.__cause__ is not None
    return exc


# -- each raising kind: loopsim's error, agent_framework's error ----------------------------

RAISING = [
    (Fault("rate_limit", retry_after=30), loopsim.RateLimitError, openai.RateLimitError, 429),
    (Fault("server_error", status=503), loopsim.ServerError, openai.InternalServerError, 503),
    (Fault("timeout", after=20), loopsim.ModelTimeoutError, openai.APITimeoutError, None),
    (Fault("stream_cut", after=2), loopsim.StreamCutError, openai.APIConnectionError, None),
    (Fault("content_filter"), loopsim.ContentFilterError, openai.BadRequestError, 400),
    (Fault("fail", message="boom"), loopsim.ModelError, loopsim.ModelError, None),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("fault", "ours", "sdk", "status"), RAISING, ids=[r[0].kind for r in RAISING]
)
@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_a_raising_model_fault_raises_each_engines_error(
    engine: str, fault: Fault, ours: type, sdk: type, status: int | None, *, stream: bool
) -> None:
    client = ScriptedChatClient([fault, "unused"])
    agent = agent_on(engine, client)
    exc = raised(engine, lambda: run(engine, agent, stream=stream))
    if engine == "loopsim":
        assert type(exc) is ours
        assert exc.fault == fault  # type: ignore[attr-defined] # a ModelError
        assert exc.status_code == status  # type: ignore[attr-defined] # a ModelError
    else:
        cause = exc.__cause__
        assert type(cause) is sdk
        if status is not None:
            assert cause.status_code == status  # type: ignore[union-attr] # an APIStatusError
        if fault.kind == "content_filter":
            assert isinstance(exc, OpenAIContentFilterException)
    assert len(client.requests) == 1
    assert client.remaining == ("unused",)


@pytest.mark.parametrize("engine", ENGINES)
def test_rate_limit_carries_retry_after_as_the_service_sends_it(engine: str) -> None:
    agent = agent_on(engine, ScriptedChatClient([Fault("rate_limit", retry_after=42)]))
    exc = raised(engine, lambda: run(engine, agent))
    if engine == "loopsim":
        assert exc.retry_after == 42.0  # type: ignore[attr-defined] # a RateLimitError
    else:
        assert exc.__cause__.response.headers["retry-after"] == "42"  # type: ignore[union-attr] # the SDK's error


@pytest.mark.parametrize("engine", ENGINES)
def test_timeout_waits_its_virtual_seconds_before_it_raises(engine: str) -> None:
    clock = loopsim.VirtualClock()
    agent = agent_on(engine, ScriptedChatClient([Fault("timeout", after=75)]))
    with pytest.raises(Exception, match=r"(75|timed out)"):
        clock.run(run, engine, agent)
    assert clock.elapsed == 75.0


@pytest.mark.parametrize("engine", ENGINES)
def test_stream_cut_delivers_its_updates_then_drops(engine: str) -> None:
    client = ScriptedChatClient([Fault("stream_cut", after=2, reply="one two three four")])
    agent = agent_on(engine, client)
    got: list[str] = []

    async def main() -> None:
        updates = agent.run_stream("go") if engine == "loopsim" else agent.run("go", stream=True)
        async for update in updates:
            got.append(update.text)  # noqa: PERF401 - the updates before the cut are the point

    with pytest.raises((loopsim.StreamCutError, ChatClientException)):
        loopsim.simulate(main)
    assert "".join(got) == "one two "


@pytest.mark.parametrize("engine", ENGINES)
def test_stream_cut_without_streaming_loses_the_whole_answer(engine: str) -> None:
    agent = agent_on(engine, ScriptedChatClient([Fault("stream_cut", after=3, reply="text")]))
    exc = raised(engine, lambda: run(engine, agent))
    assert isinstance(
        exc if engine == "loopsim" else exc.__cause__, ConnectionError | openai.APIConnectionError
    )


# -- kinds that answer ----------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_slow_first_token_answers_after_its_delay(engine: str, stream: bool) -> None:
    clock = loopsim.VirtualClock()
    agent = agent_on(engine, ScriptedChatClient([Fault("slow_first_token", delay=90, reply="hi")]))
    out = clock.run(lambda: run(engine, agent, stream=stream))
    assert (out.text if not stream else "".join(u.text for u in out)) == "hi"
    assert clock.elapsed == 90.0


@pytest.mark.parametrize("engine", ENGINES)
def test_empty_answer_is_an_answer_with_no_text(engine: str) -> None:
    client = ScriptedChatClient([Fault("empty")])
    response = loopsim.simulate(run, engine, agent_on(engine, client))
    assert response.text == ""
    assert len(client.requests) == 1


def _tool_errors(engine: str, client: ScriptedChatClient) -> list[Any]:
    """The tool results the second request sent back (loopsim's messages on both engines)."""
    return [
        c for m in client.requests[1].messages for c in m.contents if c.type == "function_result"
    ]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["unknown_tool", "quote"])
def test_malformed_tool_call_is_answered_with_an_error_then_the_model_goes_on(
    engine: str, name: str
) -> None:
    calls: list[str] = []

    def spy(symbol: str) -> float:
        calls.append(symbol)
        return 1.0

    spy.__name__ = "quote"
    client = ScriptedChatClient([Fault("malformed_tool_call", name=name), "sorry"])
    response = loopsim.simulate(run, engine, agent_on(engine, client, (spy,)))
    assert response.text == "sorry"
    assert calls == []  # the tool never ran on arguments it does not take
    (result,) = _tool_errors(engine, client)
    assert result.call_id.startswith("fault-call-")
    assert result.error, result  # the engine says what was wrong with the call


# -- hang ---------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_hang_lasts_until_the_caller_gives_up(engine: str) -> None:
    clock = loopsim.VirtualClock()
    agent = agent_on(engine, ScriptedChatClient([Fault("hang")]))

    async def main() -> str:
        with anyio.move_on_after(600):
            await run(engine, agent)
            return "answered"
        return "gave up"

    assert clock.run(main) == "gave up"
    assert clock.elapsed == 600.0


def test_hang_with_nobody_waiting_is_a_deadlock_not_a_hung_test() -> None:
    agent = agent_on("loopsim", ScriptedChatClient([Fault("hang")]))
    with pytest.raises(loopsim.SimulationDeadlock):
        loopsim.simulate(run, "loopsim", agent)


# -- the wrapper's rules ------------------------------------------------------------------


async def _calls(client: FaultyChatClient, n: int) -> list[str]:
    out: list[str] = []
    for _ in range(n):
        try:
            out.append((await client.get_response([Message.user("x")])).text)
        except loopsim.ModelError as exc:  # noqa: PERF203 - one try per call is the test
            out.append(type(exc).__name__)
    return out


def test_when_call_fires_on_that_call_only_and_keeps_the_scripted_turn() -> None:
    inner = ScriptedChatClient(["a", "b", "c"])
    client = FaultyChatClient(inner, [Fault("server_error", when={"call": 2})])
    assert loopsim.simulate(_calls, client, 4) == ["a", "ServerError", "b", "c"]
    assert [n for n, _ in client.faulted] == [2]
    assert len(client.requests) == 4
    assert len(inner.requests) == 3


def test_when_every_fires_on_each_kth_call() -> None:
    inner = ScriptedChatClient(["a", "b", "c", "d"])
    client = FaultyChatClient(inner, [Fault("rate_limit", when=When(every=2))])
    out = loopsim.simulate(_calls, client, 6)
    assert out == ["a", "RateLimitError", "b", "RateLimitError", "c", "RateLimitError"]


def test_times_bounds_a_rule_then_calls_succeed() -> None:
    client = FaultyChatClient(ScriptedChatClient(["ok"]), [Fault("server_error", times=3)])
    assert loopsim.simulate(_calls, client, 4) == ["ServerError"] * 3 + ["ok"]


def test_when_window_fires_inside_the_virtual_time_window_only() -> None:
    inner = ScriptedChatClient(["a", "b", "c"])
    client = FaultyChatClient(inner, [Fault("rate_limit", when={"after": 100, "before": 200})])

    async def main() -> list[str]:
        out = []
        for at in (0, 99, 100, 150, 200):
            await anyio.sleep(at - anyio.current_time())
            out += await _calls(client, 1)
        return out

    # the window is [after, before): 100 is in it, 200 is not
    assert loopsim.simulate(main) == ["a", "b", "RateLimitError", "RateLimitError", "c"]


def _rate_run(seed: int) -> list[str]:
    client = FaultyChatClient(
        ScriptedChatClient(["ok"] * 40), [Fault("server_error", when={"rate": 0.5})]
    )
    return loopsim.simulate(_calls, client, 40, seed=seed)


def test_when_rate_is_seeded_reproducible_and_about_the_rate() -> None:
    first, again, other = _rate_run(1), _rate_run(1), _rate_run(2)
    assert first == again
    assert first != other
    assert 10 <= first.count("ServerError") <= 30


def test_the_first_rule_that_holds_wins() -> None:
    client = FaultyChatClient(
        ScriptedChatClient(["ok"]),
        [Fault("rate_limit", when={"call": 1}), Fault("server_error", times=1)],
    )
    assert loopsim.simulate(_calls, client, 3) == ["RateLimitError", "ServerError", "ok"]


@pytest.mark.parametrize("engine", ENGINES)
def test_wrapper_stream_cut_streams_part_of_the_inner_answer(engine: str) -> None:
    inner = ScriptedChatClient(["alpha beta gamma", "again"])
    client = FaultyChatClient(inner, [Fault("stream_cut", after=1, when={"call": 1})])
    agent = agent_on(engine, client)
    got: list[str] = []

    async def main() -> str:
        updates = agent.run_stream("go") if engine == "loopsim" else agent.run("go", stream=True)
        try:
            async for update in updates:
                got.append(update.text)  # noqa: PERF401 - the updates before the cut are the point
        except (loopsim.StreamCutError, ChatClientException):
            return (await agent.run("go")).text
        return "not cut"

    assert loopsim.simulate(main) == "again"
    assert got == ["alpha "]


@pytest.mark.parametrize("engine", ENGINES)
def test_wrapper_slow_first_token_delays_then_answers_from_inner(engine: str) -> None:
    clock = loopsim.VirtualClock()
    client = FaultyChatClient(ScriptedChatClient(["late"]), [Fault("slow_first_token", delay=45)])
    assert clock.run(run, engine, agent_on(engine, client)).text == "late"
    assert clock.elapsed == 45.0


def test_bad_faults_are_rejected_with_what_would_be_valid() -> None:
    with pytest.raises(ValueError, match="unknown fault kind 'rate_limited'"):
        Fault("rate_limited")
    with pytest.raises(TypeError, match="has no option retry; its options: retry_after"):
        Fault("rate_limit", retry=3)
    with pytest.raises(ValueError, match="from 500 to 599"):
        Fault("server_error", status=404)
    with pytest.raises(ValueError, match="empty window"):
        When(after=10, before=5)
    with pytest.raises(ValueError, match=r"probability in \(0, 1\]"):
        When(rate=0)
    with pytest.raises(ValueError, match=r"turns\[0\]: 'wrong_result' is a tool fault"):
        ScriptedChatClient([Fault("wrong_result")])
    with pytest.raises(ValueError, match=r"turns\[1\]: a script's fault happens on its own turn"):
        ScriptedChatClient(["a", Fault("empty", times=2)])
    with pytest.raises(ValueError, match=r"faults\[0\]: 'delay' is no model fault"):
        FaultyChatClient(ScriptedChatClient([]), [Fault("delay")])
    with pytest.raises(ValueError, match=r"faults\[0\]: 'empty' is no tool fault"):
        loopsim.faulty_tool(quote, [Fault("empty")])


# -- tools --------------------------------------------------------------------------------


def _tool_run(engine: str, fault: Fault, calls: int = 1) -> tuple[Any, ScriptedChatClient, Any]:
    ran: list[str] = []

    def quote(symbol: str) -> float:
        """The price of ``symbol``."""
        ran.append(symbol)
        return 420.5

    flaky = loopsim.faulty_tool(quote, [fault])
    script: list[Any] = [
        Message(
            "assistant",
            [
                loopsim.FunctionCallContent(
                    call_id=f"c{i}", name="quote", arguments={"symbol": "MSFT"}
                )
            ],
        )
        for i in range(calls)
    ]
    client = ScriptedChatClient([*script, "done"])
    clock = loopsim.VirtualClock()
    response = clock.run(run, engine, agent_on(engine, client, (flaky,)))
    results = [
        c
        for r in client.requests[1:]
        for m in r.messages[-1:]
        for c in m.contents
        if c.type == "function_result"
    ]
    return (response, results, ran), client, clock


@pytest.mark.parametrize("engine", ENGINES)
def test_tool_error_fault_raises_n_times_then_the_tool_runs(engine: str) -> None:
    (response, results, ran), _, _ = _tool_run(engine, Fault("error", times=2), calls=3)
    assert response.text == "done"
    assert [r.result == "420.5" for r in results] == [False, False, True]
    assert [bool(r.error) for r in results] == [True, True, False]
    assert ran == ["MSFT"]


@pytest.mark.parametrize("engine", ENGINES)
def test_tool_delay_fault_waits_then_runs(engine: str) -> None:
    (_, results, ran), _, clock = _tool_run(engine, Fault("delay", delay=120))
    assert ran == ["MSFT"]
    assert results[0].result == "420.5"
    assert clock.elapsed == 120.0


@pytest.mark.parametrize("engine", ENGINES)
def test_tool_wrong_result_fault_returns_its_result_instead(engine: str) -> None:
    (_, results, ran), _, _ = _tool_run(engine, Fault("wrong_result", result=0.01))
    assert ran == []
    assert results[0].result == "0.01"


@pytest.mark.parametrize("engine", ENGINES)
def test_tool_hang_fault_never_returns(engine: str) -> None:
    with pytest.raises(loopsim.SimulationDeadlock):
        _tool_run(engine, Fault("hang"))


def test_a_faulty_tool_keeps_the_signature_both_engines_read() -> None:
    flaky = loopsim.faulty_tool(quote, [Fault("error")])
    assert loopsim.tool(flaky).name == "quote"
    assert set(af.tool(flaky).parameters()["properties"]) == {"symbol"}


# -- retry libraries wait on virtual time --------------------------------------------------


def test_a_tenacity_retry_waits_ten_virtual_minutes_in_about_a_millisecond() -> None:
    import tenacity

    def once() -> tuple[float, float]:
        client = FaultyChatClient(ScriptedChatClient(["finally"]), [Fault("rate_limit", times=10)])

        async def ask() -> str:
            async for attempt in tenacity.AsyncRetrying(
                retry=tenacity.retry_if_exception_type(loopsim.RateLimitError),
                wait=tenacity.wait_fixed(60),
                stop=tenacity.stop_after_attempt(11),
            ):
                with attempt:
                    return (await client.get_response([Message.user("x")])).text
            raise AssertionError

        clock = loopsim.VirtualClock()
        started = time.perf_counter()
        assert clock.run(ask) == "finally"
        return time.perf_counter() - started, clock.elapsed

    once()  # the first simulation of a process pays one-time setup
    wall, virtual = once()
    assert virtual == 600.0
    # about a millisecond on an idle machine (7 ms measured with 8 engineers on 2 cores)
    assert wall < 0.25, wall


def test_a_backoff_retry_on_an_agent_framework_agent_waits_on_virtual_time() -> None:
    import backoff

    client = ScriptedChatClient([Fault("server_error", status=503)] * 5 + ["up again"])
    agent = agent_on("agent_framework", client)

    @backoff.on_exception(
        backoff.constant, ChatClientException, interval=120, max_tries=6, jitter=None
    )
    async def ask() -> str:
        return str((await agent.run("status?")).text)

    clock = loopsim.VirtualClock()
    assert clock.run(ask) == "up again"
    assert clock.elapsed == 600.0  # five waits of two virtual minutes
    assert len(client.requests) == 6


def test_a_retry_honouring_retry_after_on_agent_framework_reads_the_sdk_header() -> None:
    client = ScriptedChatClient(
        [Fault("rate_limit", retry_after=30), Fault("rate_limit", retry_after=90), "ok"]
    )
    agent = agent_on("agent_framework", client)

    async def main() -> str:
        while True:
            try:
                return str((await agent.run("go")).text)
            except ChatClientException as exc:  # noqa: PERF203 - a retry loop is the test
                cause = exc.__cause__
                if not isinstance(cause, openai.RateLimitError):
                    raise
                await asyncio.sleep(float(cause.response.headers["retry-after"]))

    clock = loopsim.VirtualClock()
    assert clock.run(main) == "ok"
    assert clock.elapsed == 120.0


# -- hypothesis strategies ----------------------------------------------------------------


def _retrying_run(faults: list[Fault]) -> str:
    """A caller that retries on 429 as the service says, at most 5 tries."""
    client = FaultyChatClient(ScriptedChatClient(["ok"]), faults)

    async def ask() -> str:
        for _ in range(4):
            try:
                return (await client.get_response([Message.user("q")])).text
            except loopsim.RateLimitError as exc:  # noqa: PERF203 - a retry loop is the test
                await asyncio.sleep(exc.retry_after or 1)
        return (await client.get_response([Message.user("q")])).text

    return str(loopsim.simulate(ask))


def test_fault_sets_shrink_to_the_smallest_set_that_breaks_the_caller() -> None:
    from hypothesis import find

    from loopsim.testing import fault_sets

    def breaks(faults: list[Fault]) -> bool:
        try:
            _retrying_run(faults)
        except loopsim.ModelError:
            return True
        return False

    strategy = fault_sets(["rate_limit", "timeout"], calls=(1, 6), max_faults=6)
    assert find(strategy, breaks) == [Fault("timeout", when={"call": 1})]
    only_429 = fault_sets(["rate_limit"], calls=(1, 3), max_faults=3)
    # four 429s in a row are needed to break it, and calls 1-3 hold at most three
    from hypothesis.errors import NoSuchExample

    with pytest.raises(NoSuchExample):
        find(only_429, breaks)


def test_fault_sets_refuse_what_draws_nothing() -> None:
    from loopsim.testing import fault_sets

    with pytest.raises(ValueError, match="kinds must be fault kinds"):
        fault_sets(["rate_limited"])
    with pytest.raises(ValueError, match="1 <= low <= high"):
        fault_sets(calls=(0, 3))
