"""The agent: one model, or one external agent, answering structured input with tools.

``run``/``stream`` take a string or a complete conversation and are fresh; ``prompt`` takes
one user turn and keeps a persistent history. All three are plain methods: they validate and
copy their input when called (invalid input raises ``InvalidMessageError`` there, before any
hook, provider or process) and return the coroutine or the async iterator. A run never raises
for a provider, hook, tool or limit failure: it returns (or streams) a failed ``RunResult``.
Cancellation propagates after cleanup. The engine itself lives in ``_runner``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import attrs

from ._controls import RunControls
from ._pool import ProviderPool
from ._runner import ModelTarget, Run, RunInput
from .before_run import BeforeRunContext, NamedHook
from .capabilities import Capabilities
from .errors import InvalidMessageError, ToolError
from .messages import LLMMessage, TextBlock
from .providers import ProviderRequest, ProviderSettings
from .results import AgentStream, RunResult, RunStatus, StreamEvent
from .retry import RetryPolicy
from .tools import Tool, as_tool
from .validation import load_messages, load_user_content

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentStream",
    "BeforeRunContext",
    "RunResult",
    "RunStatus",
    "StreamEvent",
]

T = TypeVar("T")


def _positive_int(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be an int >= 1, got {value!r}")


def _optional_positive_int(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        _positive_int(_inst, attribute, value)


def _check_provider(_inst: object, _attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) and not (hasattr(value, "complete") or hasattr(value, "stream")):
        raise TypeError(
            "provider must be a registered provider name or an object with complete()/stream(), "
            f"got {type(value).__name__}"
        )


def _check_backend(_inst: object, _attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not (
        isinstance(value, Mapping) and isinstance(value.get("kind"), str)
    ):
        raise ValueError('backend must be a mapping with a string "kind", e.g. {"kind": "process"}')


def _temperature(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e9:
        raise ValueError(f"{attribute.name} must be a finite number >= 0 or None, got {value!r}")


def _stop_tuple(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"stop must be a list of strings or None, got {type(value).__name__}")
    stop = tuple(value)
    if not all(isinstance(item, str) and item for item in stop):
        raise TypeError("stop must be a list of non-empty strings")
    return stop


def _tool_tuple(
    tools: Iterable[Tool | Callable[..., Any]],
) -> tuple[Tool | Callable[..., Any], ...]:
    # typed (unlike a bare ``tuple``), so ``AgentConfig(tools=[my_tool])`` type-checks
    return tuple(tools)


@attrs.frozen
class AgentConfig:
    """Everything that defines an agent. ``api_key`` never appears in the repr.

    ``provider`` is a registered provider name or a provider object (anything with
    ``complete``/``stream``); ``backend={"kind": ..., **options}`` selects an external agent
    instead. ``history`` seeds ``prompt`` and is validated when the ``Agent`` is built.
    ``max_retries``/``retry_delay``/``retry_backoff`` left None use the ladder's defaults.
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


class Agent:
    """An agent built from an ``AgentConfig``; see the module docstring for the contract.

    The provider (or backend) object is created on first use and closed by ``aclose`` or
    ``async with``; a provider object passed in the config belongs to the caller and is not
    closed. ``plugins`` is the ``PluginHost`` to find providers, backends and ``before_run``
    hooks in (the process-wide one by default). ``provider_pool`` (used by ``OpenMultiAgent``)
    lends the agent a shared provider instead of creating one; the pool owns and closes it.
    """

    def __init__(
        self, config: AgentConfig, *, plugins: Any = None, provider_pool: ProviderPool | None = None
    ) -> None:
        self.config = config
        self._plugins = plugins
        self._pool = provider_pool
        self._history: tuple[LLMMessage, ...] = load_messages(config.history, allow_empty=True)
        tools: dict[str, Tool] = {}
        for item in config.tools:
            built = as_tool(item)
            if built.name in tools:
                raise ToolError(f"two tools are named {built.name!r}", tool=built.name)
            tools[built.name] = built
        self._tools = tools
        self._retry = self._retry_policy()
        self._provider: Any = None
        self._owns_provider = False
        self._target: ModelTarget | None = None
        self._backend: Any = None
        self._lock: asyncio.Lock | None = None  # made in the loop that first prompts
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    # -- the public API --------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.config.name

    def run(self, input: str | Sequence[Any]) -> Awaitable[RunResult]:
        """A fresh run on a string (one user text message) or a complete conversation."""
        checked = self._check_input(input)
        return self._new_run(RunControls(retry=self._retry), False).result(checked)

    def stream(self, input: str | Sequence[Any]) -> AgentStream:
        """Like ``run``, as events; ``async with agent.stream(x) as events`` closes it for sure."""
        checked = self._check_input(input)
        return AgentStream(self._new_run(RunControls(retry=self._retry), True).events(checked))

    def prompt(self, input: str | Sequence[Any]) -> Awaitable[RunResult]:
        """Send the history plus one user turn (a str or a list of content blocks); on success
        append that turn (as given, not as a hook rewrote it) and the reply to the history."""
        turn = self._check_turn(input)
        return self._prompt(turn)

    def run_sync(self, input: str | Sequence[Any]) -> RunResult:
        """``run`` for scripts: runs its own event loop, then closes what the agent created
        (that loop's connections cannot outlive it)."""
        _no_running_loop("run_sync")
        return asyncio.run(self._closing(self.run(input)))

    def prompt_sync(self, input: str | Sequence[Any]) -> RunResult:
        """``prompt`` for scripts; like ``run_sync``, the history is kept between calls."""
        _no_running_loop("prompt_sync")
        return asyncio.run(self._closing(self.prompt(input)))

    def get_history(self) -> list[LLMMessage]:
        """A new list of the persistent history (immutable messages)."""
        return list(self._history)

    def provider(self) -> Any:
        """The provider object, created on first use from the registered factory."""
        return self._model_target().provider

    def build_request(self, input: str | Sequence[Any]) -> ProviderRequest:
        """The request the first model call of ``run(input)`` would send (hooks not applied)."""
        checked = self._check_input(input)
        messages = (_user_text(checked),) if isinstance(checked, str) else checked
        target = self._model_target()
        return target.request(messages)

    async def aclose(self) -> None:
        """Close the provider and backend this agent created; the next use creates new ones."""
        provider, self._provider, self._target = self._provider, None, None
        backend, self._backend = self._backend, None
        try:
            if provider is not None and self._owns_provider:
                close = getattr(provider, "aclose", None)
                if close is not None:
                    await close()
        finally:
            if backend is not None:
                await backend.aclose()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"Agent(name={self.config.name!r})"

    # -- the orchestrator's entry points (documented in _controls) ----------------------------

    def _check_input(self, input: Any) -> RunInput:
        """Validate and copy run/stream input: a str stays a str, else a message tuple."""
        if isinstance(input, str):
            return input
        if self.config.backend is not None:
            raise InvalidMessageError("", self._string_only())
        return load_messages(input)

    def _start(
        self,
        checked: RunInput,
        *,
        controls: RunControls,
        mode: Literal["run", "stream"] = "run",
    ) -> Any:
        """Start nothing yet: return the run's coroutine or its ``AgentStream``."""
        if mode == "stream":
            return AgentStream(self._new_run(controls, True).events(checked))
        if mode != "run":
            raise ValueError(f'mode must be "run" or "stream", got {mode!r}')
        return self._new_run(controls, False).result(checked)

    def _retry_policy(self, base: RetryPolicy | None = None) -> RetryPolicy:
        """``base`` (the defaults if None) overridden by this agent's config settings."""
        return (base or RetryPolicy()).override(
            max_retries=self.config.max_retries,
            delay=self.config.retry_delay,
            backoff=self.config.retry_backoff,
        )

    # -- input -------------------------------------------------------------------------------

    def _check_turn(self, input: Any) -> LLMMessage:
        if isinstance(input, str):
            return _user_text(input)
        if self.config.backend is not None:
            raise InvalidMessageError("", self._string_only())
        if not isinstance(input, list | tuple):
            raise InvalidMessageError(
                "messages[0].content",
                f"must be a str or a list of content blocks, got {_type_name(input)}",
            )
        return load_user_content(input)

    def _string_only(self) -> str:
        kind = self.config.backend["kind"] if self.config.backend else "?"
        return (
            f'the external agent backend "{kind}" accepts string prompts only; '
            "pass a str (structured messages and content blocks would be lost)"
        )

    # -- runs --------------------------------------------------------------------------------

    def _new_run(self, controls: RunControls, streaming: bool, session: bool = False) -> Run:
        return Run(
            self.config,
            self._hooks,
            self._model_target,
            self._backend_object,
            controls,
            streaming,
            session,
        )

    async def _prompt(self, turn: LLMMessage) -> RunResult:
        # Prompts of one agent take turns: each one sees the turns the previous ones appended.
        async with self._prompt_lock():
            return await self._prompt_turn(turn)

    def _prompt_lock(self) -> asyncio.Lock:
        """The lock of the running event loop (``prompt_sync`` runs each call in a new loop)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    async def _prompt_turn(self, turn: LLMMessage) -> RunResult:
        controls = RunControls(retry=self._retry)
        if self.config.backend is not None:  # history does not seed an external agent
            result = await self._new_run(controls, False, True).result((turn,))
            if result.success:
                self._history = (*self._history, turn, *result.messages)
            return result
        window = (*self._history, turn)
        if self.config.max_history_tokens is not None:
            from .history import trim_history

            window = trim_history(window, self.config.max_history_tokens)
        result = await self._new_run(controls, False, True).result(window)
        if result.success:
            self._history = (*window, *result.messages)
        return result

    async def _closing(self, awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        finally:
            await self.aclose()

    # -- what a run needs, created on first use ---------------------------------------------

    def _host(self) -> Any:
        if self._plugins is None:
            from .plugins import PluginHost

            self._plugins = PluginHost.default()
        return self._plugins

    def _hooks(self) -> list[NamedHook]:
        """Package ``oma_before_run`` hooks in pluggy's order, then the config's own."""
        hooks: list[NamedHook] = [
            (f"oma_before_run of plugin {call.plugin!r}", call)
            for call in self._host().before_run_hooks()
        ]
        if self.config.before_run is not None:
            hooks.append(("AgentConfig.before_run", self.config.before_run))
        return hooks

    def _model_target(self) -> ModelTarget:
        target = self._target
        if target is None:
            target = self._target = self._resolve_target()
        return target

    def _resolve_target(self) -> ModelTarget:
        config = self.config
        if isinstance(config.provider, str):
            spec = self._host().provider_spec(config.provider)
            settings = ProviderSettings(config.base_url, config.api_key, config.provider_options)
            pooled = None if self._pool is None else self._pool.get(spec, settings)
            provider = spec.factory(settings) if pooled is None else pooled
            capabilities = spec.capabilities
            display_name = spec.display_name
            model = config.model or spec.default_model
            self._owns_provider = pooled is None
        else:
            provider = config.provider
            declared = getattr(provider, "capabilities", None)
            capabilities = declared if isinstance(declared, Capabilities) else _EVERYTHING
            display_name = str(
                getattr(provider, "display_name", None)
                or getattr(provider, "name", None)
                or type(provider).__name__
            )
            model = config.model or getattr(provider, "default_model", None)
            self._owns_provider = False
        self._provider = provider
        return ModelTarget(
            provider=provider,
            capabilities=capabilities,
            display_name=display_name,
            model=model,
            system_prompt=config.system_prompt,
            tools=self._tools,
            tool_defs=tuple(t.definition() for t in self._tools.values()),
            max_turns=config.max_turns,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            stop=config.stop,
        )

    def _backend_object(self) -> Any:
        if self._backend is None:
            assert self.config.backend is not None
            options = dict(self.config.backend)
            spec = self._host().backend_spec(options.pop("kind"))
            self._backend = spec.factory(options)
        return self._backend


_EVERYTHING = Capabilities.everything()


def _user_text(text: str) -> LLMMessage:
    return LLMMessage("user", (TextBlock(text),))


def _type_name(value: object) -> str:
    """A type as the validation messages name it: ``None`` for None."""
    return "None" if value is None else type(value).__name__


def _no_running_loop(name: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"{name}() cannot be called from a running event loop; await the async method instead"
    )
