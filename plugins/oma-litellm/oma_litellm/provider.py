"""The LiteLLM bridge: oma's provider interface over ``litellm.acompletion``.

LiteLLM is imported on first use (it takes seconds to import) with its cost map forced to
the copy it ships (``LITELLM_LOCAL_MODEL_COST_MAP=True``), so it never fetches one over the
network. Its own retries (``num_retries``) and its SDKs' (``max_retries``) are off: the core
owns the one retry ladder.

Each provider keeps its own connections per event loop, so that ``aclose`` closes them instead
of leaving them in LiteLLM's global client cache: an ``aiohttp`` session (LiteLLM's transport)
handed over as ``shared_session``, and, for the routes LiteLLM serves with its own HTTP
handler (``anthropic/``, ``groq/`` and most others), that handler as ``client``. The routes
LiteLLM serves through the OpenAI SDK (``openai/`` and the OpenAI-compatible ones without a
handler of their own, and the text-completion API ``text-completion-openai/``) get instead an
``AsyncOpenAI`` of the provider's own, built as oma-openai builds its client: no SDK retries,
an httpx client that never follows a redirect and reads every reply through the toolkit's
bounds, and the key and base URL LiteLLM itself would have used (``litellm.get_llm_provider``).
Azure's routes (``azure/``, ``azure_text/``) always get an ``AsyncAzureOpenAI`` built the same
way, with the key, endpoint and API version LiteLLM's Azure route would have read, or, without
a key, a token provider that resolves Microsoft Entra ID credentials with LiteLLM's own
``get_azure_ad_token`` (a configured ``azure_ad_token_provider``, ``AZURE_AD_TOKEN`` and its
``oidc/`` exchange, tenant and client id with a secret, username and password,
``litellm.enable_azure_ad_token_refresh``): so no Azure request leaves on a client of
LiteLLM's. An Azure call the plugin cannot build a client for (no credential, no endpoint) is
refused before anything is sent.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from oma_core import (
    AudioBlock,
    DocumentBlock,
    LLMMessage,
    ProviderError,
    TextBlock,
    ToolUseBlock,
    UnsupportedContentBlockError,
    Usage,
)
from oma_core.errors import MissingKeyError, PluginError
from oma_core.http import (
    DEFAULT_IDLE_TIMEOUT,
    ReadLimits,
    ToolCallAssembler,
    guard_hooks,
    request_secrets,
)
from oma_core.toolkit import (
    ProviderEvent,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ReasoningDelta,
    ResponseComplete,
    TextDelta,
    ToolCall,
)

from .capabilities import CAPABILITIES, DISPLAY_NAME, PDF_TYPES
from .errors import malformed, map_error, token_error
from .mapping import build_body, split_model
from .reasoning import ReasoningStream, add_thinking, reasoning_of

__all__ = ["FINISH_REASONS", "OPTIONS", "LiteLLMProvider", "import_litellm"]

#: LiteLLM's (OpenAI's) ``finish_reason`` -> oma's stop reason.
FINISH_REASONS: Mapping[str, str] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filter",
}
#: ``provider_options`` this provider reads.
OPTIONS = frozenset(
    {
        *("timeout", "headers", "api_version", "max_response_bytes", "max_event_bytes"),
        "azure_ad_token_provider",
    }
)
#: The reply must start within this (LiteLLM's one timeout); silence once it has started is
#: bounded by the toolkit's idle timeout (60 s) on LiteLLM's own HTTP handler
_DEFAULT_TIMEOUT = 120.0
_CONNECT_TIMEOUT = 10.0
_SECRET_SUFFIXES = ("_API_KEY", "_KEY", "_TOKEN", "_SECRET", "_SECRET_KEY", "_PASSWORD")
#: LiteLLM's Azure OpenAI routes: served through the SDK's ``AsyncAzureOpenAI``
_AZURE_ROUTES = frozenset({"azure", "azure_text"})
#: The ``api_version`` values that select Azure's v1 API (OpenAI's own shape under
#: ``/openai/v1/``), for which LiteLLM builds an ``AsyncOpenAI`` instead
_AZURE_V1_VERSIONS = frozenset({"v1", "latest", "preview"})
#: Where an Azure route finds a key: the variables LiteLLM's Azure route and the SDK read
_AZURE_KEY_VARIABLES = ("AZURE_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_AD_TOKEN")
#: How many of the last Entra ID tokens handed out are kept to scrub from errors
_TOKENS_KEPT = 8


def import_litellm() -> Any:
    """``litellm``, imported so that it never reaches the network for its cost map."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner on stdout
    return litellm


#: The providers not closed yet: when the last closes, LiteLLM's own cached clients are closed.
_OPEN: weakref.WeakSet[LiteLLMProvider] = weakref.WeakSet()


class LiteLLMProvider:
    """Sends ``ProviderRequest``s through ``litellm.acompletion``; see
    ``docs/providers/litellm.md``."""

    name = "litellm"
    display_name = DISPLAY_NAME
    capabilities = CAPABILITIES

    def __init__(self, settings: ProviderSettings) -> None:
        unknown = sorted(set(settings.options) - OPTIONS)
        if unknown:
            raise PluginError(
                f"unknown provider_options for litellm: {', '.join(unknown)} "
                f"(known: {', '.join(sorted(OPTIONS))})",
                name=self.name,
            )
        self._settings = settings
        self._limits = ReadLimits.from_options(settings.options, name=self.name)
        self._litellm = import_litellm()
        _OPEN.add(self)
        self._sessions: dict[int, tuple[weakref.ref[asyncio.AbstractEventLoop], Any, Any]] = {}
        self._clients: dict[tuple[Any, ...], tuple[weakref.ref[Any], Any]] = {}
        #: the Entra ID token provider of this provider's Azure clients, built on first use
        self._entra: Callable[[], Awaitable[str]] | None = None
        #: the last Entra ID tokens it handed out: scrubbed from every error like a key
        self._tokens: deque[str] = deque(maxlen=_TOKENS_KEPT)
        compatible = set(getattr(self._litellm, "openai_compatible_providers", ()))
        # LiteLLM's dispatch: a compatible route with a ``_complete_<route>`` function of its
        # own (groq, together_ai, ...) goes through its HTTP handler; the rest through the SDK
        main = getattr(self._litellm, "main", None)
        own = {route for route in compatible if hasattr(main, f"_complete_{route}")}
        #: routes served through the OpenAI SDK: they take an ``AsyncOpenAI`` client
        self._sdk_routes = frozenset(
            {"openai", "custom_openai", "text-completion-openai"} | (compatible - own)
        )

    # -- the provider interface

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        return build_body(request)

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        kwargs = self._kwargs(request)
        error: ProviderError | None = None
        try:
            reply = await self._litellm.acompletion(**kwargs)
        except Exception as exc:
            error = map_error(exc, self._secrets(request))
        if error is not None:
            raise error
        try:
            return _response(reply, kwargs["model"])
        except (ValueError, TypeError, AttributeError, IndexError) as exc:
            error = malformed(f"{type(exc).__name__} in the reply")
        raise error

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        kwargs = self._kwargs(request)
        error: ProviderError | None = None
        try:
            chunks = await self._litellm.acompletion(
                **kwargs, stream=True, stream_options={"include_usage": True}
            )
        except Exception as exc:
            error = map_error(exc, self._secrets(request))
        if error is not None:
            raise error
        assembler = _StreamAssembler(kwargs["model"])
        started = False  # a chunk arrived: the service answered 200, so no later error has a status
        try:
            iterator = chunks.__aiter__()
            while True:
                events: list[ProviderEvent] = []
                try:
                    chunk = await anext(iterator, None)
                    if chunk is None:
                        break
                    started = True
                    events = assembler.feed(chunk)
                except Exception as exc:
                    error = map_error(exc, self._secrets(request), mid_stream=started)
                if error is not None:
                    raise error
                for event in events:
                    yield event
            try:
                final = assembler.finish()
            except ValueError as exc:
                error = malformed(str(exc))
            if error is not None:
                raise error
            yield ResponseComplete(final)
        finally:
            await chunks.aclose()

    async def aclose(self) -> None:
        """Close this provider's sessions and clients on the running loop; the last provider
        of the process to close also closes the clients LiteLLM cached for itself
        (``litellm.close_litellm_async_clients``, LiteLLM's documented cleanup), so that no
        aiohttp session of LiteLLM's is left for the garbage collector ("Unclosed client
        session") when the loop ends."""
        _OPEN.discard(self)
        try:
            await self._close_own()
        finally:
            if not _OPEN:
                close = getattr(self._litellm, "close_litellm_async_clients", None)
                if close is not None:
                    await close()

    async def _close_own(self) -> None:
        sessions, self._sessions = self._sessions, {}
        for loop_ref, session, handler in sessions.values():
            loop = loop_ref()
            if loop is not None and loop is _running_loop():
                await handler.close()
                await session.close()
            # a session of another (or a finished) loop cannot be closed from here
        clients, self._clients = self._clients, {}
        for loop_ref, client in clients.values():
            loop = loop_ref()
            if loop is not None and loop is _running_loop():
                await client.close()

    # -- helpers

    def _model_takes(self, request: ProviderRequest) -> None:
        """Refuse, before any request, a PDF or audio block for a model LiteLLM's model map
        does not say takes it (``supports_pdf_input``, ``supports_audio_input``: False for a
        model the map does not know; ``litellm.register_model`` adds one)."""
        needs = {
            ("document", "PDF input", "supports_pdf_input")
            if isinstance(block, DocumentBlock)
            else ("audio", "audio input", "supports_audio_input")
            for message in request.messages
            for block in message.content
            if isinstance(block, AudioBlock)
            or (isinstance(block, DocumentBlock) and block.source.media_type in PDF_TYPES)
        }
        for block_type, what, helper in sorted(needs):
            if not getattr(self._litellm, helper)(model=request.model):
                raise UnsupportedContentBlockError(
                    DISPLAY_NAME,
                    block_type,
                    f"LiteLLM's model map does not list {request.model} as taking {what} "
                    f"({helper}); register the model with litellm.register_model if it does",
                )

    def _kwargs(self, request: ProviderRequest) -> dict[str, Any]:
        self._model_takes(request)
        route, _ = split_model(request.model)
        options = self._settings.options
        kwargs: dict[str, Any] = {**self.render(request)}
        add_thinking(
            kwargs,
            request.thinking,
            str(request.model),
            self._litellm.supports_reasoning,
            DISPLAY_NAME,
        )
        kwargs |= {
            "custom_llm_provider": route,
            "num_retries": 0,
            "max_retries": 0,
            "timeout": options.get("timeout", _DEFAULT_TIMEOUT),
        }
        session, handler = self._session()
        kwargs["shared_session"] = session
        if route in self._sdk_routes or route in _AZURE_ROUTES:  # the SDK takes no handler
            client = (
                self._azure_client(route)
                if route in _AZURE_ROUTES
                else self._sdk_client(str(kwargs["model"]), route)
            )
            if client is not None:
                kwargs["client"] = client
        else:
            kwargs["client"] = handler
        if self._settings.api_key:
            kwargs["api_key"] = self._settings.api_key
        if self._settings.base_url:
            kwargs["api_base"] = self._settings.base_url
        if options.get("headers"):
            kwargs["extra_headers"] = dict(options["headers"])
        if options.get("api_version"):
            kwargs["api_version"] = options["api_version"]
        return kwargs

    def _secrets(self, request: ProviderRequest | None = None) -> tuple[str | None, ...]:
        """The configured key, every key-like environment variable LiteLLM may have read
        (``OPENAI_API_KEY``, ``GROQ_API_KEY``, ...), the Entra ID tokens handed out, and the
        request's own text and base64 media (services quote what they were sent): none may
        show in an error."""
        from_env = tuple(
            value
            for name, value in os.environ.items()
            if name.endswith(_SECRET_SUFFIXES) and len(value) >= 8
        )
        sent = request_secrets(request, None)
        return (self._settings.api_key, *from_env, *self._tokens, *sent)

    def _session(self) -> tuple[Any, Any]:
        """This provider's aiohttp session on the running loop, and LiteLLM's HTTP handler
        over it (one connection pool per loop)."""
        loop = asyncio.get_running_loop()
        entry = self._sessions.get(id(loop))
        if entry is not None and entry[0]() is loop:
            return entry[1], entry[2]
        self._sessions = {k: v for k, v in self._sessions.items() if _alive(v[0])}
        import aiohttp
        from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

        session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_TIMEOUT)
        )
        timeout = self._settings.options.get("timeout", _DEFAULT_TIMEOUT)
        # redirects never followed, replies read through the toolkit's bounds
        given = self._settings.options.get("timeout")
        idle = float(given) if isinstance(given, int | float) else DEFAULT_IDLE_TIMEOUT
        hooks: Any = guard_hooks(DISPLAY_NAME, self._limits, idle)
        handler = AsyncHTTPHandler(
            timeout=timeout,
            shared_session=session,
            follow_redirects=False,
            event_hooks=hooks,
        )
        self._sessions[id(loop)] = (weakref.ref(loop), session, handler)
        return session, handler

    def _sdk_client(self, model: str, route: str) -> Any:
        """This provider's ``AsyncOpenAI`` for ``route`` on the running loop, with the key and
        base URL LiteLLM would have used; None without a key (LiteLLM then reports it)."""
        litellm = self._litellm
        _, _, key, base = litellm.get_llm_provider(
            model=model,
            custom_llm_provider=route,
            api_base=self._settings.base_url,
            api_key=self._settings.api_key,
        )
        if route in ("openai", "custom_openai"):  # as LiteLLM's OpenAI route falls back
            key = key or litellm.api_key or litellm.openai_key or os.environ.get("OPENAI_API_KEY")
            base = (
                base
                or litellm.api_base
                or os.environ.get("OPENAI_BASE_URL")
                or os.environ.get("OPENAI_API_BASE")
                or "https://api.openai.com/v1"
            )
        key = key or litellm.api_key
        if not key or not base:
            return None

        def build(openai: Any, http_client: Any) -> Any:
            return openai.AsyncOpenAI(
                api_key=str(key), base_url=str(base), max_retries=0, http_client=http_client
            )

        return self._client(("openai", str(key), str(base)), build)

    def _azure_client(self, route: str) -> Any:
        """This provider's ``AsyncAzureOpenAI`` on the running loop, with the key, endpoint and
        API version LiteLLM's Azure routes would have read; without a key, Microsoft Entra ID
        through ``_entra_provider``. For Azure's v1 API (``api_version`` ``v1``, ``latest`` or
        ``preview``) on ``azure/``, an ``AsyncOpenAI`` on ``<endpoint>/openai/v1/``, as
        LiteLLM builds it. Every Azure call gets one: a call with neither a
        credential nor an endpoint is refused here (``MissingKeyError``, ``PluginError``), as
        LiteLLM would otherwise build a client of its own, unguarded."""
        litellm = self._litellm
        key = (
            self._settings.api_key
            or litellm.api_key
            or litellm.azure_key
            or os.environ.get("AZURE_OPENAI_API_KEY")
            or os.environ.get("AZURE_API_KEY")
        )
        provider = None if key else self._entra_provider()
        if not key and provider is None and not os.environ.get("AZURE_OPENAI_AD_TOKEN"):
            raise MissingKeyError(self.name, _AZURE_KEY_VARIABLES, display_name=DISPLAY_NAME)
        base = self._settings.base_url or litellm.api_base or os.environ.get("AZURE_API_BASE")
        if not base and not os.environ.get("AZURE_OPENAI_ENDPOINT"):
            raise PluginError(
                f"{DISPLAY_NAME}: an Azure OpenAI route needs the resource's endpoint: pass "
                "AgentConfig.base_url or set AZURE_API_BASE",
                name=self.name,
            )
        version = (
            self._settings.options.get("api_version")
            or litellm.api_version
            or os.environ.get("AZURE_API_VERSION")
            or litellm.AZURE_DEFAULT_API_VERSION
        )

        v1 = route == "azure" and str(version) in _AZURE_V1_VERSIONS

        def build(openai: Any, http_client: Any) -> Any:
            if v1:  # as LiteLLM does: the key, or the token provider, as OpenAI's bearer key
                endpoint = str(base or os.environ["AZURE_OPENAI_ENDPOINT"]).rstrip("/")
                if not endpoint.endswith("/openai/v1"):
                    endpoint += "/openai/v1"
                return openai.AsyncOpenAI(
                    api_key=key or provider or os.environ.get("AZURE_OPENAI_AD_TOKEN"),
                    base_url=endpoint + "/",
                    max_retries=0,
                    http_client=http_client,
                )
            try:  # the SDK reads AZURE_OPENAI_AD_TOKEN and AZURE_OPENAI_ENDPOINT itself
                return openai.AsyncAzureOpenAI(
                    api_key=key or None,
                    azure_ad_token_provider=provider,
                    azure_endpoint=str(base) if base else None,
                    api_version=str(version),
                    max_retries=0,
                    http_client=http_client,
                )
            except (openai.OpenAIError, ValueError) as exc:  # no secret in the SDK's messages
                raise PluginError(
                    f"{DISPLAY_NAME}: cannot build the Azure OpenAI client: {exc}", name=self.name
                ) from None

        credential = str(key) if key else "entra-id"
        return self._client(("azure", credential, str(base), str(version), str(v1)), build)

    def _entra_provider(self) -> Callable[[], Awaitable[str]] | None:
        """The Entra ID token provider for this provider's Azure clients, or None when no
        Entra ID credential is configured. Each call resolves a token as LiteLLM's Azure
        routes do: ``provider_options["azure_ad_token_provider"]`` when given, else
        LiteLLM's ``get_azure_ad_token`` (``AZURE_AD_TOKEN``, exchanged first when it is an
        ``oidc/`` reference; ``AZURE_TENANT_ID`` + ``AZURE_CLIENT_ID`` +
        ``AZURE_CLIENT_SECRET``; ``AZURE_USERNAME`` + ``AZURE_PASSWORD`` + ``AZURE_CLIENT_ID``;
        ``litellm.enable_azure_ad_token_refresh``), in a worker thread, since azure-identity
        and the OIDC exchange block. A failure is a ``ProviderError`` before anything is sent
        to Azure."""
        if self._entra is not None:
            return self._entra
        given = self._settings.options.get("azure_ad_token_provider")
        if given is not None and not callable(given):
            raise PluginError(
                f'provider_options["azure_ad_token_provider"] must be a callable returning a '
                f"token, not {type(given).__name__}",
                name=self.name,
            )
        env = os.environ
        if not (
            given is not None
            or env.get("AZURE_AD_TOKEN")
            or all(env.get(f"AZURE_{n}") for n in ("TENANT_ID", "CLIENT_ID", "CLIENT_SECRET"))
            or all(env.get(f"AZURE_{n}") for n in ("USERNAME", "PASSWORD", "CLIENT_ID"))
            or getattr(self._litellm, "enable_azure_ad_token_refresh", False)
        ):
            return None
        tokens, secrets = self._tokens, self._secrets

        def resolve() -> Any:
            if given is not None:
                return given()
            from litellm.llms.azure.common_utils import get_azure_ad_token
            from litellm.types.router import GenericLiteLLMParams

            return get_azure_ad_token(GenericLiteLLMParams())

        async def token() -> str:
            error: Exception | None = None
            try:
                found = await asyncio.to_thread(resolve)
                if inspect.isawaitable(found):
                    found = await found
            except Exception as exc:
                error = exc
            if error is not None:
                raise token_error(error, secrets()) from None
            if not isinstance(found, str) or not found:
                raise token_error(None, ())
            if found not in tokens:
                tokens.append(found)
            return found

        self._entra = token
        return token

    def _client(self, slot: tuple[str, ...], build: Any) -> Any:
        """The SDK client ``build(openai, http_client)`` makes for ``slot`` on the running loop,
        built once per loop over an httpx client that never follows a redirect and reads every
        reply through the toolkit's bounds (LiteLLM passes the call's timeout to each
        request)."""
        loop = asyncio.get_running_loop()
        key = (id(loop), *slot)
        entry = self._clients.get(key)
        if entry is not None and entry[0]() is loop:
            return entry[1]
        self._clients = {k: v for k, v in self._clients.items() if _alive(v[0])}
        import openai

        given = self._settings.options.get("timeout")
        idle = float(given) if isinstance(given, int | float) else DEFAULT_IDLE_TIMEOUT
        http_client = openai.DefaultAsyncHttpxClient(
            follow_redirects=False, event_hooks=guard_hooks(DISPLAY_NAME, self._limits, idle)
        )
        client = build(openai, http_client)
        self._clients[key] = (weakref.ref(loop), client)
        return client


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _alive(ref: weakref.ref[asyncio.AbstractEventLoop]) -> bool:
    loop = ref()
    return loop is not None and not loop.is_closed()


def _response(reply: Any, model: str) -> ProviderResponse:
    choice = reply.choices[0]
    message = choice.message
    blocks: list[Any] = reasoning_of(message)
    if message.content:
        blocks.append(TextBlock(str(message.content)))
    calls = ToolCallAssembler(DISPLAY_NAME)
    for n, call in enumerate(message.tool_calls or ()):
        calls.feed(n, id=call.id, name=call.function.name, arguments=call.function.arguments)
    if calls:
        blocks.extend(calls.finish())
    if not blocks:
        blocks.append(TextBlock(""))
    return ProviderResponse(
        message=LLMMessage("assistant", tuple(blocks)),
        usage=_usage(getattr(reply, "usage", None)),
        stop_reason=_stop(choice.finish_reason),
        model=model,
    )


def _usage(usage: Any) -> Usage:
    """oma's ``Usage`` of LiteLLM's, which follows OpenAI's form on every route (LiteLLM's
    prompt caching documentation): ``prompt_tokens`` counts the cached tokens too, as oma's
    ``input_tokens`` does; ``prompt_tokens_details.cached_tokens`` were read from the cache
    and ``cache_creation_tokens`` (Anthropic-style routes also give it as
    ``cache_creation_input_tokens``) written to it; ``completion_tokens_details
    .reasoning_tokens`` are a part of the output."""
    if usage is None:
        return Usage()
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    completion = getattr(usage, "completion_tokens", 0) or 0
    details = getattr(usage, "prompt_tokens_details", None)
    written = _count(details, "cache_creation_tokens") or _count(
        usage, "cache_creation_input_tokens"
    )
    return Usage(
        int(prompt),
        int(completion),
        cache_read_tokens=_count(details, "cached_tokens"),
        cache_write_tokens=written,
        reasoning_tokens=_count(
            getattr(usage, "completion_tokens_details", None), "reasoning_tokens"
        ),
    )


def _count(holder: Any, name: str) -> int:
    """One count of a usage object (absent, None or not a count: 0)."""
    value = getattr(holder, name, None) if holder is not None else None
    if value is None and isinstance(holder, dict):
        value = holder.get(name)
    return value if type(value) is int and value >= 0 else 0


def _stop(reason: Any) -> str | None:
    if reason is None:
        return None
    return FINISH_REASONS.get(str(reason), str(reason))


class _StreamAssembler:
    """LiteLLM's stream chunks (OpenAI's ``chat.completion.chunk`` shape) as oma's events;
    tool-call deltas go to the toolkit's ``ToolCallAssembler``, which hands back each piece of
    arguments as a ``ToolCallDelta`` to pass on."""

    def __init__(self, model: str) -> None:
        self._model = model
        self._text: list[str] = []
        self._reasoning = ReasoningStream()
        self._calls = ToolCallAssembler(DISPLAY_NAME)
        self._blocks: tuple[ToolUseBlock, ...] | None = None
        self._finish: str | None = None
        self._usage = Usage()

    def feed(self, chunk: Any) -> list[ProviderEvent]:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._usage = _usage(usage)
        events: list[ProviderEvent] = []
        for choice in chunk.choices or ():
            delta = choice.delta
            if delta is not None and (thought := self._reasoning.feed(delta)):
                events.append(ReasoningDelta(thought))
            if delta is not None and delta.content:
                self._text.append(delta.content)
                events.append(TextDelta(delta.content))
            for n, call in enumerate((delta.tool_calls if delta is not None else None) or ()):
                function = call.function
                piece = self._calls.feed(
                    call.index if isinstance(call.index, int) else n,
                    id=call.id,
                    name=function.name if function is not None else None,
                    arguments=function.arguments if function is not None else None,
                )
                if piece is not None:  # a piece of the call's arguments
                    events.append(piece)
            if choice.finish_reason and self._finish is None:
                self._finish = choice.finish_reason
                events.extend(ToolCall(block) for block in self._tool_blocks())
        return events

    def _tool_blocks(self) -> tuple[ToolUseBlock, ...]:
        if self._blocks is None:
            self._blocks = self._calls.finish() if self._calls else ()
        return self._blocks

    def finish(self) -> ProviderResponse:
        if self._finish is None:
            raise ValueError("the stream ended before its finish_reason")
        text = "".join(self._text)
        if not text and not self._calls and self._usage.total_tokens == 0:
            # LiteLLM turns a 200 stream with no events at all into an empty "stop"; a real
            # turn, even an empty one, costs input tokens
            raise ValueError("the stream carried no content and no usage")
        blocks: list[Any] = [*self._reasoning.finish()]
        blocks += [TextBlock(text)] if text else []
        blocks.extend(self._tool_blocks())
        if not blocks:
            blocks.append(TextBlock(""))
        return ProviderResponse(
            message=LLMMessage("assistant", tuple(blocks)),
            usage=self._usage,
            stop_reason=_stop(self._finish),
            model=self._model,
        )
