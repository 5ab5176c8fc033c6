"""LoopEvaluation, LoopContext and the built-in evaluators, each on its own."""

from __future__ import annotations

import json
from typing import Any

import pytest

import loopsim
from loopsim import (
    AgentResponse,
    AgentSession,
    AIJudgeLoopEvaluator,
    AIJudgeLoopEvaluatorOptions,
    ChatRequest,
    CompletionMarkerLoopEvaluator,
    CompletionMarkerLoopEvaluatorOptions,
    DataContent,
    DelegateLoopEvaluator,
    JudgeVerdict,
    LoopContext,
    LoopEvaluation,
    Message,
    ScriptedChatClient,
    TextContent,
    TodoCompletionLoopEvaluator,
    TodoCompletionLoopEvaluatorOptions,
    TodoProvider,
)


def context(
    text: str = "response",
    *,
    agent: Any = None,
    session: Any = None,
    initial: list[Message] | None = None,
) -> LoopContext:
    agent = agent if agent is not None else loopsim.Agent(ScriptedChatClient([]), name="a")
    return LoopContext(
        agent,
        session if session is not None else AgentSession(),
        initial if initial is not None else [Message.user("the request")],
        AgentResponse(Message.assistant(text)),
    )


def evaluate(evaluator: Any, ctx: LoopContext, backend: str = "asyncio") -> LoopEvaluation:
    return loopsim.simulate(lambda: evaluator.evaluate(ctx), backend=backend)


# -- LoopEvaluation --------------------------------------------------------------------


def test_stop_is_one_shared_feedback_less_instance() -> None:
    stop = LoopEvaluation.stop()
    assert (stop.should_reinvoke, stop.feedback, stop.messages) == (False, None, None)
    assert LoopEvaluation.stop() is stop


def test_continue_without_feedback() -> None:
    evaluation = LoopEvaluation.continue_with_feedback()
    assert (evaluation.should_reinvoke, evaluation.feedback, evaluation.messages) == (
        True,
        None,
        None,
    )


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"], ids=["empty", "spaces", "tab-newline"])
def test_blank_feedback_becomes_none(blank: str) -> None:
    evaluation = LoopEvaluation.continue_with_feedback(blank)
    assert evaluation.should_reinvoke
    assert evaluation.feedback is None


def test_feedback_is_kept_verbatim() -> None:
    assert LoopEvaluation.continue_with_feedback("  fix it  ").feedback == "  fix it  "


def test_continue_with_messages_materialises_them() -> None:
    messages = [Message.user("a")]
    evaluation = LoopEvaluation.continue_with_messages(iter(messages))
    messages.append(Message.user("late"))
    assert evaluation.should_reinvoke
    assert evaluation.feedback is None
    assert evaluation.messages == (Message.user("a"),)
    assert LoopEvaluation.continue_with_messages([]).messages == ()


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (None, "must not be None"),
        ("text", "iterable of Message"),
        ([Message.user("a"), "b"], r"messages\[1\] must be a Message"),
    ],
    ids=["none", "str", "non-message-item"],
)
def test_continue_with_messages_rejects_non_messages(value: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        LoopEvaluation.continue_with_messages(value)


def test_evaluation_has_no_public_constructor() -> None:
    with pytest.raises(TypeError, match="no public constructor"):
        LoopEvaluation(object(), should_reinvoke=True, feedback=None, messages=None)


# -- LoopContext -----------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["agent", "session", "initial_messages", "last_response"])
def test_context_rejects_none(missing: str) -> None:
    args: dict[str, Any] = {
        "agent": object(),
        "session": object(),
        "initial_messages": [],
        "last_response": AgentResponse(),
    }
    args[missing] = None
    with pytest.raises(TypeError, match=f"{missing} must not be None"):
        LoopContext(**args)


def test_new_context_holds_what_it_was_given() -> None:
    agent, session, initial, last = object(), object(), [Message.user("x")], AgentResponse()
    ctx = LoopContext(agent, session, initial, last)
    assert ctx.agent is agent
    assert ctx.session is session
    assert ctx.initial_messages is initial
    assert ctx.last_response is last
    assert ctx.run_options is None
    assert ctx.additional_properties == {}
    assert ctx.iteration == 0
    assert list(ctx.feedback) == []
    options = {"k": 1}
    assert LoopContext(agent, session, initial, last, options).run_options is options


def test_context_state_is_read_only_for_evaluators() -> None:
    ctx = context()
    for name in ("iteration", "session", "last_response", "feedback"):
        with pytest.raises(AttributeError):
            setattr(ctx, name, None)


def test_a_public_context_can_be_fed_to_an_evaluator(backend: str) -> None:
    evaluator = CompletionMarkerLoopEvaluator("DONE")
    assert not evaluate(evaluator, context("DONE"), backend).should_reinvoke


# -- DelegateLoopEvaluator -------------------------------------------------------------


def test_delegate_rejects_none() -> None:
    with pytest.raises(TypeError, match="fn must not be None"):
        DelegateLoopEvaluator(None)  # type: ignore[arg-type]


def test_delegate_rejects_a_none_context() -> None:
    evaluator = DelegateLoopEvaluator(lambda ctx: LoopEvaluation.stop())
    with pytest.raises(TypeError, match="context must not be None"):
        evaluate(evaluator, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_delegate_returns_what_the_function_returns(backend: str, is_async: bool) -> None:
    result = LoopEvaluation.continue_with_feedback("go on")
    seen: list[LoopContext] = []

    def sync_fn(ctx: LoopContext) -> LoopEvaluation:
        seen.append(ctx)
        return result

    async def async_fn(ctx: LoopContext) -> LoopEvaluation:
        return sync_fn(ctx)

    ctx = context()
    evaluator = DelegateLoopEvaluator(async_fn if is_async else sync_fn)
    assert evaluate(evaluator, ctx, backend) is result
    assert seen == [ctx]
    assert seen[0] is ctx


def test_delegate_rejects_a_non_evaluation_result() -> None:
    def bad(ctx: LoopContext) -> bool:
        return True

    with pytest.raises(TypeError, match="bad returned bool, expected a LoopEvaluation"):
        evaluate(DelegateLoopEvaluator(bad), context())  # type: ignore[arg-type]


# -- CompletionMarkerLoopEvaluator -----------------------------------------------------


@pytest.mark.parametrize("marker", [None, "", "   "], ids=["none", "empty", "blank"])
def test_marker_must_not_be_blank(marker: Any) -> None:
    with pytest.raises(ValueError, match="completion_marker"):
        CompletionMarkerLoopEvaluator(marker)


def test_marker_anywhere_stops(backend: str) -> None:
    evaluator = CompletionMarkerLoopEvaluator("DONE")
    assert evaluate(evaluator, context("all DONE here"), backend) is LoopEvaluation.stop()


def test_marker_match_is_case_sensitive() -> None:
    assert evaluate(CompletionMarkerLoopEvaluator("DONE"), context("done")).should_reinvoke


def test_missing_marker_continues_with_the_default_feedback() -> None:
    evaluation = evaluate(CompletionMarkerLoopEvaluator("DONE"), context("still going"))
    assert evaluation.should_reinvoke
    assert evaluation.feedback is not None
    assert "'DONE'" in evaluation.feedback
    assert "{" not in evaluation.feedback
    assert "still going" not in evaluation.feedback
    assert "{last_response}" not in CompletionMarkerLoopEvaluator.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE
    assert "{completion_marker}" in CompletionMarkerLoopEvaluator.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE


def test_custom_marker_template_is_substituted() -> None:
    evaluator = CompletionMarkerLoopEvaluator(
        "FINISHED",
        CompletionMarkerLoopEvaluatorOptions(
            feedback_message_template="Say {completion_marker} when done."
        ),
    )
    assert evaluate(evaluator, context("x")).feedback == "Say FINISHED when done."


def test_last_response_placeholder_echoes_the_response() -> None:
    evaluator = CompletionMarkerLoopEvaluator(
        "DONE",
        CompletionMarkerLoopEvaluatorOptions(
            feedback_message_template="You said: {last_response}. Finish with {completion_marker}."
        ),
    )
    feedback = evaluate(evaluator, context("half a {plan}")).feedback
    assert feedback == "You said: half a {plan}. Finish with DONE."


def test_marker_evaluator_rejects_a_none_context() -> None:
    with pytest.raises(TypeError, match="context must not be None"):
        evaluate(CompletionMarkerLoopEvaluator("DONE"), None)  # type: ignore[arg-type]


# -- AIJudgeLoopEvaluator --------------------------------------------------------------


def judge(
    reply: str, options: AIJudgeLoopEvaluatorOptions | None = None
) -> tuple[AIJudgeLoopEvaluator, ScriptedChatClient]:
    client = ScriptedChatClient([reply])
    return AIJudgeLoopEvaluator(client, options), client


DEFAULT_FEEDBACK = AIJudgeLoopEvaluator.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE


@pytest.mark.parametrize(
    ("reply", "expected_feedback"),
    [
        pytest.param('{"answered": true}', None, id="json-answered"),
        pytest.param("VERDICT: DONE", None, id="done-marker"),
        pytest.param("Looks good.\nverdict: done", None, id="done-marker-any-case"),
        pytest.param(
            '{"answered": false, "gapAnalysis": "tests are missing"}',
            DEFAULT_FEEDBACK.replace("{gap_analysis}", "tests are missing"),
            id="json-gap",
        ),
        pytest.param(
            '{"answered": false, "gap_analysis": "snake case"}',
            DEFAULT_FEEDBACK.replace("{gap_analysis}", "snake case"),
            id="json-gap-snake-case",
        ),
        pytest.param(
            '{"ANSWERED": false, "GapAnalysis": "any case"}',
            DEFAULT_FEEDBACK.replace("{gap_analysis}", "any case"),
            id="json-keys-any-case",
        ),
        pytest.param(
            '{"gapAnalysis": "no verdict field"}',
            DEFAULT_FEEDBACK.replace("{gap_analysis}", "no verdict field"),
            id="json-missing-answered",
        ),
        pytest.param(
            '{"answered": false, "gapAnalysis": "  "}',
            DEFAULT_FEEDBACK.replace("{gap_analysis}", "<unknown>"),
            id="json-blank-gap",
        ),
        pytest.param(
            "VERDICT: MORE", DEFAULT_FEEDBACK.replace("{gap_analysis}", "<unknown>"), id="more"
        ),
        pytest.param(
            "VERDICT: DONE ... VERDICT: MORE",
            DEFAULT_FEEDBACK.replace("{gap_analysis}", "<unknown>"),
            id="more-wins",
        ),
        pytest.param(
            "UNANSWERED", DEFAULT_FEEDBACK.replace("{gap_analysis}", "<unknown>"), id="unanswered"
        ),
        pytest.param(
            "NOT ANSWERED",
            DEFAULT_FEEDBACK.replace("{gap_analysis}", "<unknown>"),
            id="not-answered",
        ),
        pytest.param(
            "The request is not yet answered.",
            DEFAULT_FEEDBACK.replace("{gap_analysis}", "<unknown>"),
            id="prose",
        ),
        pytest.param(
            '{"answered": false}\nVERDICT: MORE',
            DEFAULT_FEEDBACK.replace("{gap_analysis}", "<unknown>"),
            id="json-then-marker",
        ),
        pytest.param(
            "null", DEFAULT_FEEDBACK.replace("{gap_analysis}", "<unknown>"), id="json-null"
        ),
    ],
)
def test_judge_verdicts(reply: str, expected_feedback: str | None, backend: str) -> None:
    evaluator, _ = judge(reply)
    evaluation = evaluate(evaluator, context(), backend)
    assert evaluation.should_reinvoke is (expected_feedback is not None)
    assert evaluation.feedback == expected_feedback


def test_judge_request_shape() -> None:
    image = DataContent(data=b"\x89PNG", media_type="image/png")
    initial = [Message("user", ["describe this", image]), Message.user("briefly")]
    evaluator, client = judge('{"answered": true}')
    evaluate(evaluator, context("a cat", initial=initial))
    (request,) = client.requests
    assert isinstance(request, ChatRequest)
    assert request.options.response_format is JudgeVerdict
    system, user = request.messages
    assert system.role == "system"
    assert system.text == AIJudgeLoopEvaluator.DEFAULT_INSTRUCTIONS.replace("{criteria}", "")
    assert user.role == "user"
    header, *middle, tail = user.contents
    assert isinstance(header, TextContent)
    assert header.text.startswith("# ")
    assert header.text.endswith("\n\n## The original request:\n")
    assert middle == [TextContent(text="describe this"), image, TextContent(text="briefly")]
    assert tail == TextContent(text="\n\n## The agent's most recent response:\na cat")


def test_default_instructions_name_the_fields_and_markers() -> None:
    text = AIJudgeLoopEvaluator.DEFAULT_INSTRUCTIONS
    for part in ("`answered`", "`gapAnalysis`", "VERDICT: DONE", "VERDICT: MORE"):
        assert part in text
    assert text.endswith("{criteria}")
    assert text.count("{criteria}") == 1
    template = AIJudgeLoopEvaluator.DEFAULT_FEEDBACK_MESSAGE_TEMPLATE
    assert ": {gap_analysis} " in template
    assert (
        AIJudgeLoopEvaluator.DONE_VERDICT_MARKER,
        AIJudgeLoopEvaluator.MORE_VERDICT_MARKER,
        AIJudgeLoopEvaluator.CRITERIA_PLACEHOLDER,
        AIJudgeLoopEvaluator.GAP_ANALYSIS_PLACEHOLDER,
    ) == ("VERDICT: DONE", "VERDICT: MORE", "{criteria}", "{gap_analysis}")


def test_custom_instructions_are_sent_verbatim() -> None:
    evaluator, client = judge(
        '{"answered": true}', AIJudgeLoopEvaluatorOptions(instructions="Be strict.")
    )
    evaluate(evaluator, context())
    assert client.requests[0].messages[0].text == "Be strict."


def test_empty_instructions_are_used_as_given() -> None:
    evaluator, _ = judge("VERDICT: DONE", AIJudgeLoopEvaluatorOptions(instructions=""))
    assert evaluator.instructions == ""


def test_custom_feedback_template() -> None:
    evaluator, _ = judge(
        '{"answered": false, "gapAnalysis": "add unit tests"}',
        AIJudgeLoopEvaluatorOptions(feedback_message_template="Please address: {gap_analysis}"),
    )
    assert evaluate(evaluator, context()).feedback == "Please address: add unit tests"


def test_blank_feedback_template_continues_without_feedback() -> None:
    evaluator, _ = judge(
        "VERDICT: MORE", AIJudgeLoopEvaluatorOptions(feedback_message_template="  ")
    )
    evaluation = evaluate(evaluator, context())
    assert (evaluation.should_reinvoke, evaluation.feedback) == (True, None)


def test_criteria_render_into_the_default_instructions() -> None:
    evaluator, _ = judge(
        "VERDICT: DONE", AIJudgeLoopEvaluatorOptions(criteria=["cites sources", " ", "is short"])
    )
    expected = AIJudgeLoopEvaluator.DEFAULT_INSTRUCTIONS.replace(
        "{criteria}",
        "\n\nThe response has to meet every one of these criteria:\n- cites sources\n- is short",
    )
    assert evaluator.instructions == expected
    assert "{criteria}" not in evaluator.instructions


@pytest.mark.parametrize("criteria", [None, [], ["", "  "]], ids=["none", "empty", "all-blank"])
def test_no_criteria_no_criteria_block(criteria: Any) -> None:
    evaluator, _ = judge("VERDICT: DONE", AIJudgeLoopEvaluatorOptions(criteria=criteria))
    assert "criteria" not in evaluator.instructions
    assert "{criteria}" not in evaluator.instructions


def test_custom_instructions_with_and_without_the_criteria_placeholder() -> None:
    with_placeholder, _ = judge(
        "VERDICT: DONE",
        AIJudgeLoopEvaluatorOptions(instructions="Judge.{criteria}\nBe fair.", criteria=["x"]),
    )
    text = with_placeholder.instructions
    assert text.startswith("Judge.")
    assert text.endswith("\nBe fair.")
    assert "\n- x" in text
    without, _ = judge(
        "VERDICT: DONE", AIJudgeLoopEvaluatorOptions(instructions="Judge.", criteria=["x"])
    )
    assert without.instructions == "Judge."


def test_judge_rejects_none() -> None:
    with pytest.raises(TypeError, match="client must not be None"):
        AIJudgeLoopEvaluator(None)
    evaluator, _ = judge("VERDICT: DONE")
    with pytest.raises(TypeError, match="context must not be None"):
        evaluate(evaluator, None)  # type: ignore[arg-type]


def test_judge_failure_propagates(backend: str) -> None:
    boom = TimeoutError("judge timed out")
    evaluator = AIJudgeLoopEvaluator(ScriptedChatClient([boom]))
    with pytest.raises(TimeoutError) as caught:
        evaluate(evaluator, context(), backend)
    assert caught.value is boom


def test_judge_verdict_model_uses_upstream_json_names() -> None:
    verdict = JudgeVerdict(False, "gap")
    # .NET's gapAnalysis and the Python package's reasoning, side by side
    assert verdict.model_dump(by_alias=True) == {
        "answered": False,
        "gapAnalysis": "gap",
        "reasoning": "",
    }
    assert JudgeVerdict.model_validate_json('{"answered": true, "gapAnalysis": "g"}') == (
        JudgeVerdict(answered=True, gap_analysis="g")
    )
    assert JudgeVerdict.model_validate({"answered": True, "gap_analysis": "s"}).gap_analysis == "s"
    schema = JudgeVerdict.model_json_schema(by_alias=True)
    assert set(schema["properties"]) == {"answered", "gapAnalysis", "reasoning"}
    assert JudgeVerdict(True).gap_analysis == ""
    assert json.loads(verdict.model_dump_json(by_alias=True))["gapAnalysis"] == "gap"


# -- TodoCompletionLoopEvaluator -------------------------------------------------------


def todo_agent(*providers: Any) -> loopsim.Agent:
    return loopsim.Agent(ScriptedChatClient([]), name="planner", context_providers=providers)


@pytest.mark.parametrize(
    "modes",
    [[], [None], [""], ["  "], ["plan", " "]],
    ids=["empty", "none-name", "empty-name", "blank-name", "one-blank"],
)
def test_todo_modes_must_be_valid(modes: list[Any]) -> None:
    with pytest.raises(ValueError, match="modes"):
        TodoCompletionLoopEvaluator(TodoCompletionLoopEvaluatorOptions(modes=modes))


def test_todo_evaluator_constructs_with_valid_options() -> None:
    TodoCompletionLoopEvaluator()
    TodoCompletionLoopEvaluator(TodoCompletionLoopEvaluatorOptions(modes=None))
    evaluator = TodoCompletionLoopEvaluator(TodoCompletionLoopEvaluatorOptions(modes={"execute"}))
    assert evaluator.modes == frozenset({"execute"})


def test_todo_evaluator_needs_the_providers() -> None:
    with pytest.raises(RuntimeError, match="needs a TodoProvider"):
        evaluate(TodoCompletionLoopEvaluator(), context(agent=todo_agent()))
    with_modes = TodoCompletionLoopEvaluator(TodoCompletionLoopEvaluatorOptions(modes=["execute"]))
    with pytest.raises(RuntimeError, match="needs an AgentModeProvider"):
        evaluate(with_modes, context(agent=todo_agent(TodoProvider())))


def test_open_todos_keep_the_loop_going(backend: str) -> None:
    todos = TodoProvider()
    session = AgentSession()
    todos.add(session, "write tests", "cover the edge cases")
    done = todos.add(session, "read the spec")
    todos.add(session, "ship it", "  ")
    todos.complete(session, done.id)
    evaluation = evaluate(
        TodoCompletionLoopEvaluator(), context(agent=todo_agent(todos), session=session), backend
    )
    assert evaluation.should_reinvoke
    assert evaluation.feedback is not None
    assert evaluation.feedback.endswith(
        ":\n- 1: write tests \u2014 cover the edge cases\n- 3: ship it"
    )
    assert "read the spec" not in evaluation.feedback


def test_no_open_todos_stops() -> None:
    todos = TodoProvider()
    session = AgentSession()
    todos.complete(session, todos.add(session, "only").id)
    evaluation = evaluate(
        TodoCompletionLoopEvaluator(), context(agent=todo_agent(todos), session=session)
    )
    assert evaluation is LoopEvaluation.stop()


@pytest.mark.parametrize(
    ("mode", "open_items", "continues"),
    [
        ("execute", True, True),
        ("execute", False, False),
        ("plan", True, False),
    ],
    ids=["in-set-open", "in-set-none-open", "not-in-set"],
)
def test_todo_modes_gate_the_loop(mode: str, open_items: bool, continues: bool) -> None:
    todos = TodoProvider()
    modes = loopsim.AgentModeProvider()
    session = AgentSession()
    modes.set_mode(session, mode)
    if open_items:
        todos.add(session, "task")
    evaluator = TodoCompletionLoopEvaluator(TodoCompletionLoopEvaluatorOptions(modes=["execute"]))
    evaluation = evaluate(evaluator, context(agent=todo_agent(todos, modes), session=session))
    assert evaluation.should_reinvoke is continues


def test_todo_custom_template() -> None:
    todos = TodoProvider()
    session = AgentSession()
    todos.add(session, "task")
    evaluator = TodoCompletionLoopEvaluator(
        TodoCompletionLoopEvaluatorOptions(
            feedback_message_template="Keep going. Open:\n{remaining_todos}"
        )
    )
    evaluation = evaluate(evaluator, context(agent=todo_agent(todos), session=session))
    assert evaluation.feedback == "Keep going. Open:\n- 1: task"


def test_todo_evaluator_drives_a_loop_through_get_service(backend: str) -> None:
    """The evaluator finds the provider on the inner agent through a LoopAgent."""
    todos = TodoProvider()
    session = AgentSession()
    todos.add(session, "step one")
    todos.add(session, "step two")

    @loopsim.tool
    def finish(item_id: int) -> str:
        todos.complete(session, item_id)
        return "ok"

    call = loopsim.FunctionCallContent
    client = ScriptedChatClient(
        [
            Message("assistant", [call(call_id="a", name="finish", arguments={"item_id": 1})]),
            "one done",
            Message("assistant", [call(call_id="b", name="finish", arguments={"item_id": 2})]),
            "all done",
        ]
    )
    agent = loopsim.LoopAgent(
        loopsim.Agent(client, name="worker", tools=[finish], context_providers=[todos]),
        TodoCompletionLoopEvaluator(),
    )
    response = loopsim.simulate(lambda: agent.run("work", session=session), backend=backend)
    assert response.messages[-1].text == "all done"
    assert "- 2: step two" in client.requests[2].messages[-1].text
    assert todos.remaining(session) == []
