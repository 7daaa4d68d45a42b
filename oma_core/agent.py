"""The agent: one model, or one external agent, answering structured input with tools.

``run``/``stream`` take a string or a complete conversation and are fresh; ``prompt`` takes
one user turn and keeps a persistent history. All three are plain methods: they validate and
copy their input when called (invalid input raises ``InvalidMessageError`` there, before any
hook, provider or process) and return the coroutine or the async iterator. ``settings`` (a
``RunSettings``) carries what a run is run with beyond the config: limits, budgets, metadata,
where progress goes. A run never raises for a provider, hook, tool or limit failure: it
returns (or streams) a failed ``RunResult``. Cancellation propagates after cleanup.

One run, top to bottom: the input is checked when the method is called; when the run starts,
the target (provider or backend) is resolved once and the ``oma_run`` hook is called — the
run wrappers (progress, span, evaluation, closing) around the built-in run of ``_runner``:
the ``before_run`` hooks, the model loop (or the backend's turn), the result.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from ._calls import RunContext, RunEvents
from ._config import AgentConfig, BeforeRunContext
from ._durable import RECORDER, taken
from ._pool import Closables
from ._resolution import KNOWN_DISTRIBUTIONS, check_api_key, check_provider_options, suggest
from ._results import AgentStream, OutputT, RunResult, RunStatus, StreamEvent
from ._runner import BackendTarget, ModelTarget, RunInput, with_output
from ._settings import NO_SETTINGS, RunSettings, new_run_id
from .capabilities import Capabilities
from .errors import InvalidMessageError, ToolError
from .messages import LLMMessage, user_text
from .providers import ProviderRequest, ProviderSettings
from .tools import Tool, ToolsetEntry, as_tool
from .validation import load_messages, load_user_content

if TYPE_CHECKING:
    from ._pool import ProviderPool
    from .capabilities import ProviderSpec
    from .plugins import PluginHost

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


class Agent(Generic[OutputT]):
    """An agent built from an ``AgentConfig``; see the module docstring for the contract.

    Generic in its config's output type: ``Agent(AgentConfig(..., output_type=Invoice))`` is
    an ``Agent[Invoice]`` whose runs return ``RunResult[Invoice]`` (``structured`` is an
    ``Invoice`` when the run succeeded); without an output type it is ``Agent[Any]``.

    The provider (or backend) object is created on first use and closed by ``aclose`` or
    ``async with``; a provider object passed in the config belongs to the caller and is not
    closed. ``plugins`` is the ``PluginHost`` to find providers, backends and hooks in (the
    process-wide one by default). ``provider_pool`` lends the agent a shared provider instead
    of creating one; the pool owns and closes it. ``close_after_run`` makes an agent for one
    run (as ``OpenMultiAgent.run_agent`` does): what a run makes for it (a provider the pool
    does not share, a backend) is closed when that run ends.
    """

    def __init__(
        self,
        config: AgentConfig[OutputT],
        *,
        plugins: PluginHost | None = None,
        provider_pool: ProviderPool | None = None,
        close_after_run: bool = False,
        toolset_owner: Closables | None = None,
        fallback_keys: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(config, AgentConfig):
            raise TypeError(f"config must be an AgentConfig, got {type(config).__name__}")
        self.config = config
        self._plugins = plugins
        self._pool = provider_pool
        self._history: tuple[LLMMessage, ...] = (
            () if config.history == () else load_messages(config.history, allow_empty=True)
        )
        tools: dict[str, Tool] = {}
        toolsets: list[Any] = []
        for item in config.tools:
            built = as_tool(item)
            if isinstance(built, ToolsetEntry):  # listed by each run, before each model call
                toolsets.append(built.toolset)
                continue
            if built.name in tools:
                raise ToolError(f"two tools are named {built.name!r}", tool=built.name)
            tools[built.name] = built
        self._tools = tools
        self._toolsets = tuple(toolsets)
        # The toolsets this agent used, closed by ``aclose`` — or by the ``OpenMultiAgent``
        # that made the agent for one run (``toolset_owner``), which shares them among runs.
        self._own_toolsets = toolset_owner is None
        self._opened = Closables() if toolset_owner is None else toolset_owner
        self._close_after_run = close_after_run
        self._spec: ProviderSpec | None = self._check_names()
        # The key of each fallback provider other than the agent's own (by provider name): a
        # command's key store, which AgentConfig's one api_key cannot hold.
        self._fallback_keys = dict(fallback_keys or {})
        self._fallbacks = self._fallback_configs()
        self._target: ModelTarget | None = None
        self._backend: BackendTarget | None = None
        self._lock: asyncio.Lock | None = None  # made in the loop that first prompts
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    # -- the public API --------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def plugins(self) -> PluginHost:
        """The ``PluginHost`` this agent finds providers, backends and hooks in."""
        return self._host()

    def run(
        self, input: str | Sequence[Any], *, settings: RunSettings | None = None
    ) -> Awaitable[RunResult[OutputT]]:
        """A fresh run on a string (one user text message) or a complete conversation."""
        if isinstance(input, str) and self._spec is None:
            checked: RunInput = input  # ``check_input``'s answer; kept: bench/instructions.py
        else:
            checked = self.check_input(input)
        return self._run(checked, settings or NO_SETTINGS)

    def stream(
        self, input: str | Sequence[Any], *, settings: RunSettings | None = None
    ) -> AgentStream:
        """Like ``run``, as events; ``async with agent.stream(x) as events`` closes it for sure."""
        checked = self.check_input(input)
        return AgentStream(start=lambda: self._events(checked, settings or NO_SETTINGS))

    def prompt(
        self, input: str | Sequence[Any], *, settings: RunSettings | None = None
    ) -> Awaitable[RunResult[OutputT]]:
        """Send the history plus one user turn (a str or a list of content blocks); on success
        append that turn (as given, not as a hook rewrote it) and the reply to the history."""
        turn = self._check_turn(input)
        return self._prompt(turn, settings or NO_SETTINGS)

    def run_sync(self, input: str | Sequence[Any]) -> RunResult[OutputT]:
        """``run`` for scripts: runs its own event loop, then closes what the agent created
        (that loop's connections cannot outlive it)."""
        _no_running_loop("run_sync")
        return asyncio.run(self._closing(self.run(input)))

    def prompt_sync(self, input: str | Sequence[Any]) -> RunResult[OutputT]:
        """``prompt`` for scripts; like ``run_sync``, the history is kept between calls."""
        _no_running_loop("prompt_sync")
        return asyncio.run(self._closing(self.prompt(input)))

    def get_history(self) -> list[LLMMessage]:
        """A new list of the persistent history (immutable messages)."""
        return list(self._history)

    def check_input(self, input: str | Sequence[Any]) -> RunInput:
        """Validate and copy ``run``/``stream`` input, as they do when called: a str stays a
        str, anything else becomes a tuple of messages (at least one). A text-only backend
        refuses structured input ("accepts string prompts only"). A run starts here, so a
        provider that needs a key and has none raises ``MissingKeyError`` here too."""
        checked = self._validated(input)
        self._check_key()
        return checked

    @property
    def _provider(self) -> Any:
        """The provider this agent holds now (None before its first run)."""
        return None if self._target is None else self._target.provider

    def provider(self) -> Any:
        """The provider object, created on first use from the registered factory."""
        return self._model_target().provider

    def build_request(
        self, input: str | Sequence[Any], *, settings: RunSettings | None = None
    ) -> ProviderRequest:
        """The request the first model call of ``run(input, settings=settings)`` would send
        (hooks not applied), with its output type in the mode the run would choose: the
        instructions (prompted) or ``ProviderRequest.output`` (native, tool)."""
        checked = self._validated(input)  # no key needed: nothing is sent
        messages = (user_text(checked),) if isinstance(checked, str) else checked
        target = self._model_target()
        request = target.request(messages)
        output_type, wanted = (settings or NO_SETTINGS).output(self.config)
        if output_type is not None:
            from ._output import choose_mode, output_spec

            spec = output_spec(output_type)
            assert spec is not None
            mode = choose_mode(target.capabilities.output_modes, wanted, target.display_name)
            request = with_output(request, spec, mode)
        return request

    def limit_warnings(self, input: str | Sequence[Any]) -> list[str]:
        """The provider's media size limits the first request of ``run(input)`` would break, one
        line each (empty when all fit); nothing is raised or sent, no key is needed. For ``oma
        render``, which shows a request without sending it."""
        target = self._model_target()
        request = self.build_request(input)
        return target.capabilities.limit_warnings(request.messages, target.display_name)

    async def aclose(self) -> None:
        """Close the provider and backend this agent created, and the toolsets its runs used
        (an MCP server's process); the next use creates or starts them again."""
        target, self._target = self._target, None
        backend = self._backend
        try:
            if target is not None:
                await target.aclose()
        finally:
            try:
                if backend is not None:
                    await backend.aclose()
            finally:
                if self._own_toolsets:
                    await self._opened.aclose()

    async def __aenter__(self) -> Agent[OutputT]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"Agent(name={self.config.name!r})"

    # -- one run ---------------------------------------------------------------------------

    def _context(
        self, checked: RunInput, settings: RunSettings, streaming: bool, session: bool
    ) -> RunContext:
        """The run as middleware sees it, its target resolved once, now (a failure to
        resolve it is the run's first failure: the run still passes through ``oma_run``)."""
        config = self.config
        try:
            if (
                self._target is not None
                and config.backend is None
                and not (self._close_after_run and isinstance(config.provider, str))
            ):  # ``_run_target``'s answer, the agent's own target; kept: bench/instructions.py
                target: Any = self._target
            else:
                target = self._run_target()
        except Exception as error:
            target = error
        hooks = (self._plugins or self._host()).hooks.for_run(settings, target)
        recorder = taken()  # a durable run's (``OpenMultiAgent(store=...)``)
        return RunContext(
            settings.run_id or new_run_id(),
            config,
            settings,
            {} if recorder is None else {RECORDER: recorder},
            input=checked,
            stream=streaming,
            session=session,
            target=target,
            hooks=hooks,
        )

    async def _run(
        self, checked: RunInput, settings: RunSettings, session: bool = False
    ) -> RunResult:
        """A run drained: its ``RunResult`` (a non-streaming run yields only ``done``)."""
        context = self._context(checked, settings, False, session)
        assert context.hooks is not None
        events = context.hooks.run(run=context)
        result: Any = None
        try:
            async for event in events:
                result = event.data
        except BaseException:  # cancelled: close the run (drained, it is closed already)
            await events.aclose()
            raise
        assert isinstance(result, RunResult)
        return result

    def _events(self, checked: RunInput, settings: RunSettings) -> RunEvents:
        """A streamed run's events, the run started now (``AgentStream`` asks for them with
        the first event, and closes them); the last is always ``done`` with the
        ``RunResult``."""
        context = self._context(checked, settings, True, False)
        assert context.hooks is not None
        return context.hooks.run(run=context)

    # -- input -------------------------------------------------------------------------------

    def _validated(self, input: str | Sequence[Any]) -> RunInput:
        if isinstance(input, str):
            return input
        if self.config.backend is not None:
            raise InvalidMessageError("", self._string_only())
        return load_messages(input)

    def _check_turn(self, input: Any) -> LLMMessage:
        turn = self._turn(input)
        self._check_key()
        return turn

    def _turn(self, input: Any) -> LLMMessage:
        if isinstance(input, str):
            return user_text(input)
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

    # -- prompt: runs on the persistent history ----------------------------------------------

    async def _prompt(self, turn: LLMMessage, settings: RunSettings) -> RunResult:
        # Prompts of one agent take turns: each one sees the turns the previous ones appended.
        async with self._prompt_lock():
            if self.config.backend is not None:  # history does not seed an external agent
                result = await self._run((turn,), settings, session=True)
                if result.success:
                    self._history = (*self._history, turn, *result.messages)
                return result
            window = (*self._history, turn)
            if self.config.max_history_tokens is not None:
                from ._history import trim_history

                window = trim_history(window, self.config.max_history_tokens)
            result = await self._run(window, settings, session=True)
            if result.success:
                self._history = (*window, *result.messages)
            return result

    def _prompt_lock(self) -> asyncio.Lock:
        """The lock of the running event loop (``prompt_sync`` runs each call in a new loop)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    async def _closing(self, awaitable: Awaitable[T]) -> T:
        try:
            return await awaitable
        finally:
            await self.aclose()

    # -- what a run needs, created on first use ---------------------------------------------

    def _host(self) -> PluginHost:
        if self._plugins is None:
            from .plugins import PluginHost

            self._plugins = PluginHost.default()
        return self._plugins

    def _check_names(self) -> ProviderSpec | None:
        """An unknown provider or backend, or an option the provider does not accept, raises
        when the agent is built (``NotRegisteredError``, ``UnknownOptionError``); returns the
        registered provider's spec (None for a backend or a provider object)."""
        config = self.config
        if config.backend is not None:
            self._host().backend_spec(str(config.backend["kind"]))
        elif isinstance(config.provider, str):
            host = self._host()
            name, _ = _provider_and_model(config, host)
            spec = host.provider_spec(name)
            check_provider_options(spec, config.provider_options)
            return spec
        return None

    def _fallback_configs(self) -> tuple[AgentConfig, ...]:
        """The config of each of ``fallback_models``, checked now: a name whose provider is
        not registered raises ``NotRegisteredError`` when the agent is built."""
        config = self.config
        if not config.fallback_models:
            return ()
        host = self._host()
        primary = config.provider_name
        if isinstance(config.provider, str) and config.backend is None:
            primary, _ = _provider_and_model(config, host)
        return tuple(
            _fallback_config(config, name, primary, host, self._fallback_keys)
            for name in config.fallback_models
        )

    def _fallback_target(self, config: AgentConfig) -> ModelTarget:
        """A fallback's target, made when the run falls back to it (never before): raises
        when it cannot be used (no key), which the run reports and skips."""
        spec = self._host().provider_spec(str(config.provider))
        if spec.requires_api_key:
            check_api_key(spec, config.api_key, base_url=config.base_url)
        return self._resolve_target(config)

    def _check_key(self) -> None:
        """A provider that needs a key and has none raises ``MissingKeyError`` when a run
        starts, before any hook or request."""
        if self._spec is not None and self._spec.requires_api_key:
            check_api_key(self._spec, self.config.api_key, base_url=self.config.base_url)

    def _run_target(self) -> ModelTarget | BackendTarget:
        """What a run talks to. An agent made for one run does not keep what it made: the
        run closes it when it ends."""
        if self.config.backend is not None:
            backend = self._backend
            if backend is None or self._close_after_run:
                options = dict(self.config.backend)
                spec = self._host().backend_spec(options.pop("kind"))
                backend = BackendTarget(spec, options, close_after_run=self._close_after_run)
                if not self._close_after_run:
                    self._backend = backend
            return backend
        if self._close_after_run and isinstance(self.config.provider, str):
            return self._resolve_target()  # a pooled or made provider: per run, per loop
        return self._model_target()  # the agent's own, or the caller's object: kept

    def _model_target(self) -> ModelTarget:
        target = self._target
        if target is None:
            target = self._target = self._resolve_target()
        return target

    def _resolve_target(self, fallback: AgentConfig | None = None) -> ModelTarget:
        """The agent's target, or (``fallback``) a fallback model's, which has none of its own."""
        config = self.config if fallback is None else fallback
        provider_name = config.provider_name
        if isinstance(config.provider, str):
            host = self._host()
            provider_name, model = _provider_and_model(config, host)
            spec = host.provider_spec(provider_name)
            settings = ProviderSettings(config.base_url, config.api_key, config.provider_options)
            pooled = None if self._pool is None else self._pool.get(spec, settings, host)
            provider = host.build_provider(spec, settings) if pooled is None else pooled
            capabilities = spec.capabilities.with_options(config.provider_options)
            display_name = spec.display_name
            model = model or spec.default_model
            owned = pooled is None
        else:
            provider = config.provider
            # AgentConfig checked it is a Capabilities, if given; the caller's own object
            # without one is taken to carry everything.
            capabilities = getattr(provider, "capabilities", None) or _EVERYTHING
            display_name = str(
                getattr(provider, "display_name", None)
                or getattr(provider, "name", None)
                or type(provider).__name__
            )
            model = config.model or getattr(provider, "default_model", None)
            owned = False
        # a model that cannot take the thinking asked for is refused before any request
        capabilities.check_thinking(config.thinking, model, display_name)
        return ModelTarget(
            provider=provider,
            provider_name=provider_name,
            capabilities=capabilities,
            display_name=display_name,
            model=model,
            system_prompt=config.system_prompt,
            tools=self._tools,
            tool_defs=tuple(t.definition() for t in self._tools.values()),
            toolsets=self._toolsets,
            opened=self._opened,
            max_turns=config.max_turns,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            stop=config.stop,
            thinking=config.thinking,
            cache=config.cache,
            owned=owned,
            close_after_run=owned and self._close_after_run and fallback is None,
            fallbacks=() if fallback is not None else self._fallback_makers(),
        )

    def _fallback_makers(self) -> tuple[tuple[str, Callable[[], ModelTarget]], ...]:
        """Each fallback's name and what makes its target (a target's ``fallbacks``)."""
        return tuple(
            (name, functools.partial(self._fallback_target, config))
            for name, config in zip(self.config.fallback_models, self._fallbacks, strict=True)
        )


_EVERYTHING = Capabilities.everything()


def _provider_and_model(config: AgentConfig, host: PluginHost) -> tuple[str, str | None]:
    """The provider and model a config names: ``model="provider:model"`` names both when the
    part before the first colon is a registered provider (and ``provider`` is left at its
    default or says the same); otherwise the model is taken as it is (``ft:gpt-4o:acme``).
    With the default provider, a prefix that names a provider whose plugin is missing, or
    is close to a registered one (``antropic:``), is an unknown provider, not an echo model."""
    name, model = str(config.provider), config.model
    if model is not None and ":" in model:
        prefix, _, rest = model.partition(":")
        specs = host.provider_specs()
        if prefix in (name, *specs) and name in ("echo", prefix):
            return prefix, rest or None
        if name == "echo" and (
            prefix in KNOWN_DISTRIBUTIONS or suggest(prefix, {*specs, *KNOWN_DISTRIBUTIONS})
        ):
            host.provider_spec(prefix)  # raises: not registered, with the install hint
    return name, model


def _fallback_config(
    config: AgentConfig,
    name: str,
    primary: str,
    host: PluginHost,
    keys: Mapping[str, str] | None = None,
) -> AgentConfig:
    """The config a fallback model runs with: the agent's, for the provider and model ``name``
    says (``provider:model``, or a provider name for its default model). The endpoint, key and
    provider options are kept only for the agent's own provider: another one's are its own
    (its key from ``keys``, by provider name, else its environment variable)."""
    provider, _, model = name.partition(":")
    if provider not in host.provider_specs():
        host.provider_spec(provider)  # raises NotRegisteredError, with a hint
    same = provider == primary
    if same:
        check_provider_options(host.provider_spec(provider), config.provider_options)
    return attrs.evolve(
        config,
        provider=provider,
        model=model or None,
        base_url=config.base_url if same else None,
        api_key=config.api_key if same else (keys or {}).get(provider),
        provider_options=config.provider_options if same else {},
        backend=None,
        fallback_models=(),
    )


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
