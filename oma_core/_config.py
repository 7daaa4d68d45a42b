"""``AgentConfig``: everything that defines an agent, checked when it is built; and
``BeforeRunContext``, what its ``before_run`` hook receives.

They live apart from the agent so that the agent, the runner and the orchestrator can all
import them without importing each other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal

import attrs

from ._results import OutputT
from .retry import DEFAULT_POLICY

if TYPE_CHECKING:
    from .messages import LLMMessage
    from .retry import RetryPolicy
    from .tools import Tool

__all__ = ["AgentConfig", "BeforeRunContext"]


def _positive_int(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be an int >= 1, got {value!r}")


def _optional_positive_int(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        _positive_int(_inst, attribute, value)


def _temperature(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{attribute.name} must be a finite number >= 0 or None, got {value!r}")


THINKING_LEVELS = ("off", "low", "medium", "high")


def _thinking(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None or value in THINKING_LEVELS:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(
            f'{attribute.name} must be "off", "low", "medium", "high", a token budget '
            f"(an int > 0) or None, got {value!r}"
        )


#: What ``AgentConfig.cache`` may be besides None: the provider places its markers itself.
CACHE_MODES = ("auto",)


def _cache(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not (isinstance(value, str) and value in CACHE_MODES):
        raise ValueError(f'{attribute.name} must be "auto" or None, got {value!r}')


def _stop_tuple(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"stop must be a list of strings or None, got {type(value).__name__}")
    stop = tuple(value)
    if not all(isinstance(item, str) and item for item in stop):
        raise TypeError("stop must be a list of non-empty strings")
    return stop


def _check_provider(_inst: object, _attribute: attrs.Attribute[Any], value: Any) -> None:
    """A registered name, or an object that implements the provider interface.

    An object is checked here, when the config is built, not duck-typed at call time: it needs
    ``complete`` or ``stream``, and a ``capabilities`` attribute, if it has one, must be a
    ``Capabilities``. (An object the caller built and passed in is the caller's own: without
    ``capabilities`` it is taken to carry every block. A registered provider always declares
    them in its ``ProviderSpec``.)
    """
    if isinstance(value, str):
        return
    from .capabilities import Capabilities

    name = type(value).__name__
    if not (callable(getattr(value, "complete", None)) or callable(getattr(value, "stream", None))):
        raise TypeError(
            "provider must be a registered provider name or an object with complete() or "
            f"stream(), got {name}"
        )
    declared = getattr(value, "capabilities", None)
    if declared is not None and not isinstance(declared, Capabilities):
        raise TypeError(
            f"provider object {name} has capabilities that are not an oma_core.Capabilities "
            f"(got {type(declared).__name__})"
        )


def _model_names(value: Any) -> tuple[str, ...]:
    """``fallback_models``: a list of ``provider:model`` names (or provider names); whether
    each names a registered provider is checked when the ``Agent`` is built."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(
            f"fallback_models must be a list of provider:model names, got {type(value).__name__}"
        )
    names = tuple(value)
    for index, name in enumerate(names):
        if not isinstance(name, str) or not name.partition(":")[0].strip():
            raise ValueError(
                f"fallback_models[{index}] must be a provider:model name or a provider name, "
                f"got {name!r}"
            )
    return names


def _check_backend(_inst: object, _attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not (
        isinstance(value, Mapping) and isinstance(value.get("kind"), str)
    ):
        raise ValueError('backend must be a mapping with a string "kind", e.g. {"kind": "process"}')


def _check_output_type(_inst: object, _attribute: attrs.Attribute[Any], value: Any) -> None:
    """An output type must become a JSON schema: refused now (``OutputTypeError``), naming
    the type and why, never when a run ends."""
    if value is not None:
        from ._output import output_spec

        output_spec(value)


def _check_output_mode(_inst: object, _attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and value not in ("native", "tool", "prompted"):
        raise ValueError(f'output_mode must be "native", "tool", "prompted" or None, got {value!r}')


def _count(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} must be an int >= 0, got {value!r}")


def _tool_tuple(
    tools: Iterable[Tool | Callable[..., Any]],
) -> tuple[Tool | Callable[..., Any], ...]:
    # typed (unlike a bare ``tuple``), so ``AgentConfig(tools=[my_tool])`` type-checks
    return tuple(tools)


@attrs.frozen
class AgentConfig(Generic[OutputT]):
    """Everything that defines an agent. ``api_key`` never appears in the repr.

    ``provider`` is a registered provider name or a provider object (with ``complete`` or
    ``stream``, and ``capabilities``); ``model="provider:model"`` names both;
    ``backend={"kind": ..., **options}`` selects an external agent instead. ``history``
    seeds ``prompt`` and is validated when the ``Agent`` is built. ``temperature``,
    ``max_tokens`` and ``stop`` are portable: every provider maps them to its wire.
    ``max_retries``/``retry_delay``/``retry_backoff`` left None use the ladder's defaults.
    ``output_type`` (a pydantic model, attrs class, dataclass, TypedDict, ``list[...]`` or
    scalar type, or a JSON Schema dict) makes every run return a validated
    ``RunResult.structured``; a reply that does not validate gets ``output_retries``
    corrective turns (see docs/structured-output.md). The config is generic in the output
    type: ``AgentConfig(..., output_type=Invoice)`` is an ``AgentConfig[Invoice]``, and its
    ``Agent``'s results are ``RunResult[Invoice]``; without one (or with a JSON Schema dict) it
    is ``AgentConfig[Any]``.

    Mistakes in it raise at once, never as an empty result: an unknown provider or backend, or
    a ``provider_options`` name the provider's spec does not accept, when the ``Agent`` is
    built; a provider that needs a key and has none (not ``api_key``, nor its environment
    variables) when a run starts, before any request.
    """

    name: str
    model: str | None = None
    provider: Any = attrs.field(default="echo", validator=_check_provider)
    base_url: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    system_prompt: str | None = None
    description: str | None = None
    history: Sequence[Any] = ()
    before_run: Callable[[BeforeRunContext], Any] | None = None
    tools: tuple[Tool | Callable[..., Any], ...] = attrs.field(default=(), converter=_tool_tuple)
    max_turns: int = attrs.field(default=10, validator=_positive_int)
    max_history_tokens: int | None = attrs.field(default=None, validator=_optional_positive_int)
    max_retries: int | None = None
    retry_delay: float | None = None
    retry_backoff: float | None = None
    backend: Mapping[str, Any] | None = attrs.field(default=None, validator=_check_backend)
    provider_options: Mapping[str, Any] = attrs.field(factory=dict)
    temperature: float | None = attrs.field(default=None, validator=_temperature)
    max_tokens: int | None = attrs.field(default=None, validator=_optional_positive_int)
    stop: tuple[str, ...] | None = attrs.field(default=None, converter=_stop_tuple)
    output_type: type[OutputT] | Mapping[str, Any] | None = attrs.field(
        default=None, validator=_check_output_type
    )
    output_retries: int = attrs.field(default=1, validator=_count)
    #: How hard the model thinks: "off", "low", "medium", "high" or a token budget (an int);
    #: None leaves it to the provider's default. Each provider maps it to its wire, and
    #: refuses it locally, naming itself, where the model cannot think (docs/reasoning.md).
    thinking: str | int | None = attrs.field(default=None, validator=_thinking)
    #: Prompt caching: "auto" has the provider place the service's cache markers itself (the
    #: system prompt, the tools, and a marker moving with the latest user turn); None (the
    #: default) places only the ``CachePoint`` blocks the messages hold. A hint: a provider
    #: that declares no caching ignores it (docs/reasoning-and-caching.md).
    cache: Literal["auto"] | None = attrs.field(default=None, validator=_cache)
    #: How the provider is held to ``output_type``: "native", "tool" or "prompted"; None (the
    #: default) takes the best the provider declares (native, then tool, then prompted). Set
    #: it for a model that lacks its provider's best mode (an older Claude: "tool").
    output_mode: Literal["native", "tool", "prompted"] | None = attrs.field(
        default=None, validator=_check_output_mode
    )
    #: ``provider:model`` names (or provider names, for their default model) tried in order
    #: when the model fails with a retryable error after its retries (never after an error
    #: the request caused); each is checked against the input before anything is sent to it.
    fallback_models: tuple[str, ...] = attrs.field(default=(), converter=_model_names)

    def retry_policy(self, base: RetryPolicy | None = None) -> RetryPolicy:
        """``base`` (the ladder's defaults if None) overridden by this config's settings."""
        base = base or DEFAULT_POLICY
        if self.max_retries is None and self.retry_delay is None and self.retry_backoff is None:
            return base
        return base.override(
            max_retries=self.max_retries, delay=self.retry_delay, backoff=self.retry_backoff
        )

    @property
    def provider_name(self) -> str:
        """The provider's (or backend's) name, as spans, costs and logs call it."""
        if self.backend is not None:
            return str(self.backend.get("kind", "backend"))
        if isinstance(self.provider, str):
            return self.provider
        return str(getattr(self.provider, "name", None) or type(self.provider).__name__)


@attrs.frozen
class BeforeRunContext:
    """What a ``before_run`` hook sees: the input (a tuple of immutable messages) and the text
    of its latest user message (``prompt``, text blocks joined with no separator; empty for an
    image-only turn). ``agent`` is the agent's ``AgentConfig``."""

    messages: tuple[LLMMessage, ...]
    prompt: str
    agent: AgentConfig
