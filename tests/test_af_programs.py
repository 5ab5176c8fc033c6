"""Real agent_framework programs (tests/af_programs/), unchanged but for the model.

Each program is written the way a team writes its app: it builds its agents itself, from
agent_framework's public API, and gets its chat clients from ``af_programs.models`` (the
one module a team points at its vendor). The tests put loopsim fakes behind that module,
run each program three times under ``loopsim.record`` and require byte-identical
transcripts, then check what the program did: its answer, its tool calls, its tasks and
the virtual time they took. agent_framework runs on asyncio only, so asyncio is the one
backend here.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from af_programs import (
    editor_loop,
    faq_bot,
    incident_triage,
    models,
    offsite_planner,
    refund_desk,
    report_writer,
    research_desk,
    standup,
    support_thread,
    trade_book,
    trade_book_urandom,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import loopsim
from loopsim import FunctionCallContent, Message, ScriptedChatClient, Turn

PROGRAMS = Path(__file__).parent / "af_programs"
START = "background_agents_start_task"
WAIT = "background_agents_wait_for_first_completion"
RESULTS = "background_agents_get_task_results"
ALL = "background_agents_get_all_tasks"

Fakes = Callable[[], Mapping[str, Any]]


def call(name: str, call_id: str, **arguments: Any) -> Message:
    content = FunctionCallContent(call_id=call_id, name=name, arguments=arguments)
    return Message("assistant", [content])


def once(
    main: Callable[..., Any], fakes: Fakes, *args: Any, seed: int = 0
) -> tuple[Any, loopsim.Transcript]:
    async def run() -> Any:
        return await main(*args)

    with models.fakes(**fakes()):
        return loopsim.record(run, seed=seed, scenario=main.__module__)


def thrice(
    main: Callable[..., Any], fakes: Fakes, *args: Any, seed: int = 0
) -> tuple[Any, loopsim.Transcript, Mapping[str, Any]]:
    """Run ``main`` three times on fresh fakes; fail unless the transcripts are byte-identical
    and every scripted turn was used.

    Returns the first run's result, transcript and fakes (for what the models were sent).
    """
    runs = []
    for _ in range(3):
        by_role = fakes()
        result, transcript = once(main, lambda by_role=by_role: by_role, *args, seed=seed)
        runs.append((result, transcript, by_role))
    first = runs[0][1].model_dump_json().encode()
    for number, (_, transcript, _) in enumerate(runs[1:], start=2):
        if transcript.model_dump_json().encode() != first:
            divergence = loopsim.diff_transcripts(runs[0][1], transcript)
            msg = f"{main.__module__}: run {number} differs from run 1: {divergence}"
            raise AssertionError(msg)
    assert [r[0] for r in runs] == [runs[0][0]] * 3
    for role, fake in runs[0][2].items():
        left = getattr(getattr(fake, "inner", fake), "remaining", ())
        assert left == (), f"{role}: {len(left)} scripted turn(s) the program never asked for"
    return runs[0]


def events(transcript: loopsim.Transcript, *kinds: str) -> list[loopsim.TranscriptEvent]:
    return [e for e in transcript.events if e.kind in kinds]


def tool_calls(transcript: loopsim.Transcript) -> list[tuple[float, str | None, str, Any]]:
    return [
        (e.time, e.data.get("agent"), e.data["name"], e.data.get("arguments"))
        for e in events(transcript, "tool_call")
    ]


def tool_results(transcript: loopsim.Transcript) -> dict[str, Any]:
    return {e.data["call_id"]: e.data.get("result") for e in events(transcript, "tool_result")}


def loop_facts(transcript: loopsim.Transcript) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for e in events(transcript, "evaluator_decision", "loop_stop"):
        if e.kind == "evaluator_decision":
            rows.append((e.time, e.data["iteration"], e.data["decision"]))
        else:
            rows.append((e.time, "stop", e.data["reason"], e.data["iterations"]))
    return rows


def finished_tasks(transcript: loopsim.Transcript) -> list[tuple[float, str, str]]:
    return [
        (e.time, e.data["agent"], e.data["outcome"]) for e in events(transcript, "task_finished")
    ]


# -- the programs ---------------------------------------------------------------------------


def editor_fakes() -> dict[str, Any]:
    long_draft = (
        "Our new kettle boils water quickly and quietly and it also looks great on any counter"
    )
    return {
        "editor": ScriptedChatClient(
            [
                call("count_words", "c1", text=long_draft),
                Turn(long_draft, delay=3),
                Turn("Boils fast, pours clean, looks great.", delay=2),
                Turn("Boils fast, pours clean, looks great. -- Ed.", delay=2),
            ]
        )
    }


def test_the_editor_loops_until_its_own_rule_holds() -> None:
    text, transcript, fakes = thrice(editor_loop.main, editor_fakes)
    assert text == "Boils fast, pours clean, looks great. -- Ed."
    assert loop_facts(transcript) == [
        (3.0, 1, "continue"),
        (5.0, 2, "continue"),
        (7.0, 3, "stop"),
        (7.0, "stop", "evaluators_stopped", 3),
    ]
    assert tool_calls(transcript)[0][1:3] == ("editor", "count_words")
    assert tool_results(transcript)["c1"] == "16"  # agent_framework sends results as text
    # the loop's own next_message reached the model, saying what is still wrong
    nudges = [r.messages[-1].text for r in fakes["editor"].requests[2:]]
    assert nudges == [
        "Rewrite the blurb: it has 16 words, the limit is 12; it must end with '-- Ed.'.",
        "Rewrite the blurb: it must end with '-- Ed.'.",
    ]
    assert transcript.events[-1].time == 7.0


def draft(words: int, signed: bool) -> str:
    return " ".join(["kettle"] * words) + (" -- Ed." if signed else "")


@settings(max_examples=8)
@given(st.lists(st.tuples(st.integers(1, 20), st.booleans()), min_size=4, max_size=4))
def test_the_editor_stops_at_the_first_draft_that_fits_or_at_its_cap(
    drafts: list[tuple[int, bool]],
) -> None:
    fits = [signed and words + 2 <= editor_loop.MAX_WORDS for words, signed in drafts]
    ran = fits.index(True) + 1 if True in fits else 4  # the program's cap
    models_made: list[ScriptedChatClient] = []

    def fakes() -> dict[str, Any]:
        models_made.append(ScriptedChatClient([Turn(draft(*d), delay=1) for d in drafts]))
        return {"editor": models_made[-1]}

    (text, transcript), (_, again) = (once(editor_loop.main, fakes) for _ in range(2))
    assert again.model_dump_json() == transcript.model_dump_json()
    assert text == draft(*drafts[ran - 1])
    (stop,) = events(transcript, "loop_stop")
    # upstream's cap ends the loop before the predicate is asked about the 4th draft
    reason = "evaluators_stopped" if True in fits[:3] else "max_iterations"
    assert (stop.data["reason"], stop.data["iterations"], stop.time) == (reason, ran, float(ran))
    assert len(models_made[0].remaining) == 4 - ran


def desk_fakes() -> dict[str, Any]:
    return {
        "web": ScriptedChatClient([Turn("web: 3 recent sources", delay=20)]),
        "archive": ScriptedChatClient([Turn("archive: a 1998 field study", delay=3600)]),
        "quotes": ScriptedChatClient([RuntimeError("quotes service is down")]),
        "coordinator": ScriptedChatClient(
            [
                call(START, "s1", agent_name="web", input="heat pumps", description="sources"),
                call(START, "s2", agent_name="archive", input="heat pumps", description="history"),
                call(START, "s3", agent_name="quotes", input="heat pumps", description="quotes"),
                call(WAIT, "w1", task_ids=[1, 2, 3]),
                "quotes failed; waiting for the others",
                call(WAIT, "w2", task_ids=[1, 2]),
                call(RESULTS, "r1", task_id=1),
                "web is in; the archive is still digging",
                call(WAIT, "w3", task_ids=[2]),  # times out at 20 + 1800
                # the model thinks until t=3700; the archive's run ends meanwhile, at 3600
                Turn(call(ALL, "a1"), delay=1880),
                call(RESULTS, "r2", task_id=2),
                "Report: 3 recent sources and a 1998 field study; no expert quotes.",
            ]
        ),
    }


def test_the_research_desk_reports_a_fast_a_slow_and_a_failed_child() -> None:
    report, transcript, _ = thrice(research_desk.main, desk_fakes)
    assert report == "Report: 3 recent sources and a 1998 field study; no expert quotes."
    # each child's end at the instant its run ended (item 7), not when the parent looked
    assert finished_tasks(transcript) == [
        (0.0, "quotes", "failed"),
        (20.0, "web", "completed"),
        (3600.0, "archive", "completed"),
    ]
    # the task record in the session catches up when the coordinator next looks, at 3700
    archive = [
        (e.time, e.data["status"])
        for e in events(transcript, "task_status")
        if e.data["task_id"] == 2
    ]
    assert archive == [(0.0, "running"), (3700.0, "completed")]
    (bar,) = (
        line for line in loopsim.render_timeline(transcript).splitlines() if "task 2 " in line
    )
    assert bar.endswith(", 0, 3600000")  # the archive's bar ends when its run did
    diagram = loopsim.render_mermaid(transcript)
    assert diagram.index("t=3600 task 2 completed") < diagram.index("t=3700 get_all_tasks()")
    (failed,) = (e for e in events(transcript, "task_finished") if e.data["outcome"] == "failed")
    assert failed.data["error"] == "quotes service is down"
    assert loop_facts(transcript) == [
        (0.0, 1, "continue"),
        (20.0, 2, "continue"),
        (3700.0, 3, "stop"),
        (3700.0, "stop", "evaluators_stopped", 3),
    ]
    results = tool_results(transcript)
    assert "3 recent sources" in str(results["r1"])
    assert "1998 field study" in str(results["r2"])


def test_the_research_desk_streamed_is_traced_as_the_plain_run() -> None:
    async def streamed() -> str:
        return await research_desk.main(stream=True)

    streamed.__module__ = research_desk.__name__
    report, transcript, _ = thrice(streamed, desk_fakes)
    assert report.startswith("Report: 3 recent sources")
    _, plain = once(research_desk.main, desk_fakes)
    assert loopsim.diff_transcripts(plain, transcript) is None


def refund_fakes(reply: str) -> Fakes:
    def fakes() -> dict[str, Any]:
        return {
            "support": ScriptedChatClient(
                [
                    call("order_total", "t1", order_id="A-100"),
                    Turn(call("issue_refund", "r1", order_id="A-100", amount=49.5), delay=1),
                    Turn(reply, delay=1),
                ]
            )
        }

    return fakes


@pytest.mark.parametrize(
    ("approved", "reply"),
    [(True, "Refunded 49.50 on A-100."), (False, "Sorry, the refund was declined.")],
    ids=["approved", "rejected"],
)
def test_a_refund_waits_for_the_reviewer_and_follows_the_decision(
    approved: bool, reply: str
) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def review(name: str, arguments: dict[str, Any]) -> bool:
        asked.append((name, arguments))
        return approved

    (text, decisions), transcript, fakes = thrice(
        refund_desk.main, refund_fakes(reply), "Refund order A-100 please.", review
    )
    assert text == reply
    assert decisions == [("issue_refund", approved)]
    assert asked == [("issue_refund", {"order_id": "A-100", "amount": 49.5})] * 3
    assert ({"A-100": 49.5} if approved else {}) == refund_desk.REFUNDS
    ran = [name for _, _, name, _ in tool_calls(transcript)]
    assert ran == (["order_total", "issue_refund"] if approved else ["order_total"])
    # what the model read after the decision: the refund's result, or the rejection
    last = fakes["support"].requests[-1].messages[-1]
    (result,) = last.contents
    assert result.type == "function_result"
    if approved:
        assert result.result == "refunded 49.50 on A-100"
    else:
        assert "rejected" in str(result.result)  # upstream's rejection result, tool not run
    assert transcript.events[-1].time == 2.0


def helpdesk_fakes() -> dict[str, Any]:
    model = ScriptedChatClient(["Unplug it for 30 seconds.", Turn("Reset it with a pin.", delay=4)])
    return {"helpdesk": loopsim.ServiceChatClient(model)}


def test_a_service_conversation_sends_only_the_new_message_each_turn() -> None:
    result, transcript, fakes = thrice(support_thread.main, helpdesk_fakes)
    assert result == {
        "answers": ["Unplug it for 30 seconds.", "Reset it with a pin."],
        "conversation": "conv-0001",
    }
    service = fakes["helpdesk"]
    # the service got only each turn's new message, with the conversation id after the first
    assert [[m.text for m in r.messages] for r in service.requests] == [
        ["My router blinks red."],
        ["It still blinks."],
    ]
    assert [r.options.conversation_id for r in service.requests] == [None, "conv-0001"]
    # the model behind it read the whole stored history
    assert [m.text for m in service.inner.requests[1].messages] == [
        "My router blinks red.",
        "Unplug it for 30 seconds.",
        "It still blinks.",
    ]
    requests = events(transcript, "model_request")
    assert [r.data.get("conversation_id") for r in requests] == [None, "conv-0001"]
    assert transcript.events[-1].time == 4.0


def writer_fakes() -> dict[str, Any]:
    model = ScriptedChatClient([Turn("Churn fell to 4.1%.", delay=5)])
    return {"writer": loopsim.BackgroundResponseChatClient(model, duration=600)}


def test_the_report_writer_polls_its_background_response_until_it_is_ready() -> None:
    (text, polls), transcript, fakes = thrice(report_writer.main, writer_fakes)
    assert text == "Churn fell to 4.1%."
    assert polls == 600 // report_writer.POLL_SECONDS  # every 30 s until t=600
    service = fakes["writer"]
    assert len(service.requests) == polls + 1  # the first request, then one per poll
    assert len(service.inner.requests) == 1  # the model itself was asked once
    responses = events(transcript, "model_response")
    assert len(responses) == polls + 1
    assert transcript.events[-1].time == 605.0  # the last poll at 600, the model thinks 5 s


def trade_fakes() -> dict[str, Any]:
    return {
        "trader": ScriptedChatClient(
            [
                call("book_orders", "b1", symbol="ACME", quantity=1, count=10_000),
                call("open_orders", "o1"),
                "Booked 10000 orders; 10000 are open.",
            ]
        )
    }


def test_short_trade_ids_cut_from_uuid4_do_not_collide() -> None:
    result, transcript, _ = thrice(
        trade_book.main, trade_fakes, "Split 10000 ACME into single orders."
    )
    assert result["answer"] == "Booked 10000 orders; 10000 are open."
    assert result["booked"] == 10_000  # no two orders got the same short id (item 1)
    assert tool_results(transcript)["o1"] == "10000"
    assert all(len(i) == len("TRADE-") + 8 for i in result["first"])
    # the ids follow the seed: another seed books under other ids
    other, _ = once(trade_book.main, trade_fakes, "Split 10000 ACME into single orders.", seed=1)
    assert other["booked"] == 10_000
    assert other["first"] != result["first"]


def test_the_three_runs_check_fails_for_ids_from_os_urandom() -> None:
    with pytest.raises(
        AssertionError, match=r"trade_book_urandom: run 2 differs from run 1"
    ) as info:
        thrice(trade_book_urandom.main, trade_fakes, "Split 10000 ACME into single orders.")
    assert "tool_result" in str(info.value)  # the first divergence: the booked ids


def standup_fakes() -> dict[str, Any]:
    return {
        "facilitator": ScriptedChatClient(
            [call("speaking_order", "o1"), call("icebreaker", "i1"), "Let's go!"]
        )
    }


def test_random_is_seeded_per_run_and_restored_after() -> None:
    random.seed("the test's own stream")
    before = random.getstate()
    text, transcript, _ = thrice(standup.main, standup_fakes)
    assert random.getstate() == before  # item 2: the caller's generator is left as it was
    assert text == "Let's go!"
    results = tool_results(transcript)
    assert sorted(eval(results["o1"])) == sorted(standup.TEAM)  # noqa: S307 - our tool's list
    orders = {str(results["o1"])} | {
        str(tool_results(once(standup.main, standup_fakes, seed=seed)[1])["o1"])
        for seed in range(1, 4)
    }
    assert len(orders) > 1  # the shuffle really follows the seed


def faq_fakes() -> dict[str, Any]:
    def answer(messages: list[Message], options: Any) -> Any:
        last = messages[-1]
        if last.role == "tool":
            return f"Delivery takes {last.contents[0].result} working days."
        return call("shipping_days", "d1", region="us")

    return {"faq": loopsim.FunctionChatClient(answer)}


def test_an_agent_built_at_import_time_gets_stable_labels() -> None:
    text, transcript, _ = thrice(faq_bot.main, faq_fakes)
    assert text == "Delivery takes 5 working days."
    dumped = transcript.model_dump_json()
    assert faq_bot.FAQ.id not in dumped  # its random id never reaches the transcript
    labels = {e.data.get("agent") for e in events(transcript, "model_request", "tool_call")}
    assert labels == {"outside-0001"}
    assert tool_calls(transcript)[0][2:] == ("shipping_days", {"region": "us"})


def planner_fakes() -> dict[str, Any]:
    return {
        "scout": ScriptedChatClient([Turn("Lakeside Lodge, 3100 for 12 people", delay=300)]),
        "planner": ScriptedChatClient(
            [
                call(
                    "todos_add", "t1", todos=[{"title": "Pick a venue"}, {"title": "Check budget"}]
                ),
                call(START, "s1", agent_name="scout", input="venue for 12", description="venue"),
                call("budget_left", "b1", spent=0),
                call("todos_complete", "t2", items=[{"id": 2, "reason": "4000 available"}]),
                "Budget checked; the scout is looking for a venue.",
                call(WAIT, "w1", task_ids=[1]),
                call(
                    "file_memory_write",
                    "m1",
                    file_name="offsite.md",
                    content="Venue: Lakeside Lodge (3100)",
                ),
                call("todos_complete", "t3", items=[{"id": 1, "reason": "Lakeside Lodge"}]),
                "Booked Lakeside Lodge for 3100; 900 of the budget left.",
            ]
        ),
    }


def test_the_harness_planner_loops_while_todos_remain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # upstream's default file memory writes {cwd}/agent-file-memory; inside a simulation it
    # goes to a folder of the run's own (issue 21 item 12): three runs in one folder agree
    # and leave it empty
    monkeypatch.chdir(tmp_path)

    async def main() -> str:
        return await offsite_planner.main()

    main.__module__ = offsite_planner.__name__
    text, transcript, _ = thrice(main, planner_fakes)
    assert text == "Booked Lakeside Lodge for 3100; 900 of the budget left."
    assert loop_facts(transcript) == [
        (0.0, 1, "continue"),
        (300.0, 2, "stop"),
        (300.0, "stop", "evaluators_stopped", 2),
    ]
    assert finished_tasks(transcript) == [(300.0, "scout", "completed")]
    assert tool_results(transcript)["b1"] == "4000"
    names = [name for _, _, name, _ in tool_calls(transcript)]
    assert names == [
        "todos_add",
        START,
        "budget_left",
        "todos_complete",
        WAIT,
        "file_memory_write",
        "todos_complete",
    ]
    written = [e.data.get("arguments") for e in events(transcript, "tool_call")]
    assert {"file_name": "offsite.md", "content": "Venue: Lakeside Lodge (3100)"} in written
    assert list(tmp_path.iterdir()) == []


def triage_fakes() -> dict[str, Any]:
    def specialist(finding: str, think: float, answer: float) -> ScriptedChatClient:
        return ScriptedChatClient(
            [
                Turn(call("log_finding", f"f-{finding}", finding=finding), delay=think),
                Turn(f"{finding}, see the log", delay=answer),
            ]
        )

    return {
        "network": specialist("load balancer drops", 12, 3),
        "database": specialist("pool exhausted", 5, 2),
        "frontend": specialist("bundle is fine", 40, 45),  # answers at 85 s: too late
    }


def test_concurrent_specialists_keep_their_order_and_the_apps_own_timeout() -> None:
    answers, transcript, _ = thrice(incident_triage.main, triage_fakes)
    assert answers == [
        "network: load balancer drops, see the log",
        "database: pool exhausted, see the log",
        "frontend: no answer within 60 s",
    ]
    # each tool ran at its own virtual instant and stamped the virtual wall clock
    results = {
        e.data["call_id"]: (e.time, e.data["result"]) for e in events(transcript, "tool_result")
    }
    assert results == {
        "f-pool exhausted": (5.0, "00:00:05 pool exhausted"),
        "f-load balancer drops": (12.0, "00:00:12 load balancer drops"),
        "f-bundle is fine": (40.0, "00:00:40 bundle is fine"),
    }
    assert [(e.time, e.data["agent"]) for e in events(transcript, "model_response")] == [
        (5.0, "database"),
        (7.0, "database"),
        (12.0, "network"),
        (15.0, "network"),
        (40.0, "frontend"),
    ]
    assert transcript.events[-1].time <= 60.0


# -- checks across the suite -------------------------------------------------------------------


def test_no_program_instruments_its_agents_yet_loops_and_agents_are_traced() -> None:
    calls = {p.name for p in PROGRAMS.glob("*.py") if "instrument" in p.read_text(encoding="utf-8")}
    assert calls == set()
    _, transcript = once(research_desk.main, desk_fakes)
    loops = {e.data["loop"] for e in events(transcript, "loop_iteration_start", "loop_stop")}
    assert loops == {"coordinator"}
    asking = {e.data["agent"] for e in events(transcript, "model_request")}
    assert asking == {"coordinator", "web", "archive", "quotes"}
    assert {e.data["agent"] for e in events(transcript, "tool_call")} == {"coordinator"}


# Runs trade_book once on a small script and sets ``digest`` to its transcript's sha256:
# in a fresh process after the imports above it, and here, where loopsim came first.
DIGEST = """
import hashlib
import loopsim
from af_programs import models, trade_book

async def main():
    return await trade_book.main("Book 40 orders of 5 ACME.")

booking = {"name": "book_orders", "call_id": "b1", "arguments": {"symbol": "ACME", "quantity": 5, "count": 40}}
script = [loopsim.Message("assistant", [loopsim.FunctionCallContent(**booking)]), "Booked 40 orders."]
with models.fakes(trader=loopsim.ScriptedChatClient(script)):
    result, transcript = loopsim.record(main, scenario="trade_book")
assert result["booked"] == 40, result
digest = hashlib.sha256(transcript.model_dump_json().encode()).hexdigest()
"""


def test_a_program_importing_agent_framework_before_loopsim_gives_the_same_transcript() -> None:
    program = (
        textwrap.dedent(
            """
        import sys
        import agent_framework  # the app's imports come first, as in production
        assert "loopsim" not in sys.modules
        # trade_book binds `from uuid import uuid4` (and imports agent_framework) before its
        # models module imports loopsim
        from af_programs import trade_book
        """
        )
        + DIGEST
        + "print(digest)\n"
    )
    tests = str(Path(__file__).parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(  # noqa: S603 - our own program, run by this interpreter
        [sys.executable, "-W", "ignore", "-c", program],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=tests,
    )
    assert done.returncode == 0, done.stderr
    here: dict[str, Any] = {}
    exec(DIGEST, here)  # noqa: S102 - our own code, the same the subprocess ran
    assert done.stdout.strip() == here["digest"]
