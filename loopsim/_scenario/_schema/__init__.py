"""Stage 1 of the scenario pipeline: the file format (version 1) as pydantic models.

Every model forbids unknown keys. Short forms (``- restart``, ``- completion_marker``,
``policy: echo``) are expanded by ``mode="before"`` validators into one tagged shape, so
pydantic's error locations follow the keys the user wrote — the idea of pydantic_evals'
evaluator specs (``- Name``, ``- Name: arg``, ``- Name: {k: v}``), written for our needs.

This stage imports nothing from the later ones (load → build → run → check → result).
"""

from ._agents import (
    AgentSpec,
    CoordinatorPolicy,
    EchoPolicy,
    FunctionInvocationSpec,
    ParentSpec,
    PolicySpec,
    ToolCallSpec,
    ToolSpec,
    TurnSpec,
    UsageSpec,
)
from ._base import (
    BACKENDS,
    BUILTIN_EVALUATORS,
    BUILTIN_POLICIES,
    ENGINES,
    SCHEMA_VERSION,
    STOP_REASONS,
    TASK_STATUSES,
    Backend,
    Engine,
    describe,
)
from ._expect import (
    EVENT_FIELDS,
    EventCount,
    ExpectSpec,
    RangeSpec,
    ResponseExpect,
    StepExpect,
    ToolErrorSpec,
)
from ._faults import FaultSpec, ModelFaultSpec, ToolFaultSpec, WhenSpec
from ._loop import (
    AIJudgeSpec,
    BackgroundTaskCompletionSpec,
    CompletionMarkerSpec,
    CustomEvaluatorSpec,
    DelegateSpec,
    EvaluatorSpec,
    LoopSpec,
)
from ._scenario import Scenario
from ._steps import AdvanceStep, ApprovalStep, ReleaseStep, RestartStep, RunStep, StepSpec
from ._vary import VarySettings, VarySpec

__all__ = [
    "BACKENDS",
    "BUILTIN_EVALUATORS",
    "BUILTIN_POLICIES",
    "ENGINES",
    "EVENT_FIELDS",
    "SCHEMA_VERSION",
    "STOP_REASONS",
    "TASK_STATUSES",
    "AIJudgeSpec",
    "AdvanceStep",
    "AgentSpec",
    "ApprovalStep",
    "Backend",
    "BackgroundTaskCompletionSpec",
    "CompletionMarkerSpec",
    "CoordinatorPolicy",
    "CustomEvaluatorSpec",
    "DelegateSpec",
    "EchoPolicy",
    "Engine",
    "EvaluatorSpec",
    "EventCount",
    "ExpectSpec",
    "FaultSpec",
    "FunctionInvocationSpec",
    "LoopSpec",
    "ModelFaultSpec",
    "ParentSpec",
    "PolicySpec",
    "RangeSpec",
    "ReleaseStep",
    "ResponseExpect",
    "RestartStep",
    "RunStep",
    "Scenario",
    "StepExpect",
    "StepSpec",
    "ToolCallSpec",
    "ToolErrorSpec",
    "ToolFaultSpec",
    "ToolSpec",
    "TurnSpec",
    "UsageSpec",
    "VarySettings",
    "VarySpec",
    "WhenSpec",
    "describe",
]
