"""The whole scenario document."""

from __future__ import annotations

import unicodedata
from typing import Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from ._agents import AgentSpec, ParentSpec
from ._base import Backend, Count, Engine, Flag, Name, StrictModel, Text
from ._expect import ExpectSpec
from ._limits import LimitsSpec
from ._loop import LoopSpec
from ._steps import StepSpec
from ._vary import VarySettings, VarySpec


class Scenario(StrictModel):
    """A scenario file: agents, the parent and its loop, the host's steps, expectations.

    Example (YAML)::

        version: 1
        agents:
          writer:
            script:
              - reply: "draft"
              - reply: "final DONE"
        parent: {agent: writer}
        loop:
          evaluators: [completion_marker]
        steps:
          - run: "write it"
        expect:
          iterations: 2
          stop_reason: evaluators_stopped
    """

    version: Literal[1]
    name: Name | None = None
    description: Text | None = None
    seed: Count = 0
    backend: Backend = "asyncio"
    #: ``loopsim`` (built in) or ``agent_framework`` (the real package, asyncio only)
    engine: Engine = "loopsim"
    streaming: Flag = False
    #: make ``datetime.now()``/``time.time()`` follow the virtual clock in this run
    #: (freezegun; about 4 ms per run, so off unless the code under test reads them)
    wall_clock: Flag = False
    agents: dict[Name, AgentSpec] = Field(min_length=1)
    parent: ParentSpec
    loop: LoopSpec | None = None
    steps: list[StepSpec] = Field(min_length=1)
    expect: ExpectSpec = Field(default_factory=ExpectSpec)
    #: dotted path into this document → how that value varies (a property scenario)
    vary: dict[Name, VarySpec] = Field(default_factory=dict)
    #: expectations every draw (and the file as written) must meet
    always: ExpectSpec | None = None
    vary_settings: VarySettings | None = None
    #: for each same-instant tie of background tasks, in order: the index (in requested
    #: order) of the task the parent observes first; later ties follow the seeded rng.
    #: ``vary:`` draws ignore it: they draw every tie.
    ties: list[Count] = Field(default_factory=list)
    #: why ``--engine both`` is known to find the engines disagreeing on this scenario
    #: (listed in docs/engines.md, and fidelity work to do); a stale one is an error
    known_divergence: Text | None = None
    #: steps that changed nothing (a restart that found nothing running, ...) fail the
    #: scenario instead of being reported as warnings
    strict: Flag = False
    #: bounds of a run: virtual time, real time (the watchdog), one evaluator call
    limits: LimitsSpec = Field(default_factory=LimitsSpec)

    @field_validator("name")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        # The name labels reports and test ids (and file names, made safe separately).
        if value is not None and any(unicodedata.category(c) == "Cc" for c in value):
            bad = next(c for c in value if unicodedata.category(c) == "Cc")
            raise PydanticCustomError(
                "name_text",
                "expected a name of printable text on one line; it holds the control "
                "character U+{code}",
                {"code": f"{ord(bad):04X}"},
            )
        return value

    def agent(self, name: str) -> AgentSpec:
        """The agent spec named ``name`` (exact spelling)."""
        return self.agents[name]
