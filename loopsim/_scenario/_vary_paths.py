"""``vary:`` paths at load time: parse them, walk them, apply a draw, validate each choice."""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from .._errors import ScenarioError
from ._limits import DEFAULT_LIMITS, ScenarioLimits, listing
from ._references import check_references
from ._schema import Scenario, VarySpec, describe
from ._source import LoadedScenario, Located, combine, format_location
from ._validation import from_validation

__all__ = ["FIXED_KEYS", "DrawValidator", "apply_draw", "check_vary", "concrete", "parse_path"]

#: Top-level keys a ``vary:`` path may not point into.
FIXED_KEYS = ("version", "vary", "vary_settings", "always", "expect", "ties")
_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")
_INDEX = re.compile(r"\[(\d+)\]")

Part = str | int


def parse_path(text: str) -> tuple[Part, ...] | None:
    """``agents.w.script[2].delay`` → ``("agents", "w", "script", 2, "delay")`` (None: bad)."""
    parts: list[Part] = []
    for segment in text.split("."):
        match = _SEGMENT.fullmatch(segment.strip())
        if match is None:
            return None
        parts.append(match.group(1))
        parts.extend(int(i) for i in _INDEX.findall(match.group(2)))
    return tuple(parts)


def _key(node: Mapping[Any, Any], part: Part) -> Any:
    """The key of ``node`` that ``part`` names (YAML keys may be whole numbers)."""
    if part in node:
        return part
    if isinstance(part, str) and part.isdigit() and int(part) in node:
        return int(part)
    return part


def apply_draw(
    document: Any, parts: Sequence[Part], value: Any, copied: set[int] | None = None
) -> None:
    """Set ``value`` at ``parts`` in ``document`` (the path was checked at load time).

    With ``copied`` (the ids of containers that are the draw's own, ``document``
    among them), every mapping and list on the path that is not yet the draw's own is
    replaced by a shallow copy first, so the document it was copied from is unchanged.
    """
    node = document
    for part in parts[:-1]:
        key = _key(node, part) if isinstance(node, dict) else part
        child = node[key]
        if copied is not None and id(child) not in copied:
            child = copy.copy(child)
            node[key] = child
            copied.add(id(child))
        node = child
    last = parts[-1]
    if isinstance(node, dict):
        node[_key(node, last)] = value
    else:
        node[last] = value


def _walk(
    document: Any, parts: Sequence[Part], text: str, loc: tuple[Part, ...], where: Located
) -> None:
    """Raise a located error unless ``parts`` leads to a place in ``document``."""
    if parts[0] in FIXED_KEYS:
        raise where.error(
            loc,
            f"cannot vary {describe(parts[0])}: `vary:` draws values of the scenario itself",
            expected="a path into agents, parent, loop, steps, seed, backend or streaming",
        )
    node = document
    walked = ""
    for position, part in enumerate(parts):
        last = position == len(parts) - 1
        shown = walked or "the document"
        if isinstance(part, int):
            if not isinstance(node, list):
                raise where.error(
                    loc,
                    f"unknown path {text}: {shown} is {describe(node)}, not a list, so [{part}] "
                    "does not exist",
                    expected="[index] only after a list",
                )
            if part >= len(node):
                raise where.error(
                    loc,
                    f"unknown path {text}: {shown} has {len(node)} item(s), so [{part}] does "
                    "not exist",
                    expected=f"an index below {len(node)}",
                )
            node = node[part]
            walked += f"[{part}]"
            continue
        if not isinstance(node, dict):
            more = ""
            if isinstance(node, str):
                more = (
                    f" (write the short form {describe(node)} out as a mapping to vary inside it)"
                )
            raise where.error(
                loc,
                f"unknown path {text}: {shown} is {describe(node)}, not a mapping{more}",
                expected="a path through mappings and lists of the document",
            )
        key = _key(node, part)
        if key not in node:
            if last:
                return  # a key the file leaves at its default: the schema check decides
            keys = [str(k) for k in node]
            hint = difflib.get_close_matches(str(part), keys, n=1)
            guess = f"; did you mean {describe(hint[0])}?" if hint else ""
            raise where.error(
                loc,
                f"unknown path {text}: {shown} has no key {describe(part)}{guess} "
                f"(keys there: {listing(keys) or 'none'})",
                expected="a path through keys the document has",
            )
        node = node[key]
        walked += ("." if walked else "") + str(part)


def _largest_draw(spec: VarySpec) -> int:
    """How many values the largest draw of ``spec`` holds (nested lists multiply)."""
    if spec.fault_set is not None:
        return spec.fault_set.max_faults
    if spec.list_of is None:
        return 1
    return max(spec.largest, 1) * _largest_draw(spec.list_of)


def _bounds(spec: VarySpec, loc: tuple[Part, ...], where: Located, limits: ScenarioLimits) -> None:
    """Refuse a ``vary:`` entry whose draws are too large to build or check."""
    inner: VarySpec | None = spec
    while inner is not None:
        if inner.list_of is not None and max(inner.largest, inner.min_size) > limits.max_vary_size:
            raise where.error(
                loc,
                f"a list_of of up to {inner.largest:,} items: at most "
                f"{limits.max_vary_size:,} are drawn",
                expected=f"max_size <= {limits.max_vary_size:,} "
                "(ScenarioLimits.max_vary_size sets the bound)",
            )
        inner = inner.list_of
    items = _largest_draw(spec)
    if items > limits.max_vary_items:
        raise where.error(
            loc,
            f"the largest draw holds {items:,} values (nested list_of sizes multiply): at most "
            f"{limits.max_vary_items:,}",
            expected="smaller max_size values (ScenarioLimits.max_vary_items sets the bound)",
        )


def _size(document: Any) -> int:
    """How many values (scalars, lists, mappings) ``document`` holds."""
    count = 0
    pending = [document]
    while pending:
        value = pending.pop()
        count += 1
        if isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return count


def _samples(spec: VarySpec) -> list[Any]:
    """Values that stand for everything ``spec`` can draw: the ends and every choice."""
    if spec.between is not None:
        return list(dict.fromkeys(spec.between))
    if spec.one_of is not None:
        return list(spec.one_of)
    if spec.fault_set is not None:
        faults = spec.fault_set
        each = [faults.fault(k, c) for k in faults.kinds for c in dict.fromkeys(faults.calls)]
        out_faults: list[Any] = [] if faults.min_faults else [[]]
        out_faults.extend([f] * max(faults.min_faults, 1) for f in each)
        out_faults.append([each[0]] * faults.max_faults)
        return out_faults
    assert spec.list_of is not None  # noqa: S101 - one of four kinds
    items = _samples(spec.list_of)
    out: list[Any] = [] if spec.min_size else [[]]
    out.extend([item] * max(spec.min_size, 1) for item in items)
    out.append([items[0]] * spec.largest)
    return out


def concrete(
    loaded: LoadedScenario, document: Any, limits: ScenarioLimits = DEFAULT_LIMITS
) -> LoadedScenario:
    """Validate a drawn ``document`` like a loaded file (the ``vary:`` checks excepted)."""
    try:
        scenario = Scenario.model_validate(document)
    except ValidationError as exc:
        raise from_validation(exc, loaded.where, document, limits) from None
    check_references(scenario, loaded.where, limits, loaded.folders)
    return LoadedScenario(scenario, loaded.where, loaded.source, document, loaded.folders)


class DrawValidator:
    """Validate drawn documents of one ``vary:`` file, building only what a draw changes.

    A draw changes the top-level sections its paths lead into; the others are the file
    as written, already validated (and frozen). So each changed section is validated on
    its own, as the field of :class:`Scenario` it is (type and constraints), and put
    into a copy of the file's scenario; the references are checked on the whole, as
    :func:`concrete` does. Whenever that could differ from validating the whole
    document, it does that instead: a section with a validator of the scenario's own
    (or a model validator, an alias), and any draw that does not validate (so its error
    is the whole document's, located as usual).
    """

    def __init__(self, loaded: LoadedScenario, paths: Sequence[Sequence[Part]]) -> None:
        self.loaded = loaded
        # `ties:` too: a draw's document leaves it out (draws draw every tie)
        touched = list(dict.fromkeys([*(str(parts[0]) for parts in paths if parts), "ties"]))
        self.sections = _sections(touched)

    def __call__(self, document: Any, limits: ScenarioLimits = DEFAULT_LIMITS) -> LoadedScenario:
        loaded = self.loaded
        if self.sections is None:
            return concrete(loaded, document, limits)
        update: dict[str, Any] = {}
        try:
            for key, adapter in self.sections.items():
                field = Scenario.model_fields[key]
                if key in document:
                    update[key] = adapter.validate_python(document[key])
                elif field.is_required():
                    return concrete(loaded, document, limits)  # raises: it is missing
                else:  # as the whole document's validation would: the field's default
                    make = field.default_factory
                    update[key] = field.default if make is None else make()  # type: ignore[call-arg]
        except ValidationError:
            return concrete(loaded, document, limits)  # raises, located in the document
        scenario = loaded.scenario.model_copy(update=update)
        # the keys given, as validation records them
        given = {key for key in document if key in Scenario.model_fields}
        object.__setattr__(scenario, "__pydantic_fields_set__", given)
        check_references(scenario, loaded.where, limits, loaded.folders)
        return LoadedScenario(scenario, loaded.where, loaded.source, document, loaded.folders)


def _sections(keys: Sequence[str]) -> dict[str, TypeAdapter[Any]] | None:
    """A validator per top-level key, as the scenario's field; None: validate it all."""
    decorators = Scenario.__pydantic_decorators__
    if decorators.model_validators or Scenario.model_config.get("extra") != "forbid":
        return None
    own = {name for d in decorators.field_validators.values() for name in d.info.fields}
    adapters: dict[str, TypeAdapter[Any]] = {}
    for key in keys:
        field = Scenario.model_fields.get(key)
        if field is None or key in own or field.alias is not None or field.annotation is None:
            return None
        if getattr(field, "default_factory_takes_data", False):
            return None  # its default is made from the other fields
        kind: Any = field.annotation
        if field.metadata:
            params: tuple[Any, ...] = (kind, *field.metadata)
            kind = Annotated[params]  # the field's type with its constraints
        adapters[key] = TypeAdapter(kind)
    return adapters


def check_vary(
    scenario: Scenario, where: Located, document: Any, limits: ScenarioLimits = DEFAULT_LIMITS
) -> None:
    """Check every ``vary:`` path and that each choice and range end gives a valid file.

    Each entry is checked on its own (its first problem is reported). Each check validates
    a whole copy of the document, so at most ``limits.max_vary_values`` values (copies
    times the document's size) are validated per file.
    """
    problems: list[ScenarioError] = []
    budget = [limits.max_vary_values]
    base = LoadedScenario(scenario, where, "", document)
    for text, spec in scenario.vary.items():
        problem = _entry_problem(text, spec, base, limits, budget)
        if problem is not None:
            problems.append(problem)
    if problems:
        raise combine(problems, limits)


def _entry_problem(
    text: str, spec: VarySpec, base: LoadedScenario, limits: ScenarioLimits, budget: list[int]
) -> ScenarioError | None:
    try:
        _check_entry(text, spec, base, limits, budget)
    except ScenarioError as exc:
        return exc
    return None


def _check_entry(
    text: str, spec: VarySpec, base: LoadedScenario, limits: ScenarioLimits, budget: list[int]
) -> None:
    where, document = base.where, base.data
    loc: tuple[Part, ...] = ("vary", text)
    parts = parse_path(text)
    if parts is None:
        raise where.error(
            loc,
            f"bad path {describe(text)}",
            expected="dotted keys, [n] for list items, e.g. agents.worker.policy.echo.delay",
        )
    _walk(document, parts, text, loc, where)
    _bounds(spec, loc, where, limits)
    samples = _samples(spec)
    size = _size(document) + _largest_draw(spec)
    cost = len(samples) * size
    if cost > budget[0]:
        raise where.error(
            loc,
            f"checking its {len(samples):,} draws validates {len(samples):,} copies of a "
            f"{size:,}-value document ({cost:,} values); {budget[0]:,} of the file's "
            f"{limits.max_vary_values:,} are left",
            expected="fewer one_of choices, or a smaller document "
            "(ScenarioLimits.max_vary_values sets the bound)",
        )
    budget[0] -= cost
    for value in samples:
        drawn = copy.deepcopy(document)
        apply_draw(drawn, parts, copy.deepcopy(value))
        try:
            concrete(base, drawn, limits)
        except ScenarioError as exc:
            if exc.location == format_location(parts) and "unknown key" in exc.problem:
                raise where.error(
                    loc, f"unknown path {text}: {exc.problem}", expected=exc.expected
                ) from None
            inner = f"{exc.location}: " if exc.location else ""
            raise where.error(
                loc,
                f"the draw {text} = {describe(value)} gives an invalid scenario: "
                f"{inner}{exc.problem}",
                expected=exc.expected,
            ) from None
