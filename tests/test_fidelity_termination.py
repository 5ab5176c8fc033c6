"""MiddlewareTermination on both engines: the run or stream ends cleanly."""

from __future__ import annotations

from typing import Any

import agent_framework as af
import pytest
from _af_fake import FakeAFChatClient

import loopsim
from loopsim import MiddlewareTermination, ScriptedChatClient

pytestmark = pytest.mark.filterwarnings(
    # upstream marks its harness classes experimental; that warning is not what we test
    "ignore::agent_framework._feature_stage.ExperimentalWarning"
)


def stopper(base: type, termination: type, *, on_call: int, after: bool) -> Any:
    class Stop(base):  # type: ignore[misc, valid-type] # one middleware class per engine
        def __init__(self) -> None:
            self.calls = 0

        async def process(self, context: Any, call_next: Any) -> None:
            self.calls += 1
            if self.calls == on_call and not after:
                raise termination
            await call_next()
            if self.calls == on_call and after:
                raise termination

    return Stop()


ENGINES = {
    "loopsim": (
        loopsim.Agent,
        ScriptedChatClient,
        loopsim.AgentMiddleware,
        MiddlewareTermination,
        loopsim.AgentLoopMiddleware,
    ),
    "agent_framework": (
        lambda client, middleware: af.Agent(client=client, middleware=middleware),
        FakeAFChatClient,
        af.AgentMiddleware,
        af.MiddlewareTermination,
        af.AgentLoopMiddleware,
    ),
}


def run_on(engine: str, *, after: bool, stream: bool) -> tuple[list[str], str]:
    make_agent, make_client, base, termination, _ = ENGINES[engine]
    if engine == "loopsim":
        agent = make_agent(
            make_client(["hi"]), middleware=[stopper(base, termination, on_call=1, after=after)]
        )
    else:
        agent = make_agent(
            make_client(["hi"]), [stopper(base, termination, on_call=1, after=after)]
        )

    async def main() -> tuple[list[str], str]:
        if stream:
            response_stream = agent.run("go", stream=True)
            texts = [u.text async for u in response_stream]
            final = await response_stream.get_final_response()
            return texts, final.text if final else ""
        response = await agent.run("go")
        return [], response.text if response is not None else ""

    return loopsim.simulate(main)


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("after", [False, True], ids=["before-call-next", "after-call-next"])
def test_a_terminating_middleware_ends_the_run_cleanly_on_both_engines(
    after: bool, stream: bool
) -> None:
    ours = run_on("loopsim", after=after, stream=stream)
    theirs = run_on("agent_framework", after=after, stream=stream)
    assert ours == theirs
    expected = ((["hi"] if stream else []), "hi") if after else ([], "")
    assert ours == expected


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_a_termination_inside_a_loop_keeps_the_finished_iteration_on_both_engines(
    stream: bool,
) -> None:
    def results(engine: str) -> tuple[list[str], list[str]]:
        make_agent, make_client, base, termination, loop = ENGINES[engine]
        client = make_client(["one", "two", "three"])
        middleware = [
            loop(lambda **_: True, max_iterations=3, inject_progress=False),
            stopper(base, termination, on_call=2, after=False),
        ]
        agent = (
            make_agent(client, middleware=middleware)
            if engine == "loopsim"
            else make_agent(client, middleware)
        )

        async def main() -> tuple[list[str], list[str]]:
            if stream:
                response_stream = agent.run("go", stream=True)
                texts = [u.text async for u in response_stream]
                final = await response_stream.get_final_response()
                return texts, [m.text for m in final.messages]
            response = await agent.run("go")
            return [], [m.text for m in response.messages]

        return loopsim.simulate(main)

    ours, theirs = results("loopsim"), results("agent_framework")
    assert len(ours[0]) == len(theirs[0])  # the nudge texts differ: their words and ours
    assert ours[0][:1] == theirs[0][:1]
    assert ours[1] == theirs[1] == ["one"]
