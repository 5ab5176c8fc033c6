"""Function tools: a callable the model may call by name, with validated arguments."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from types import CoroutineType, FunctionType
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .._wording import refused_arguments

__all__ = ["ApprovalMode", "FunctionTool", "ToolArgumentError", "tool"]

ApprovalMode = Literal["never_require", "always_require"]
F = TypeVar("F", bound=Callable[..., Any])


class ToolArgumentError(ValueError, TypeError):
    """The model called a tool with arguments that do not fit its signature.

    A ``TypeError`` as upstream's argument-validation error is, and a ``ValueError`` as
    loopsim's was before.
    """


class FunctionTool:
    """A tool the model can call: name, description, JSON schema and the function.

    Arguments from the model are validated against the function's signature (pydantic),
    so ``task_id: int`` rejects ``"three"`` with a readable error the model sees; or
    against ``input_model`` when given (argument names that are no Python identifier).
    An argument the function does not take is ignored, as upstream ignores it.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        approval_mode: ApprovalMode = "never_require",
        input_model: type[BaseModel] | None = None,
    ) -> None:
        if not callable(fn):
            msg = f"tool fn must be callable, got {type(fn).__name__}"
            raise TypeError(msg)
        if approval_mode not in ("never_require", "always_require"):
            msg = (
                f"approval_mode must be 'never_require' or 'always_require', got {approval_mode!r}"
            )
            raise ValueError(msg)
        self.fn = fn
        self.name = name or fn.__name__
        if not self.name:
            msg = "tool name must not be empty"
            raise ValueError(msg)
        self.description = description if description is not None else inspect.getdoc(fn) or ""
        self.approval_mode: ApprovalMode = approval_mode
        # input_model (as upstream's): the arguments' model, instead of one built from fn's
        # signature; its fields' values are passed to fn by field name.
        self._model = input_model if input_model is not None else _arguments_model(fn, self.name)

    def __repr__(self) -> str:
        return f"FunctionTool(name={self.name!r}, approval_mode={self.approval_mode!r})"

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments."""
        return self._model.model_json_schema()

    async def invoke(
        self,
        arguments: Mapping[str, Any] | BaseModel | None = None,
        *,
        skip_parsing: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Validate ``arguments`` and call the function (awaiting it if async).

        Upstream's call shapes work: ``invoke(arguments={...})``, ``invoke(a=1, b=2)``
        (keywords are the arguments when ``arguments`` is not given; any other keyword is a
        ``TypeError``) and ``skip_parsing=True``. The function's own value is
        returned either way: loopsim never wraps a result in contents (upstream does
        unless ``skip_parsing``), so ``skip_parsing`` changes nothing here.

        Raises:
            ToolArgumentError: the arguments do not fit the tool's signature.
        """
        del skip_parsing  # the value is never parsed into contents (see above)
        if kwargs:
            # upstream: keywords are the arguments only when ``arguments`` is not given
            declared = self._model.model_fields if arguments is None else {}
            unexpected = ", ".join(sorted(k for k in kwargs if k not in declared))
            if unexpected:
                msg = f"unexpected keyword argument(s) for tool {self.name!r}: {unexpected}"
                raise TypeError(msg)
            arguments = kwargs
        if isinstance(arguments, BaseModel):
            arguments = arguments.model_dump()
        try:
            # model_validate's own call, without its wrapper (no options are passed)
            parsed = self._model.__pydantic_validator__.validate_python(arguments or {})
        except ValidationError as exc:
            problems = [(".".join(str(p) for p in err["loc"]), err["msg"]) for err in exc.errors()]
            raise ToolArgumentError(refused_arguments(self.name, problems)) from None
        values = parsed.__dict__
        kwargs = {key: values[key] for key in type(parsed).__pydantic_fields__}
        result = self.fn(**kwargs)
        # the common results first: a coroutine (async fn) or a str, neither of which
        # needs inspect's general test
        if type(result) is CoroutineType or (
            type(result) is not str and inspect.isawaitable(result)
        ):
            result = await result
        return result


# (name, fields) -> the arguments model: tools made again and again from functions of one
# signature (a provider's tools are closures made for every run) share one model; building
# a pydantic model costs far more than the rest of a short simulation.
_Field = tuple[str, Any, type, Any]  # parameter name, annotation, type(default), default
_MODELS: dict[tuple[str, tuple[_Field, ...]], type[BaseModel]] = {}
_MAX_MODELS = 1024


#: The models of loopsim's own tool functions, by code object and defaults: the provider
#: makes its six tools anew for every run, as closures of one definition each, and reading
#: their signature and evaluating their annotations cost more than the rest of building
#: them. Their annotations name loopsim's own types, which no module rebinds, so a
#: definition's model is the same every time; other functions are read every time.
_OWN: dict[tuple[Any, ...], type[BaseModel]] = {}


def _arguments_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    own = _own_key(fn, name)
    if own is not None:
        known = _OWN.get(own)
        if known is None:
            if len(_OWN) >= _MAX_MODELS:
                _OWN.clear()
            known = _OWN[own] = _read_arguments_model(fn, name)
        return known
    return _read_arguments_model(fn, name)


def _own_key(fn: Callable[..., Any], name: str) -> tuple[Any, ...] | None:
    if type(fn) is not FunctionType or not fn.__module__.startswith("loopsim."):
        return None
    if "__wrapped__" in fn.__dict__ or "__signature__" in fn.__dict__:
        return None  # its signature is not its code's
    keywords = fn.__kwdefaults__
    key = (
        name,
        fn.__code__,
        fn.__defaults__,
        None if keywords is None else tuple(keywords.items()),
    )
    try:
        hash(key)
    except TypeError:  # an unhashable default (a list): read every time
        return None
    return key


def _read_arguments_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    signature = inspect.signature(fn)
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to Any
        hints = {}
    fields: list[_Field] = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        default = ... if param.default is param.empty else param.default
        # type(default) in the key: 1, 1.0 and True are equal, and so hash alike
        fields.append((param.name, hints.get(param.name, Any), type(default), default))
    key = (name, tuple(fields))
    try:
        cached = _MODELS.get(key)
    except TypeError:  # an unhashable annotation or default (a list): not shared
        return _build_model(name, fields)
    if cached is None:
        cached = _build_model(name, fields)
        if len(_MODELS) >= _MAX_MODELS:
            _MODELS.clear()
        _MODELS[key] = cached
    return cached


def _build_model(name: str, fields: list[_Field]) -> type[BaseModel]:
    definitions: dict[str, Any] = {field: (hint, default) for field, hint, _, default in fields}
    model: type[BaseModel] = create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="ignore"), **definitions
    )
    return model


@overload
def tool(
    fn: F,
    *,
    name: str | None = None,
    description: str | None = None,
    approval_mode: ApprovalMode = "never_require",
) -> FunctionTool: ...
@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    approval_mode: ApprovalMode = "never_require",
) -> Callable[[F], FunctionTool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    approval_mode: ApprovalMode = "never_require",
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a :class:`FunctionTool` from a sync or async callable; usable as a decorator.

    Example:
        >>> import loopsim
        >>> @loopsim.tool(approval_mode="always_require")
        ... def delete_file(path: str) -> str:
        ...     return f"deleted {path}"
        >>> delete_file.name, delete_file.approval_mode
        ('delete_file', 'always_require')
    """

    def make(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description, approval_mode=approval_mode)

    return make if fn is None else make(fn)


AsyncToolFn = Callable[..., Awaitable[Any]]
