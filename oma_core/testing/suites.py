"""Shared test suites every provider plugin inherits instead of copying: its spec, its faults,
what its errors hold, and the scrubbing of echoed requests.

Each suite is a class a plugin subclasses in a ``Test...`` class of its tests, with a few class
attributes and hooks (as ``ProviderConformance`` is used); it inherits every ``test_...``
method. Checks that cannot apply to a plugin (no key to miss, no server-sent events, no error
event inside a stream) are *left out* by ``__init_subclass__``, never skipped: a check skipped
everywhere looks like a pass nobody ran.

The hooks the suites share (``ProviderSuite``):

- ``provider_name``: the registered provider name; ``model``: the model sent (None: the
  provider's default);
- ``make_server()``: a new, not yet started fake server of the plugin (a ``FakeServer``
  subclass) that accepts ``api_key``; the suites start it with ``with``;
- ``base_url(server)``: ``AgentConfig.base_url`` for it (the server root by default);
- ``script_text(server, text)``: make the server's next reply this assistant text;
- the ``provider_options`` fixture: options every provider the suite builds gets, e.g. one
  parametrized by the plugin's transports.

A plugin writes those hooks once, in a class of its own, and mixes it into each suite with
the attributes its service differs on (oma-anthropic's tests, ``anthropic_suite.py`` and
``test_anthropic_*.py``)::

    class AnthropicSuite(ProviderSuite):
        provider_name = "anthropic"

        def make_server(self) -> FakeAnthropic:
            return FakeAnthropic(api_key=self.api_key)

        def script_text(self, server: FakeAnthropic, text: str) -> None:
            server.reply_text(text)

        @pytest.fixture
        def provider_options(self, transport: str) -> dict[str, Any]:
            return {"transport": transport}      # every check once per transport


    class TestAnthropicFaults(AnthropicSuite, FaultSuite):
        server_error_statuses = (500, 529)
        stream_errors = (("overloaded_error", 529, True), ("api_error", 500, True))
        unfinished_stream_says = "message_stop"


    class TestAnthropicSpec(AnthropicSuite, SpecSuite):
        key_variables = ("ANTHROPIC_API_KEY",)
        options_read = KNOWN_OPTIONS
        misspelt_option = ("max_token", 5, "max_tokens")


    class TestAnthropicSecrets(AnthropicSuite, SecretsSuite):
        api_key = "sk-ant-oma-test-secret-0123456789abcdef"
        stream_error_type = "overloaded_error"


    class TestAnthropicScrubbing(ScrubbingSuite):
        api_key = "sk-ant-oma-property-secret-0123456789"

Keep beside them only what is the service's own (its error type names, its malformed
replies): one behaviour is tested in one place.
"""

from __future__ import annotations

import json
import random
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pytest

from ..agent import Agent, AgentConfig
from ..capabilities import OptionSpec, ProviderSpec
from ..errors import MissingKeyError, OptionTypeError, ProviderError, UnknownOptionError
from ..orchestrator import OpenMultiAgent
from ..plugins import PluginHost
from ..providers import Provider, ProviderRequest, ProviderSettings, TextDelta
from ..validation import load_messages
from .fake_server import (
    DropConnection,
    EchoRequestError,
    ErrorMidStream,
    FakeServer,
    Fault,
    HTTPError,
    RawBody,
    Redirect,
    SlowStream,
    TruncatedStream,
)
from .leaks import assert_holds_no_secret

__all__ = ["FaultSuite", "ProviderSuite", "ScrubbingSuite", "SecretsSuite", "SpecSuite"]

_STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])


def _leave_out(cls: type, names: Collection[str]) -> None:
    for name in names:
        setattr(cls, name, None)


class ProviderSuite:
    """What the suites share: how to reach the plugin's provider and its fake server."""

    provider_name: str = ""
    model: str | None = None
    #: The key the providers get and the server accepts (None: the plugin's own credentials).
    api_key: str | None = "test-key"

    def make_server(self) -> FakeServer:
        """A new fake server of the plugin accepting ``api_key`` (not started)."""
        raise NotImplementedError

    def base_url(self, server: FakeServer) -> str:
        """``AgentConfig.base_url`` for ``server`` (default: its root)."""
        return server.url

    def script_text(self, server: FakeServer, text: str) -> None:
        """Make the server's next reply the assistant text ``text``."""
        raise NotImplementedError

    @pytest.fixture
    def provider_options(self) -> dict[str, Any]:
        """Options for every provider the suite builds; override to parametrize."""
        return {}

    @pytest.fixture
    def server(self) -> Iterator[FakeServer]:
        with self.make_server() as server:
            yield server

    def spec(self) -> ProviderSpec:
        return PluginHost.default().provider_spec(self.provider_name)

    def provider(self, server: FakeServer, **options: Any) -> Provider:
        settings = ProviderSettings(
            base_url=self.base_url(server), api_key=self.api_key, options=options
        )
        return self.spec().factory(settings)

    def request(self, conversation: Sequence[Any] | None = None) -> ProviderRequest:
        conversation = conversation or [{"role": "user", "content": [_text("hi")]}]
        model = self.model or self.spec().default_model or "test-model"
        return ProviderRequest(model=model, messages=load_messages(list(conversation)))

    def config(self, server: FakeServer, **config: Any) -> AgentConfig:
        values: dict[str, Any] = {
            "name": "suite",
            "provider": self.provider_name,
            "model": self.model,
            "base_url": self.base_url(server),
            "api_key": self.api_key,
            "max_retries": 0,
        }
        return AgentConfig(**{**values, **config})

    async def failure(
        self, provider: Provider, streaming: bool, request: ProviderRequest | None = None
    ) -> ProviderError:
        """The ``ProviderError`` a call (or a stream, read to its end) raises; the provider is
        closed after. It is raised once, at the place that knows: no chained exception."""
        try:
            with pytest.raises(ProviderError) as caught:
                if streaming:
                    async for _ in provider.stream(request or self.request()):
                        pass
                else:
                    await provider.complete(request or self.request())
        finally:
            await provider.aclose()
        assert caught.value.__context__ is None and caught.value.__cause__ is None
        return caught.value


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


# ------------------------------------------------------------------------------------- spec

#: A value of each type an option may declare, for the type checks below.
_OPTION_SAMPLES: dict[object, object] = {
    str: "x",
    float: 0.5,
    int: 3,
    bool: True,
    dict: {},
    list: [],
}


class SpecSuite(ProviderSuite):
    """What a provider's ``ProviderSpec`` declares to the core, and that the core enforces it.

    Attributes: ``key_variables`` (the environment variables the key is read from, in order)
    and ``requires_api_key``; ``options_read`` (the ``provider_options`` the provider reads),
    with ``options_exact`` (the spec declares exactly those; False: at least those) and
    ``body_fields`` (request-body fields the spec also accepts); ``misspelt_option``
    (``(misspelling, value, the option suggested)``); ``option_types`` (option name to the
    type the service documents, as ``OptionSpec.type_name`` reads it: ``"int"``,
    ``"str or list"``; written from the service's reference, never from the spec). The
    missing-key check (left out when ``requires_api_key`` is False) runs against
    ``make_server()`` and checks no request is sent.
    """

    key_variables: tuple[str, ...] = ()
    requires_api_key: bool = True
    options_read: Collection[str] = ()
    options_exact: bool = True
    body_fields: Collection[str] = ()
    misspelt_option: tuple[str, Any, str] = ("", None, "")
    option_types: ClassVar[Mapping[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.requires_api_key:
            _leave_out(cls, ["test_a_missing_key_raises_when_the_run_starts_before_any_request"])

    def test_the_spec_names_its_key_variables(self) -> None:
        spec = self.spec()
        assert spec.requires_api_key is self.requires_api_key
        assert spec.key_variables == self.key_variables

    def test_the_spec_accepts_the_options_the_provider_reads(self) -> None:
        declared = set(self.spec().provider_options or ())
        if self.options_exact:
            assert declared == set(self.options_read)
        assert set(self.options_read) <= declared
        assert set(self.body_fields) <= declared

    def test_a_misspelt_option_raises_when_the_agent_is_built(self) -> None:
        given, value, meant = self.misspelt_option
        options = {given: value}
        with pytest.raises(UnknownOptionError, match=f"did you mean '{meant}'"):
            Agent(AgentConfig(name="a", provider=self.provider_name, provider_options=options))

    def test_the_options_have_the_types_the_service_documents(self) -> None:
        declared: Mapping[str, OptionSpec] = self.spec().provider_options or {}
        found = {name: declared[name].type_name for name in self.option_types if name in declared}
        assert found == dict(self.option_types), "declared types differ from the documented"

    def test_each_typed_option_takes_its_type_and_refuses_another(self) -> None:
        """A value of an option's declared type builds an agent; a value of another type
        is an ``OptionTypeError`` naming the option, before any request."""
        declared: Mapping[str, OptionSpec] = self.spec().provider_options or {}
        checked = 0
        for option in declared.values():
            kinds = option.type if isinstance(option.type, tuple) else (option.type,)
            if kinds[0] not in _OPTION_SAMPLES:  # any type, or one with no sample (a callable)
                continue
            good = {option.name: _OPTION_SAMPLES[kinds[0]]}
            Agent(AgentConfig(name="a", provider=self.provider_name, provider_options=good))
            wrong = next(v for v in _OPTION_SAMPLES.values() if not option.accepts(v))
            with pytest.raises(OptionTypeError, match=option.name):
                bad = {option.name: wrong}
                Agent(AgentConfig(name="a", provider=self.provider_name, provider_options=bad))
            checked += 1
        assert checked or not declared, "no typed option to check"

    def test_a_missing_key_raises_when_the_run_starts_before_any_request(
        self, server: FakeServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for name in self.key_variables:
            monkeypatch.delenv(name, raising=False)
        agent = Agent(self.config(server, api_key=None))
        with pytest.raises(MissingKeyError, match=" or ".join(self.key_variables)):
            agent.run_sync("hi")
        assert server.requests == []


# ------------------------------------------------------------------------------------ faults


class FaultSuite(ProviderSuite):
    """Faults on the wire become ``ProviderError`` with the right status, retryability and
    retry-after, on the complete and the stream paths, and the core's retry ladder sends
    exactly the expected requests.

    Attributes: ``server_error_statuses`` (5xx the service sends, each retryable);
    ``stream_errors`` (``(error type, status_code, retryable)`` of error events inside a
    stream, as ``server.error_event`` takes the type; empty: that check is left out);
    ``unfinished_stream`` (the fault that ends a stream before the protocol says it is
    complete) and ``unfinished_stream_says`` (words its error names); ``server_sent_events``
    (False leaves out the checks that cut a stream). The redirect check sets the headers
    option (``headers_option``) and expects them on the first server only.
    """

    server_error_statuses: tuple[int, ...] = (500, 503)
    stream_errors: tuple[tuple[str, int | None, bool], ...] = ()
    unfinished_stream: Fault = TruncatedStream()
    unfinished_stream_says: str = ""
    server_sent_events: bool = True
    #: The option that adds HTTP headers (None: the redirect check sends none).
    headers_option: str | None = "headers"

    _STREAM_CHECKS = (
        "test_a_stream_cut_mid_body_is_retryable_without_status",
        "test_a_stream_ended_before_its_end_is_retryable",
        "test_an_error_event_mid_stream_keeps_its_status_and_the_text_before_it",
        "test_a_slow_stream_still_arrives_whole",
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.server_sent_events:
            _leave_out(cls, cls._STREAM_CHECKS)
        elif not cls.stream_errors:
            _leave_out(
                cls, ["test_an_error_event_mid_stream_keeps_its_status_and_the_text_before_it"]
            )

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """Parametrize by the plugin's attributes (known only once subclassed)."""
        if "server_error" in metafunc.fixturenames:
            statuses = self.server_error_statuses
            metafunc.parametrize("server_error", statuses, ids=[str(s) for s in statuses])
        if "stream_error" in metafunc.fixturenames:
            errors = self.stream_errors
            metafunc.parametrize("stream_error", errors, ids=[e[0] for e in errors])

    @_STREAMING
    async def test_429_is_retryable_after_its_retry_after(
        self, server: FakeServer, provider_options: dict[str, Any], streaming: bool
    ) -> None:
        server.enqueue(HTTPError(429, "slow down", retry_after=7))
        error = await self.failure(self.provider(server, **provider_options), streaming)
        assert (error.status_code, error.retryable, error.retry_after) == (429, True, 7.0)
        assert "slow down" in error.message
        assert error.provider == self.spec().display_name
        assert len(server.requests) == 1  # the SDK's own retries are off

    @_STREAMING
    async def test_400_is_not_retryable(
        self, server: FakeServer, provider_options: dict[str, Any], streaming: bool
    ) -> None:
        server.enqueue(HTTPError(400, "bad request"))
        error = await self.failure(self.provider(server, **provider_options), streaming)
        assert (error.status_code, error.retryable) == (400, False)

    @_STREAMING
    async def test_server_errors_are_retryable(
        self,
        server: FakeServer,
        provider_options: dict[str, Any],
        streaming: bool,
        server_error: int,
    ) -> None:
        server.enqueue(HTTPError(server_error))
        error = await self.failure(self.provider(server, **provider_options), streaming)
        assert (error.status_code, error.retryable) == (server_error, True)
        assert len(server.requests) == 1

    async def test_the_sdk_does_not_retry_on_its_own(
        self, server: FakeServer, provider_options: dict[str, Any]
    ) -> None:
        status = self.server_error_statuses[0]
        server.enqueue(HTTPError(status), HTTPError(status))
        await self.failure(self.provider(server, **provider_options), False)
        assert len(server.requests) == 1

    @_STREAMING
    @pytest.mark.parametrize("stage", ["before_response", "after_headers", "mid_body"])
    async def test_a_dropped_connection_is_retryable_without_status(
        self, server: FakeServer, provider_options: dict[str, Any], streaming: bool, stage: Any
    ) -> None:
        server.enqueue(DropConnection(stage))
        error = await self.failure(self.provider(server, **provider_options), streaming)
        assert (error.status_code, error.retryable) == (None, True)
        assert await server.async_wait_idle(timeout=2.0), "a connection was left open"

    async def test_nothing_listening_is_a_retryable_error_without_status(
        self, provider_options: dict[str, Any]
    ) -> None:
        with self.make_server() as closed:
            provider = self.provider(closed, **provider_options)
        error = await self.failure(provider, False)
        assert (error.status_code, error.retryable) == (None, True)

    async def test_a_stream_cut_mid_body_is_retryable_without_status(
        self, server: FakeServer, provider_options: dict[str, Any]
    ) -> None:
        self.script_text(server, "several words of a reply")
        server.enqueue(TruncatedStream(after_events=3, abort=True))
        error = await self.failure(self.provider(server, **provider_options), True)
        assert (error.status_code, error.retryable) == (None, True)
        assert await server.async_wait_idle(timeout=2.0), "a connection was left open"

    async def test_a_stream_ended_before_its_end_is_retryable(
        self, server: FakeServer, provider_options: dict[str, Any]
    ) -> None:
        self.script_text(server, "several words of a reply")
        server.enqueue(self.unfinished_stream)
        error = await self.failure(self.provider(server, **provider_options), True)
        assert (error.status_code, error.retryable) == (None, True)
        assert self.unfinished_stream_says in error.message
        assert await server.async_wait_idle(timeout=2.0), "a connection was left open"

    async def test_an_error_event_mid_stream_keeps_its_status_and_the_text_before_it(
        self,
        server: FakeServer,
        provider_options: dict[str, Any],
        stream_error: tuple[str, int | None, bool],
    ) -> None:
        error_type, status, retryable = stream_error
        self.script_text(server, "several words of a reply that will be cut")
        server.enqueue(ErrorMidStream(3, error_type, "the service's own words"))
        provider = self.provider(server, **provider_options)
        seen: list[str] = []
        try:
            with pytest.raises(ProviderError) as caught:
                async for event in provider.stream(self.request()):
                    if isinstance(event, TextDelta):
                        seen.append(event.text)
        finally:
            await provider.aclose()
        assert seen, "the text before the error still arrives"
        error = caught.value
        assert (error.status_code, error.retryable) == (status, retryable)
        assert "the service's own words" in error.message

    async def test_a_slow_stream_still_arrives_whole(
        self, server: FakeServer, provider_options: dict[str, Any]
    ) -> None:
        self.script_text(server, "slowly but surely")
        server.enqueue(SlowStream(event_delay=0.01))
        provider = self.provider(server, **provider_options)
        try:
            events: list[Any] = [e async for e in provider.stream(self.request())]
        finally:
            await provider.aclose()
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "slowly but surely"
        assert events[-1].response.message.content[0].text == "slowly but surely"

    @_STREAMING
    async def test_a_redirect_is_refused_and_the_other_host_gets_nothing(
        self, server: FakeServer, provider_options: dict[str, Any], streaming: bool
    ) -> None:
        options = dict(provider_options)
        if self.headers_option:
            options[self.headers_option] = {"Helicone-Auth": "Bearer helicone-secret"}
        with self.make_server() as elsewhere:
            port = elsewhere.port
            server.enqueue(Redirect(f"{elsewhere.url}/x?token=redirect-secret"))
            error = await self.failure(self.provider(server, **options), streaming)
            assert elsewhere.total_connections == 0 and elsewhere.requests == []
        assert (error.status_code, error.retryable) == (307, False)
        assert f"HTTP 307) to 127.0.0.1:{port}" in error.message
        assert "redirect-secret" not in error.message
        assert len(server.requests) == 1
        if self.headers_option:
            assert server.requests[0].headers["helicone-auth"] == "Bearer helicone-secret"

    async def _run(
        self, server: FakeServer, streaming: bool, options: dict[str, Any], **config: Any
    ) -> Any:
        config.setdefault("retry_delay", 0.01)
        async with Agent(self.config(server, provider_options=options, **config)) as agent:
            if streaming:
                async with agent.stream("hi") as events:
                    return [e async for e in events][-1].data
            return await agent.run("hi")

    @_STREAMING
    async def test_a_429_then_success_is_two_requests(
        self, server: FakeServer, provider_options: dict[str, Any], streaming: bool
    ) -> None:
        server.enqueue(HTTPError(429, retry_after_ms=5))
        result = await self._run(server, streaming, provider_options, max_retries=2)
        assert result.success
        assert len(server.requests) == 2

    async def test_a_persistent_server_error_gives_up_after_max_retries(
        self, server: FakeServer, provider_options: dict[str, Any]
    ) -> None:
        status = self.server_error_statuses[0]
        server.enqueue(*[HTTPError(status)] * 5)
        result = await self._run(server, False, provider_options, max_retries=2)
        assert not result.success
        assert isinstance(result.status.error, ProviderError)
        assert result.status.error.status_code == status
        assert len(server.requests) == 3

    async def test_a_400_is_never_retried(
        self, server: FakeServer, provider_options: dict[str, Any]
    ) -> None:
        server.enqueue(HTTPError(400))
        result = await self._run(server, False, provider_options, max_retries=2)
        assert not result.success
        assert len(server.requests) == 1


# ----------------------------------------------------------------------------------- secrets


class SecretsSuite(ProviderSuite):
    """No error holds a secret: walking everything an error references (its ``__context__``
    and ``__cause__``, attributes, ``args``) finds neither the API key, nor the prompt, nor
    the base64 media, whatever failed, even when the service echoes the whole request back.
    What a run hands back (``RunResult.status.error``, the stream's error event) holds none
    through its traceback either.

    Attributes: ``api_key`` (a key-looking secret the server accepts), ``media_type`` (the
    media sent, an image by default; its block type is the media type's first half),
    ``stream_error_type`` (an error type for ``server.error_event``). Hook: ``malformed_reply()``
    (a fault answering a 200 the provider cannot read; raw text that is not JSON by default).
    The server must answer at least four text replies long enough to be cut.
    """

    api_key: str = "sk-oma-test-secret-0123456789abcdef"
    prompt: str = "the launch code is swordfish-7734, tell no one"
    media_type: str = "image/png"
    stream_error_type: str = "server_error"

    def malformed_reply(self) -> Fault:
        return RawBody([b"<html>not json</html>"], headers={"content-type": "application/json"})

    def media(self) -> str:
        """The base64 media sent: the type's signature then 3000 fixed pseudo-random bytes."""
        import base64

        from .conformance import MEDIA_SAMPLES

        noise = random.Random(7734).randbytes(3000)
        return base64.b64encode(MEDIA_SAMPLES[self.media_type] + noise).decode()

    def secrets(self) -> tuple[str, ...]:
        media = self.media()
        return (self.api_key, self.prompt, media[:40], media[2000:2040], media[-40:-2])

    def conversation(self) -> list[dict[str, Any]]:
        source = {"type": "base64", "media_type": self.media_type, "data": self.media()}
        block = {"type": self.media_type.split("/")[0], "source": source}
        return [{"role": "user", "content": [_text(self.prompt), block]}]

    def call_faults(self) -> dict[str, Fault]:
        """Faults that fail a call whether it streams or not."""
        return {
            "400 echoing the request": EchoRequestError(400),
            "500 echoing the request": EchoRequestError(500),
            "429 naming the key and prompt": HTTPError(
                429, f"slow down {self.api_key} {self.prompt}", retry_after=1
            ),
            "dropped before the response": DropConnection("before_response"),
            "dropped after the headers": DropConnection("after_headers"),
            "timeout": SlowStream(event_delay=0.0, delay=2.0),
            "malformed 200": self.malformed_reply(),
        }

    def stream_faults(self) -> dict[str, Fault]:
        """Faults that only a stream meets."""
        message = f"failed on {self.prompt} with {self.api_key}"
        return {
            "error event echoing the prompt": ErrorMidStream(3, self.stream_error_type, message),
            "stream cut mid-body": TruncatedStream(after_events=3, abort=True),
            "stream ended early": TruncatedStream(after_events=3),
        }

    #: checks run on the stream path too (with the stream-only faults); the rest on ``run_agent``
    _ON_BOTH_PATHS = (
        "test_a_provider_error_holds_no_key_prompt_or_media",
        "test_an_agent_run_result_error_holds_no_secret",
    )

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """Parametrize by the faults (known only once subclassed)."""
        if "fault_case" not in metafunc.fixturenames:
            return
        cases = [(n, False) for n in self.call_faults()]
        if metafunc.function.__name__ in self._ON_BOTH_PATHS:
            cases += [(n, True) for n in self.call_faults()]
            cases += [(n, True) for n in self.stream_faults()]
        ids = [f"{'stream' if s else 'complete'}: {n}" for n, s in cases]
        metafunc.parametrize("fault_case", cases, ids=ids)

    @pytest.fixture
    def secret_server(self) -> Iterator[FakeServer]:
        with self.make_server() as server:
            for i in range(4):
                self.script_text(server, f"a reply long enough to be cut {i}")
            yield server

    def _fault(self, name: str) -> Fault:
        return {**self.call_faults(), **self.stream_faults()}[name]

    async def test_a_provider_error_holds_no_key_prompt_or_media(
        self,
        secret_server: FakeServer,
        provider_options: dict[str, Any],
        fault_case: tuple[str, bool],
    ) -> None:
        name, streaming = fault_case
        secret_server.enqueue(self._fault(name))
        provider = self.provider(secret_server, timeout=0.5, **provider_options)
        error = await self.failure(provider, streaming, self.request(self.conversation()))
        assert_holds_no_secret(error, *self.secrets())

    async def test_an_agent_run_result_error_holds_no_secret(
        self,
        secret_server: FakeServer,
        provider_options: dict[str, Any],
        fault_case: tuple[str, bool],
    ) -> None:
        name, streaming = fault_case
        secret_server.enqueue(self._fault(name))
        options = {"timeout": 0.5, **provider_options}
        async with Agent(self.config(secret_server, provider_options=options)) as agent:
            if streaming:
                async with agent.stream(self.conversation()) as events:
                    seen = [e async for e in events]
                [error_event] = [e for e in seen if e.type == "error"]
                assert_holds_no_secret(error_event.data, *self.secrets(), tracebacks=True)
                result = seen[-1].data
            else:
                result = await agent.run(self.conversation())
        assert not result.success
        assert_holds_no_secret(result.status.error, *self.secrets(), tracebacks=True)

    async def test_a_run_agent_result_error_holds_no_secret(
        self,
        secret_server: FakeServer,
        provider_options: dict[str, Any],
        fault_case: tuple[str, bool],
    ) -> None:
        name, _ = fault_case
        secret_server.enqueue(self._fault(name))
        options = {"timeout": 0.5, **provider_options}
        config = self.config(secret_server, provider_options=options)
        async with OpenMultiAgent() as oma:
            result = await oma.run_agent(config, self.conversation())
        assert not result.success
        assert_holds_no_secret(result.status.error, *self.secrets(), tracebacks=True)

    async def test_the_echo_did_reach_the_error_path(
        self, secret_server: FakeServer, provider_options: dict[str, Any]
    ) -> None:
        """The key went out and the fault really sent the secrets back: the checks above
        are not vacuous."""
        secret_server.enqueue(EchoRequestError(400))
        provider = self.provider(secret_server, **provider_options)
        error = await self.failure(provider, False, self.request(self.conversation()))
        assert error.status_code == 400
        assert "could not process" in error.message
        [sent] = secret_server.requests
        assert any(self.api_key in value for value in sent.headers.values())
        assert self.media()[2000:2040].encode() in sent.body.replace(b"\\/", b"/")


# --------------------------------------------------------------------------------- scrubbing


class ScrubbingSuite:
    """Property: whatever the prompt, an error message built from a service's echo of the
    request (the toolkit's ``scrub`` with its ``request_secrets``) quotes neither the prompt
    (raw or JSON-escaped, as an echoed body carries it) nor the key; and a scrubbed message
    stays short. Attribute: ``api_key``, a key in the plugin's own format."""

    api_key: str = "sk-oma-property-secret-0123456789"

    def test_an_echoed_prompt_never_survives_scrubbing(self) -> None:
        from hypothesis import given, settings
        from hypothesis import strategies as st

        from ..http import request_secrets, scrub

        # secrets made of brackets or dots could be spelled by the markers scrubbing inserts
        prompts = st.text(
            alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="[].\\"),
            min_size=8,
            max_size=60,
        )
        noise = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40)
        key = self.api_key

        @settings(max_examples=200, deadline=None)
        @given(prompt=prompts, before=noise, after=noise, ascii_only=st.booleans())
        def check(prompt: str, before: str, after: str, ascii_only: bool) -> None:
            messages = load_messages([{"role": "user", "content": [_text(prompt)]}])
            request = ProviderRequest(
                model="m", messages=messages, system_prompt="keep it short please"
            )
            body = json.dumps(
                {"messages": [{"role": "user", "content": prompt}]}, ensure_ascii=ascii_only
            )
            echo = f"{before} could not process authorization: Bearer {key} {body} {after}"
            message = scrub(echo, request_secrets(request, key))
            assert prompt not in message
            assert json.dumps(prompt, ensure_ascii=ascii_only)[1:-1] not in message
            assert key not in message

        check()

    def test_scrubbing_keeps_messages_short(self) -> None:
        from hypothesis import given, settings
        from hypothesis import strategies as st

        from ..http import scrub

        @settings(max_examples=100, deadline=None)
        @given(text=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40))
        def check(text: str) -> None:
            assert len(scrub(text * 50)) <= 303

        check()
