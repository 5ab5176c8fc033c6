"""WORDING: every sentence the built-in engine shows a model, in loopsim's own words.

Tool descriptions, default instructions, nudges, the texts of tool errors and replies,
and of the errors a run raises where upstream's raises its own, live here and nowhere
else, keyed by a stable dotted name. The engine modules read them
from this table (through :func:`say`), so comparing a run on the built-in engine with the
same run on ``agent_framework`` can set the prose aside and compare everything around it:
which tool answered with an error, the ids, counts, statuses and names inside a reply,
the order of messages.

Templates use ``{name}`` fields. Two kinds of fields exist:

* fields that :func:`say` fills (``{task_id}``, ``{status}``, ...);
* user-facing placeholders that the owning class substitutes with ``str.replace``
  (``{background_agents}``, ``{completion_marker}``, ``{incomplete_tasks}``, ...); these
  are part of public constants and keep their braces until then.

A reply that reports an error starts with ``Error: `` as upstream's do: that prefix is
structure (the model and the comparison both read it), not prose.

Normalizing: :func:`match` finds the key and field values behind a text the engine
produced; :func:`normalize` replaces such texts by a ``<<key field=value ...>>`` token;
:func:`agrees` tells whether a text of the other engine carries the same facts (error or
not, the field values in the same order).

Example:
    >>> from loopsim._wording import say, match
    >>> text = say("background.start.ok", task_id=3, agent_name="writer")
    >>> match(text)
    ('background.start.ok', {'task_id': '3', 'agent_name': 'writer'})
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any

__all__ = ["WORDING", "agrees", "match", "normalize", "refused_arguments", "say"]

WORDING: dict[str, str] = {
    # -- the chat agent's tool loop ---------------------------------------------------------
    "agent.tool.unknown": 'Error: no tool called "{name}" is available.',
    # beside that result (test-facing): what the run offered instead
    "agent.tool.unknown_detail": "unknown tool '{name}'; tools offered this turn: {offered}",
    "agent.tool.failed": "Error: the tool raised an exception.",
    "agent.tool.bad_arguments": "Error: the arguments do not fit the tool.",
    "agent.tool.rejected": "Error: a human declined to run this tool call.",
    "agent.tool.limit_reached": (
        "No final answer: this request hit its limit on tool calls before one was written."
    ),
    # errors of a harness agent's run (it keeps its history per model call, so a service
    # that does not store the history cannot also keep a conversation of it)
    "agent.harness.joins_conversation": (
        "a harness agent cannot continue the service-side conversation {conversation_id}: "
        "it keeps its history itself, model call by model call, and the service does not "
        "store it (pass store=True, or start without that conversation)"
    ),
    "agent.harness.answer_names_conversation": (
        "the model's answer names a service-side conversation ({conversation_id}), but "
        "this harness agent keeps its history itself and the service does not store it"
    ),
    # -- AgentLoopMiddleware ----------------------------------------------------------------
    "loop.next_message": "Keep going with the task. If it is already complete, say so plainly.",
    "loop.progress": "Progress up to now:\n{entries}",
    "judge.instructions": (
        "You review another agent's work: you get the user's original request and the "
        "agent's most recent response. Decide whether the response fully deals with the "
        "request. Put true in 'answered' when it does and false when work is still missing, "
        "and give a short justification in 'reasoning'. If you are unable to reply with "
        "structured output, finish with a line that reads exactly 'VERDICT: DONE' when the "
        "request is fully dealt with, or 'VERDICT: MORE' when it is not.{{criteria}}"
    ),
    "judge.criteria_block": "\n\nThe response has to meet every one of these criteria:\n{bullets}",
    "judge.criteria_instruction": (
        "Your response has to meet every one of these criteria:\n{bullets}"
    ),
    "judge.request_intro": "Review the agent's work. Here is the user's original request:",
    "judge.response_intro": "Here is the agent's most recent response:",
    "judge.question": "Does the response fully deal with the original request?",
    "judge.feedback": (
        "A reviewer read your last response and found that it does not yet fully deal "
        "with the original request.\n\nWhat the reviewer said: {feedback}\n\n"
        "Revise it and carry on until the original request is fully dealt with."
    ),
    # -- LoopAgent evaluators (.NET style) ---------------------------------------------------
    "evaluator.completion_marker.feedback": (
        "This is not finished yet: carry on with the task, and only when all of it is "
        "complete end your reply with '{completion_marker}'."
    ),
    "evaluator.judge.instructions": (
        "You review another agent's work: below are the original request and the agent's "
        "most recent response. Judge whether the response fully addresses the request. "
        "Set `answered` to true if it does and to false if it does not; when false, state "
        "in `gapAnalysis` what is still missing or wrong. If you are unable to reply with "
        "structured output, reply with 'VERDICT: DONE' when the request is fully addressed "
        "or 'VERDICT: MORE' when it is not.{criteria}"
    ),
    "evaluator.judge.feedback": (
        "Your last response does not yet fully address the original request. "
        "What is still missing or incomplete: {gap_analysis} "
        "Keep working until the original request is completely addressed."
    ),
    "evaluator.judge.header": (
        "# Does the response fully deal with the original request?\n\n## The original request:\n"
    ),
    "evaluator.judge.response_header": "\n\n## The agent's most recent response:\n",
    "evaluator.judge.criteria_header": "\n\nThe response has to meet every one of these criteria:",
    "evaluator.todo.feedback": (
        "Your todo list still has open items. Carry on until every one of them is done "
        "and marked as complete. Still open:\n{remaining_todos}"
    ),
    # -- harness: its own instructions (placed before the agent's, as upstream places its) --
    "harness.instructions": (
        "You work through tasks with the tools you are given.\n"
        "\n"
        "## How to work\n"
        "\n"
        "- Plan before you act, and split a large task into steps.\n"
        "- Use the tools to find things out, to act and to check what you did.\n"
        "- Say briefly what you are doing and why while you work.\n"
        "- Between tool calls, say what a result told you and what comes next.\n"
        "- After four tool calls in a row at most, stop and tell the user where you are.\n"
        "- When a tool fails or surprises you, change course instead of repeating the call.\n"
        "- At the end, sum up what you did and what you found, short and clear.\n"
    ),
    # -- background agents: instructions and context -----------------------------------------
    "background.instructions": (
        "## Background Agents\n\n"
        "Background agents can take on work for you and carry it out while you go on.\n\n"
        "- Use the background_agents_* tools to start tasks and to look at their results.\n"
        "- Starting a task does not block: the tasks you start run at the same time.\n"
        "- Important: wait until every task you started has finished before you give your "
        "final answer.\n"
        "- Important: when you have read a finished task's result, remove it with "
        "background_agents_clear_completed_task, unless you mean to send it follow-up work "
        "with background_agents_continue_task.\n\n"
        "{background_agents}"
    ),
    "background.agent_list": "Background agents you can use:",
    "background.status_heading": "### Background tasks right now",
    "background.running_feedback": (
        "You still have {incomplete_task_count} background task(s) running, and they must "
        "finish before your work is complete:\n"
        "{incomplete_tasks}\n\n"
        "Wait for these tasks to finish, fetch their results and work them into your answer. "
        "Stop only when no background task is running any more."
    ),
    "todo.remaining_feedback": (
        "{count} item(s) on your todo list are still open, and they must be done before "
        "you finish:\n{items}\n\n"
        "Work through them now, mark each one complete as you finish it, and stop only when "
        "every item is complete."
    ),
    # -- background agents: the six tools -----------------------------------------------------
    "background.tool.start": (
        "Start a task on a named background agent without waiting for it. "
        "agent_name: which agent does the work; input: the request passed to it; "
        "description: a short label to recognize the task later. Returns the task id."
    ),
    "background.tool.wait": (
        "Wait until the first of the given background tasks finishes, or until "
        "{timeout} seconds have passed. After a timeout the tasks are still "
        "running and you can call this tool again."
    ),
    "background.tool.results": (
        "Get the result of a finished task, its error, or its current status."
    ),
    "background.tool.list": (
        "List every background task with its id, status, agent and description."
    ),
    "background.tool.continue": (
        "Send follow-up input to a completed or failed task; it runs in the same "
        "child session, so the agent keeps its earlier context."
    ),
    "background.tool.clear": (
        "Remove a finished task and release its child session. Running tasks cannot be cleared."
    ),
    # -- background agents: tool replies ------------------------------------------------------
    "background.canceled": "The task was cancelled before it finished.",
    "background.released.start": "Error: this session is being released, so no new task can start.",
    "background.released.wait": (
        "Error: this session is being released, so there is nothing to wait for."
    ),
    "background.released.continue": (
        "Error: this session is being released, so no task can be continued."
    ),
    "background.released.clear": (
        "Error: this session is being released, so no task can be cleared."
    ),
    "background.released.track": (
        "the session's runtime is closed, so the background task cannot start."
    ),
    "background.start.unknown_agent": (
        "Error: there is no background agent named '{agent_name}'. These agents exist: {available}"
    ),
    "background.start.ok": "Started background task {task_id} on agent '{agent_name}'.",
    "background.wait.no_ids": "Error: give at least one task id to wait for.",
    "background.wait.not_running": (
        "Task {task_id} is not running any more; its status is {status}."
    ),
    "background.wait.none_running": "Error: none of these task ids belongs to a running task.",
    "background.wait.timeout": (
        "Waited {timeout} seconds and no background task finished. They keep running; "
        "call this tool again to wait longer."
    ),
    "background.wait.finished": "Task {task_id} ended with status: {status}.",
    "background.wait.finished_unknown": "Task {task_id} ended with status: Unknown.",
    "background.task.not_found": "Error: there is no task with id {task_id}.",
    "background.results.no_output": "(the task produced no text)",
    "background.results.failed": "The task failed: {error}",
    "background.results.unknown_error": "no error text was recorded",
    "background.results.lost": "The task was lost: its run is no longer reachable.",
    "background.results.running": "Task {task_id} has not finished yet.",
    "background.results.other": "Task {task_id} is in status {status}.",
    "background.list.empty": "There are no background tasks.",
    "background.list.heading": "Background tasks:",
    "background.continue.lost": (
        "Error: task {task_id} was lost together with its session, so it cannot be "
        "continued; start a new task instead."
    ),
    "background.continue.running": (
        "Error: task {task_id} has not finished yet; wait for it before you continue it."
    ),
    "background.continue.agent_gone": "Error: the agent '{agent_name}' does not exist any more.",
    "background.continue.session_gone": (
        "Error: the session of task {task_id} does not exist any more."
    ),
    "background.continue.ok": "Task {task_id} is running again with the new input.",
    "background.clear.running": (
        "Error: task {task_id} has not finished yet; wait for it before you clear it."
    ),
    "background.clear.ok": "Removed task {task_id}.",
    # faults (loopsim.Fault): the texts of the simulated service errors; a child's failure
    # text reaches its parent model through the task's error
    "fault.rate_limit": "{model} refused the request: too many requests (HTTP 429).",
    "fault.server_error": "{model} failed with an internal error (HTTP {status}).",
    "fault.timeout": "{model} timed out: no answer within {after} seconds.",
    "fault.stream_cut": "The connection to {model} dropped after {after} streamed updates.",
    "fault.content_filter": "{model} refused the prompt: its content filter was triggered.",
    "fault.fail": "{model} failed.",
    "fault.tool_error": "The tool {tool} failed.",
    "fault.af_prompt_failed": "{client} could not complete the prompt: {error}",
}

_FIELD = re.compile(r"\{(\w+)\}")


def say(key: str, **fields: Any) -> str:
    """The text for ``key`` with its ``{name}`` fields filled from ``fields``.

    Fields not given keep their braces (those are placeholders substituted later by the
    class that owns them); ``{{`` and ``}}`` are left as they are.

    Raises:
        KeyError: no such key.
    """
    template = WORDING[key]
    if not fields:
        return template
    parts = _parts(template)
    if len(parts) == 1:
        return template
    out = list(parts)
    for i in range(1, len(parts), 2):  # the odd items are the field names
        name = parts[i]
        out[i] = str(fields[name]) if name in fields else f"{{{name}}}"
    return "".join(out)


@lru_cache(maxsize=4096)
def _parts(template: str) -> tuple[str, ...]:
    """``template`` split at its ``{name}`` fields: literal, name, literal, ... (the
    matches ``_FIELD.sub`` would replace, found once per template text)."""
    return tuple(_FIELD.split(template))


@cache
def _pattern(template: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    names: list[str] = []
    parts: list[str] = []
    pos = 0
    for found in _FIELD.finditer(template):
        parts.append(re.escape(template[pos : found.start()]))
        name = found.group(1)
        if name in names:
            parts.append(f"(?P={name})")
        else:
            names.append(name)
            parts.append(f"(?P<{name}>.*?)")
        pos = found.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("".join(parts), re.DOTALL), tuple(names)


def _keys_by_specificity() -> list[str]:
    # Longer literal text first, so "Task {task_id} ended with status: Unknown." wins over
    # the template with a {status} field that would also match it.
    return sorted(WORDING, key=lambda k: -len(_FIELD.sub("", WORDING[k])))


def match(text: str) -> tuple[str, dict[str, str]] | None:
    """The key and field values of the WORDING template ``text`` was made from, or None."""
    for key in _keys_by_specificity():
        pattern, _ = _pattern(WORDING[key])
        found = pattern.fullmatch(text)
        if found is not None:
            return key, found.groupdict()
    return None


def normalize(text: str) -> str:
    """``text`` with a WORDING text replaced by ``<<key field=value ...>>``.

    A whole text made from a template becomes one token; otherwise every fixed WORDING
    text (one without fields) found inside it is replaced, longest first (instructions
    joined from several parts).
    """
    found = match(text)
    if found is not None:
        key, fields = found
        inner = " ".join([key, *(f"{name}={value}" for name, value in fields.items())])
        return f"<<{inner}>>"
    for key in _keys_by_specificity():
        template = WORDING[key]
        if _FIELD.search(template) is None and template in text:
            text = text.replace(template, f"<<{key}>>")
    return text


#: How :func:`refused_arguments` names the whole arguments (not one of them) as refused.
_WHOLE = "(arguments)"
_REFUSED = re.compile(r"invalid arguments for tool '(?P<tool>[^']*)': (?P<problems>.+)", re.DOTALL)
#: One refused argument in the list: its dotted path, then pydantic's message.
_PROBLEM = re.compile(r"(?:^|; )(?P<path>[\w.\-\[\]()]+): ")


def refused_arguments(tool: str, problems: Sequence[tuple[str, str]]) -> str:
    """The built-in engine's error text for arguments that do not fit ``tool``.

    ``problems`` are (dotted path of the argument, or "" for the arguments as a whole;
    pydantic's message) pairs. The text stands beside the error result the model reads
    (upstream keeps its exception's text there), so it is test-facing, not model-facing;
    :func:`agrees` compares it with upstream's by its facts: the tool, then each argument
    named, in order.

    Example:
        >>> refused_arguments("fetch", [("url", "Field required")])
        "invalid arguments for tool 'fetch': url: Field required"
    """
    listed = "; ".join(f"{path or _WHOLE}: {message}" for path, message in problems)
    return f"invalid arguments for tool '{tool}': {listed}"


def _refused_facts(text: str) -> list[str] | None:
    """The tool and argument paths a :func:`refused_arguments` text names, or None."""
    found = _REFUSED.fullmatch(text)
    if found is None:
        return None
    paths = [m.group("path") for m in _PROBLEM.finditer(found.group("problems"))]
    return [found.group("tool"), *(p for p in paths if p != _WHOLE)]


#: Fields of a template that carry loopsim's own detail, which upstream's text for the
#: same fact does not give (so :func:`agrees` does not look for them there).
DETAIL_FIELDS: dict[str, frozenset[str]] = {"agent.tool.unknown_detail": frozenset({"offered"})}


def agrees(ours: str, theirs: str) -> bool:
    """True when ``theirs`` (the other engine's text) carries the facts of ``ours``.

    ``ours`` must be a built-in engine text: either made from a WORDING template — then
    ``theirs`` must agree on being an error (the ``Error:`` prefix) and contain every field
    value (of a template in :data:`DETAIL_FIELDS`, the fields that are not loopsim's own
    detail), each not as part of a longer word, in the same order — or made by
    :func:`refused_arguments` — then ``theirs`` must name the same tool and each refused
    argument, in the same order — or neither, and then equal to ``theirs``.
    """
    found = match(ours)
    if found is None:
        facts = _refused_facts(ours)
        if facts is None:
            return ours == theirs
        values: Sequence[str] = facts
    else:
        key, fields = found
        detail = DETAIL_FIELDS.get(key, frozenset())
        values = [value for name, value in fields.items() if name not in detail]
    if ours.startswith("Error:") != theirs.startswith("Error:"):
        return False
    pos = 0
    for value in values:
        at = _whole(value).search(theirs, pos)
        if at is None:
            return False
        pos = at.end()
    return True


@lru_cache(maxsize=1024)
def _whole(value: str) -> re.Pattern[str]:
    """``value`` not as part of a longer word (a tool ``c`` is not in ``Function``)."""
    return re.compile(rf"(?<!\w){re.escape(value)}(?!\w)" if value else "")
