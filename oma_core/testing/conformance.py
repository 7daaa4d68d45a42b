"""The provider conformance suite: what every provider plugin proves against its fake server.

A plugin subclasses ``ProviderConformance`` in its tests, names its provider, supplies a
``server`` fixture (its fake server, a ``FakeServer`` subclass) and three small hooks, and
inherits every ``test_...`` method. A worked example, for a plugin whose wire is Anthropic's
Messages API (``tests/fake_anthropic.py`` holds the fake server, written from the provider's
documentation)::

    # tests/conftest.py
    pytest_plugins = ["oma_core.testing.pytest_plugin"]   # the fake_server_factory fixture

    # tests/test_conformance.py
    from typing import Any, ClassVar

    import pytest
    from fake_anthropic import FakeAnthropic

    from oma_core.testing import RecordedRequest
    from oma_core.testing.conformance import ProviderConformance, Sample


    class TestAnthropicConformance(ProviderConformance):
        provider_name = "anthropic"                 # the registered provider name

        @pytest.fixture
        def server(self, fake_server_factory: Any) -> FakeAnthropic:
            return fake_server_factory(FakeAnthropic)

        def script_text(self, server: FakeAnthropic, text: str) -> None:
            server.reply_text(text)                 # the next reply is this text

        def script_tool_call(self, server, call_id, name, arguments) -> None:
            server.reply_tool_use(call_id, name, arguments)

        def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
            message, index, part = sample.locator   # where sample.block sits
            sent = request.json["messages"][message]["content"][index]
            if part is not None:                    # a part inside a tool result
                sent = sent["content"][part]
            assert sent["type"] == {"reasoning": "thinking", "file": "document"}.get(
                sample.block_type, sample.block_type
            )

Hooks a plugin may override when its wire differs from the defaults:

- ``base_url(server)``: what ``AgentConfig.base_url`` is set to, in the SDK's meaning (the
  server root by default; Chat Completions SDKs want ``server.url + "/v1"``);
- ``forwarded_refusal_status``: blocks the plugin *forwards* (``Mode.FORWARDED``) are judged
  by the service; when the fake server, like the real one, refuses them, set the status it
  answers with (e.g. 400) and the suite expects that ``ProviderError`` instead of a success
  (``expected_refusal(sample)`` decides per sample);
- ``encode_body(body)``: the bytes the SDK puts on the wire for a rendered body (compact
  UTF-8 JSON by default), held equal to what the server received;
- ``transient_stream_error``: the error type the fake server's ``error_event`` uses for a
  transient failure inside a stream (``"overloaded_error"`` by default);
- ``unbounded_transport``: the reason a bridge cannot hold its library's client to the
  toolkit's bounds (the redirect and size checks are then left out, not collected);
- ``server_sent_events``: whether the provider streams server-sent events (True by default;
  a binary event stream, as Bedrock's, sets False and leaves out the SSE-only hostile replies);
- ``tool_choices``, ``tool_error_flag``, ``render_is_the_wire``, ``tool_call_ids``,
  ``stop_reasons``, ``streams_tool_arguments``, ``media_apart_from_text``,
  ``final_event_errors``, ``stop_sequences``: what the wire can say (see each attribute, and
  ``docs/testing-plugins.md``);
- ``script_reasoning(server, reasoning, *, text, call)``: the service issues signed reasoning
  and the provider echoes it; the reasoning-provenance checks
  (``oma_core.testing.reasoning_checks``) then run.

Two more hooks check the *mapping* of whole requests and replies; every bundled plugin's kit
supplies both (oma-anthropic's ``tests/test_anthropic_conformance.py`` in full). The example
above leaves them out to stay short, and so leaves those checks out, with a warning:

- ``read_request(body) -> NeutralRequest``: the wire reader, written from the service's
  documentation: what the service understands from a JSON body, in the core's terms. The kit
  sends requests with tools, sampling settings, a system prompt, history and every tool-result
  shape, and compares what the server received, so read, with what the core asked for
  (``oma_core.testing.neutral``); it holds the reader itself to ``render``;
- ``script_reply(server, ScriptedReply)``: a reply with known text, calls (ids optional),
  usage and stop reason, in the service's shape; the kit checks usage, stop reasons and the
  ids the provider makes for calls that came without.

What the fake server must do for the suite (``docs/testing-plugins.md`` states it in full):
answer queued replies (``script_text`` / ``script_tool_call``) and, with none queued, a default
text reply, with usage above zero; stream a text reply in at least four events, with a
recognisable end; give the provider's error shapes in
``error_response`` / ``error_event`` (``transient_stream_error`` must be retryable); refuse
what the service refuses; serve requests concurrently over keep-alive connections; and raise
nothing from ``handle`` (``handler_errors``).

The tests drive the real path, ``Agent(AgentConfig(provider=NAME, base_url=..., ...))`` and
``OpenMultiAgent.run_agent`` over HTTP to the fake server, and check: every block the provider
declares (its ``Capabilities``) reaches the wire in the provider's shape; every block it does
not declare is refused with ``UnsupportedContentBlockError`` and no request is sent; invalid
input never reaches the wire; streaming and non-streaming agree; usage is reported; HTTP
errors map to ``ProviderError`` with the right ``status_code``, ``retryable`` and
``retry_after``; with the core's retries on, exactly the expected number of requests reach the
server (429 with retry-after, 500, 529, a connection dropped mid-body, an error event
mid-stream, a truncated stream), and with them off exactly one (the SDK's own retries are
off); error messages hold no API key and no base64 payload, even when the service echoes the
request; a cancelled stream closes its connection; 200 concurrent runs all complete with at
least 50 in flight; ``render`` is, byte for byte, what reaches the wire. Hostile replies: a
redirect is refused (not followed, not retried); a gzip bomb stops at ``max_response_bytes``
in bounded memory; an endless event stops at ``max_event_bytes``; a reply that never starts,
or a stream that goes silent, fails with an error naming the timeout that fired; a complete
stream the server keeps open with keep-alive comments ends at its last event; a stream that
is not UTF-8 is a malformed response. With the wire reader, several blocks of each declared
type in one turn and in one tool result, and a long conversation mixing them, arrive all and
in order (``oma_core.testing.crowded``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import attrs
import pytest

from .._settings import RunSettings
from ..agent import Agent, AgentConfig, RunResult
from ..capabilities import Capabilities, Mode, ProviderSpec
from ..errors import InvalidMessageError, ProviderError, UnsupportedContentBlockError
from ..messages import thaw_json
from ..plugins import PluginHost
from ..providers import (
    Provider,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from ..validation import load_messages
from .cache_checks import CacheConformance
from .crowded import crowded_conversations
from .fake_server import (
    Delay,
    DropConnection,
    EchoRequestError,
    ErrorInFinalEvent,
    ErrorMidStream,
    FakeServer,
    Fault,
    HTTPError,
    RawBody,
    RecordedRequest,
    Redirect,
    Response,
    SlowStream,
    TruncatedStream,
    endless,
    gzip_bomb,
    keep_alive_after,
)
from .kit_requests import KitRequest, kit_requests, kit_tools, streamed_calls
from .neutral import NeutralRequest, ScriptedCall, ScriptedReply, differences
from .output_checks import OutputConformance
from .reasoning_checks import ReasoningConformance
from .samples import MEDIA_SAMPLES, Sample, declared, samples

__all__ = ["MEDIA_SAMPLES", "ProviderConformance", "Sample", "declared", "samples"]


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user(*blocks: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


_INVALID_INPUTS: tuple[Any, ...] = (
    [],
    [{"role": "system", "content": [_text("x")]}],
    [{"role": "user", "content": "not a list"}],
    [_user({"type": "image", "source": {"type": "url", "media_type": "image/png",
                                        "url": "file:///etc/passwd"}})],
    [_user({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": "not base64!"}})],
    [_user({"type": "text", "text": "x", "magic": True})],
    [_user({"type": "tool_use", "id": "a", "name": "b", "input": {}})],
)  # fmt: skip


class ProviderConformance(OutputConformance, ReasoningConformance, CacheConformance):
    """Inherit in a ``Test...`` class; see the module docstring. Not collected by itself.

    The structured-output checks come from ``OutputConformance`` (``output_modes``), the
    reasoning-provenance ones from ``ReasoningConformance`` (``script_reasoning``), the
    prompt-caching ones from ``CacheConformance`` (``cache_markers``, ``cache_usage``)."""

    #: The registered provider name (an entry point of the ``oma`` group).
    provider_name: str = ""
    #: The model sent; None lets the provider's default stand.
    model: str | None = None
    api_key: str = "test-key"
    #: The status the fake server answers a *forwarded* block with, when it refuses it as the
    #: real service does (e.g. 400); None: forwarded blocks are accepted like native ones.
    forwarded_refusal_status: int | None = None
    #: The error type ``server.error_event`` takes for a transient failure inside a stream.
    transient_stream_error: str = "overloaded_error"
    #: The ``provider_options`` that choose how tools are used, by what they mean (``"auto"``,
    #: ``"none"``, ``"required"`` or a tool's name), e.g. ``{"required": {"tool_choice":
    #: "required"}}``: the kit sends each and the reader must see its meaning. Required when
    #: the provider declares a ``tool_choice`` option.
    tool_choices: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    #: Whether the service gives tool calls ids: ``"always"``; ``"sometimes"`` (the kit also
    #: scripts calls without ids and checks that the provider makes unique, non-empty ones);
    #: ``"never"`` (that check only: the check that a scripted id comes back is left out).
    tool_call_ids: str = "always"
    #: Whether the wire has an error flag on tool results. False: an error result must
    #: still reach the service as an error, in its text (e.g. ``"Error: ..."``).
    tool_error_flag: bool = True
    #: Whether the wire keeps a turn's media apart from its text (Ollama's ``images`` beside
    #: ``content``): where each image sat among the texts is then not compared, only that
    #: every one arrives, in order.
    media_apart_from_text: bool = False
    #: The stop reasons the service's wire tells apart, in oma's vocabulary: the kit scripts
    #: each and the provider must report it (a service without a "tool use" reason drops it).
    stop_reasons: tuple[str, ...] = ("end_turn", "max_tokens", "tool_use")
    #: Whether the provider streams a tool call's arguments as ``ToolCallDelta`` pieces (its
    #: wire sends them in pieces): the kit then requires pieces for every streamed call. Pieces
    #: a provider emits are always held to their call, whatever this says.
    streams_tool_arguments: bool = False
    #: Whether the service's final stream event can say the generation failed (Cohere's
    #: ``message-end`` with ``finish_reason: "ERROR"``): the fake server then writes that
    #: event in ``error_final_event(message)``, and the kit checks the provider raises it
    #: (``oma_core.toolkit.final_event_error``: retryable, the service's text kept).
    final_event_errors: bool = False
    #: Whether the wire takes stop sequences. False (OpenAI's Responses API, which has none):
    #: the kit's mapping requests are sent without ``stop`` (``kit_requests``), and the reader
    #: is not asked to read one.
    stop_sequences: bool = True

    # -- what a plugin supplies ------------------------------------------------------------

    def read_request(self, body: Mapping[str, Any]) -> NeutralRequest:
        """The wire reader: what the service understands from the JSON ``body``, in the core's
        terms, written from the service's documentation (never from the plugin's code).

        Without it the kit's request-mapping checks are left out (with a warning).
        """
        raise NotImplementedError

    def script_reply(self, server: Any, reply: ScriptedReply) -> None:
        """Make the server's next reply ``reply`` (text, calls, usage, stop reason) in the
        service's shape. Without it the kit's reply-mapping checks are left out (with a
        warning)."""
        raise NotImplementedError

    def script_text(self, server: Any, text: str) -> None:
        """Make the server's next reply an assistant text."""
        raise NotImplementedError

    def script_tool_call(
        self, server: Any, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        """Make the server's next reply one tool call."""
        raise NotImplementedError

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        """Assert that ``sample.block`` reached the wire in this provider's shape."""
        raise NotImplementedError

    # -- helpers a plugin may use or override ------------------------------------------------

    def base_url(self, server: FakeServer) -> str:
        """``AgentConfig.base_url`` for ``server``, in the SDK's meaning (default: its root)."""
        return server.url

    def expected_refusal(self, sample: Sample) -> int | None:
        """The HTTP status the server answers ``sample`` with, or None when it must succeed.

        By default a forwarded block gets ``forwarded_refusal_status`` and a native one None.
        """
        capabilities = self.spec().capabilities
        mode = capabilities.mode(sample.block_type, sample.where, sample.source)
        return self.forwarded_refusal_status if mode is Mode.FORWARDED else None

    def refused_for_the_model(self, sample: Sample) -> bool:
        """Whether the provider refuses the *declared* ``sample`` before any request for the
        suite's ``model`` (a bridge whose blocks depend on the model, e.g. LiteLLM's model map
        for PDFs and audio). The kit then checks that refusal instead of the wire. False by
        default."""
        return False

    #: Whether ``render`` gives the wire's body (False for a bridge whose library translates
    #: it, e.g. LiteLLM's ``anthropic/`` route): the reader is then checked on the wire only.
    render_is_the_wire = True
    #: Whether the provider streams server-sent events (the SSE-only hostile replies run).
    server_sent_events = True
    #: Why the provider's transport cannot refuse redirects and bound replies (a bridge whose
    #: library builds its own client), or None: the redirect and size checks are left out.
    unbounded_transport: str | None = None

    #: Checks of a server-sent-event stream (a binary event stream's frames are checked
    #: before anything is inflated or decoded).
    _SSE_CHECKS = (
        "test_a_compression_bomb_in_a_stream_stops_at_the_body_limit",
        "test_an_endless_event_stops_at_the_event_limit",
        "test_a_complete_stream_kept_open_ends_at_its_last_event",
        "test_a_complete_stream_kept_open_is_no_timeout_for_the_run",
        "test_a_stream_that_is_not_utf8_is_a_malformed_response",
    )
    #: Checks of the toolkit's bounds (redirects, sizes, timeouts).
    _BOUNDS_CHECKS = (
        "test_a_redirect_is_refused_not_followed_and_not_retried",
        "test_a_compression_bomb_stops_at_the_body_limit_in_bounded_memory",
        "test_a_compression_bomb_in_a_stream_stops_at_the_body_limit",
        "test_an_endless_event_stops_at_the_event_limit",
        "test_a_reply_that_never_starts_fails_naming_the_first_byte_timeout",
        "test_a_stream_that_goes_silent_fails_naming_the_idle_timeout",
    )

    #: Checks that need the wire reader (``read_request``).
    _READER_CHECKS = (
        "test_requests_reach_the_service_as_sent",
        "test_several_blocks_of_a_type_arrive_all_and_in_order",
        "test_the_reader_reads_every_field_of_the_rendered_body",
        "test_tool_choice_reaches_the_service",
        "test_results_of_streamed_calls_reach_the_service",
    )
    #: Checks that need scripted replies (``script_reply``).
    _REPLY_CHECKS = (
        "test_results_of_streamed_calls_reach_the_service",
        "test_usage_is_mapped_as_the_service_counts_it",
        "test_stop_reasons_are_mapped",
        "test_tool_calls_without_ids_get_unique_ids",
        "test_tool_argument_pieces_join_to_their_call",
    )
    #: The checks of the request and reply mapping (``_READER_CHECKS`` and ``_REPLY_CHECKS``):
    #: what a kit without ``read_request`` and ``script_reply`` leaves out, so what a plugin's
    #: own test of its kit can require to have run.
    MAPPING_CHECKS: ClassVar[tuple[str, ...]] = tuple(dict.fromkeys(_READER_CHECKS + _REPLY_CHECKS))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Leave out (not skip: a skipped check looks like a pass nobody ran) the checks
        that cannot apply to this provider, as its flags say."""
        super().__init_subclass__(**kwargs)
        left_out: set[str] = set()
        if not cls.server_sent_events:
            left_out.update(cls._SSE_CHECKS)
        if not cls.final_event_errors:
            left_out.add("test_an_error_in_the_final_event_fails_the_stream")
        if cls.unbounded_transport:
            left_out.update(cls._BOUNDS_CHECKS)
        if cls.tool_call_ids not in ("always", "sometimes", "never"):
            raise ValueError(
                f"{cls.__name__}.tool_call_ids = {cls.tool_call_ids!r}: use 'always', "
                "'sometimes' or 'never' (see docs/testing-plugins.md)"
            )
        if cls.tool_call_ids == "always":
            left_out.add("test_tool_calls_without_ids_get_unique_ids")
        elif cls.tool_call_ids == "never":
            left_out.add("test_streaming_and_complete_give_the_same_tool_call")
            if cls.__name__.startswith("Test"):
                warnings.warn(
                    f"{cls.__name__} sets tool_call_ids = 'never': the kit's check "
                    "test_streaming_and_complete_give_the_same_tool_call (a scripted id comes "
                    "back unchanged) is left out; test_tool_calls_without_ids_get_unique_ids "
                    "checks the ids the provider makes instead (see docs/testing-plugins.md)",
                    stacklevel=2,
                )
        left_out.update(cls._reasoning_left_out())
        for mode, mode_checks in cls._MODE_CHECKS.items():
            if mode not in cls.output_modes:
                left_out.update(mode_checks)
        needs = (
            ("read_request", cls._READER_CHECKS + cls._OUTPUT_READER_CHECKS),
            ("script_reply", cls._REPLY_CHECKS + cls._OUTPUT_REPLY_CHECKS),
        )
        for hook, checks in needs:
            if getattr(cls, hook) is getattr(ProviderConformance, hook) and cls.__name__.startswith(
                "Test"
            ):
                warnings.warn(
                    f"{cls.__name__} supplies no {hook}: the kit's checks "
                    f"{sorted(set(checks) - left_out)} are "
                    "left out (see docs/testing-plugins.md)",
                    stacklevel=2,
                )
            if getattr(cls, hook) is getattr(ProviderConformance, hook):
                left_out.update(checks)
        # In a fixed order: the class's attributes are the order pytest collects in, which
        # must be the same in every xdist worker (a set's order is not, across processes).
        for name in sorted(left_out):
            setattr(cls, name, None)
        # A check a base class left out comes back where this class's flags allow it (a
        # base without native output under a preset that has it).
        for name in sorted(cls._managed_checks() - left_out):
            if getattr(cls, name) is None:
                setattr(cls, name, getattr(ProviderConformance, name))

    @classmethod
    def _managed_checks(cls) -> set[str]:
        """Every check ``__init_subclass__`` may leave out."""
        managed = {*cls._SSE_CHECKS, *cls._BOUNDS_CHECKS, *cls._READER_CHECKS}
        managed.update(cls._REASONING_CHECKS)
        managed.update(cls._REPLY_CHECKS, cls._OUTPUT_READER_CHECKS, cls._OUTPUT_REPLY_CHECKS)
        for checks in cls._MODE_CHECKS.values():
            managed.update(checks)
        managed.update(
            (
                "test_an_error_in_the_final_event_fails_the_stream",
                "test_tool_calls_without_ids_get_unique_ids",
                "test_streaming_and_complete_give_the_same_tool_call",
            )
        )
        return managed

    def encode_body(self, body: Mapping[str, Any]) -> bytes:
        """The bytes the SDK sends for the JSON ``body`` (compact UTF-8, key order kept)."""
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()

    def settings(self, server: FakeServer, **options: Any) -> ProviderSettings:
        return ProviderSettings(
            base_url=self.base_url(server), api_key=self.api_key, options=options
        )

    def config(self, server: FakeServer, **config: Any) -> AgentConfig:
        """The ``AgentConfig`` the suite's agents and ``run_agent`` calls use."""
        values: dict[str, Any] = {
            "name": "conformance",
            "provider": self.provider_name,
            "base_url": self.base_url(server),
            "api_key": self.api_key,
            "model": self.model,
            "max_retries": 0,
        }
        values.update(config)
        return AgentConfig(**values)

    def agent(self, server: FakeServer, **config: Any) -> Agent:
        return Agent(self.config(server, **config))

    def provider(self, server: FakeServer, **options: Any) -> Provider:
        return self.spec().factory(self.settings(server, **options))

    def spec(self) -> ProviderSpec:
        return PluginHost.default().provider_spec(self.provider_name)

    def kit_requests(self) -> tuple[KitRequest, KitRequest]:
        """The kit's two mapping requests (``oma_core.testing.kit_requests``) as this wire can
        carry them: without ``stop`` when ``stop_sequences`` is False."""
        kits = kit_requests(self.spec().capabilities)
        if self.stop_sequences:
            return kits
        whole, short = (
            attrs.evolve(k, config={n: v for n, v in k.config.items() if n != "stop"}) for k in kits
        )
        return whole, short

    def request(self, text: str = "hello") -> ProviderRequest:
        messages = load_messages([_user(_text(text))])
        return ProviderRequest(model=self.model or self.spec().default_model, messages=messages)

    async def run(
        self, server: FakeServer, conversation: Sequence[Any], **config: Any
    ) -> RunResult:
        async with self.agent(server, **config) as agent:
            return await agent.run(list(conversation))

    async def _complete_and_stream(
        self, server: FakeServer
    ) -> tuple[ProviderResponse, list[Any], ProviderResponse]:
        """One provider's ``complete`` response, then its stream's events before
        ``ResponseComplete`` and that event's response; the provider is closed after."""
        provider = self.provider(server)
        try:
            whole = await provider.complete(self.request())
            events, final = await _drain(provider, self.request())
        finally:
            await provider.aclose()
        return whole, events, final

    # -- the suite ---------------------------------------------------------------------------

    def test_provider_is_registered_with_its_capabilities(self) -> None:
        spec = self.spec()
        assert spec.name == self.provider_name
        assert isinstance(spec.capabilities, Capabilities)
        assert spec.display_name

    @pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
    async def test_declared_blocks_reach_the_wire(
        self, server: FakeServer, streaming: bool
    ) -> None:
        checked = []
        for sample in _sendable(self.spec().capabilities):
            server.reset()
            async with self.agent(server) as agent:
                result = await _outcome(agent, list(sample.conversation), streaming)
            if self.refused_for_the_model(sample):
                error = result.status.error
                assert isinstance(error, UnsupportedContentBlockError), (sample.id, error)
                assert error.block_type == sample.block_type, sample.id
                assert server.requests == [], f"{sample.id} reached the wire"
                continue
            assert len(server.requests) == 1, sample.id
            self.assert_on_wire(sample, server.requests[0])
            _assert_outcome(result, self.expected_refusal(sample), sample.id)
            checked.append(sample.id)
        assert checked, "the provider declares no block the suite can send"

    async def test_undeclared_blocks_are_refused_before_any_request(
        self, server: FakeServer
    ) -> None:
        capabilities = self.spec().capabilities
        display_name = self.spec().display_name
        for sample in samples():
            if declared(capabilities, sample):
                continue
            server.reset()
            result = await self.run(server, sample.conversation)
            error = result.status.error
            assert isinstance(error, UnsupportedContentBlockError), (sample.id, error)
            assert error.block_type == sample.block_type, sample.id
            assert error.provider == display_name
            assert server.requests == [], f"{sample.id} reached the wire"

    async def test_invalid_messages_never_reach_the_wire(self, server: FakeServer) -> None:
        async with self.agent(server) as agent:
            for bad in _INVALID_INPUTS:
                with pytest.raises(InvalidMessageError):
                    agent.run(bad)
                with pytest.raises(InvalidMessageError):
                    agent.stream(bad)
        assert server.requests == []

    async def test_streaming_and_complete_give_the_same_text_reply(
        self, server: FakeServer
    ) -> None:
        text = "The quick brown fox jumps over the lazy dog, twice."
        self.script_text(server, text)
        self.script_text(server, text)
        whole, deltas, final = await self._complete_and_stream(server)
        assert final == whole
        assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == text
        assert [b.type for b in whole.message.content] == ["text"]

    async def test_streaming_and_complete_give_the_same_tool_call(self, server: FakeServer) -> None:
        arguments = {"city": "Paris", "days": 3, "units": ["C"], "nested": {"a": None}}
        self.script_tool_call(server, "call_42", "forecast", arguments)
        self.script_tool_call(server, "call_42", "forecast", arguments)
        whole, events, final = await self._complete_and_stream(server)
        assert final == whole
        calls = [e.block for e in events if isinstance(e, ToolCall)]
        assert [c.id for c in calls] == ["call_42"]
        assert calls[0].name == "forecast"
        assert thaw_json(calls[0].input) == arguments
        assert calls[0] in whole.message.content

    async def test_agent_run_and_stream_give_the_same_result(self, server: FakeServer) -> None:
        self.script_text(server, "same either way")
        self.script_text(server, "same either way")
        async with self.agent(server) as agent:
            ran = await agent.run("hi")
            async with agent.stream("hi") as events:
                streamed = [e async for e in events]
        done = streamed[-1].data
        assert ran.success and done.success
        assert ran.output == done.output == "same either way"
        assert ran.messages == done.messages
        assert ran.usage == done.usage

    async def test_usage_is_reported(self, server: FakeServer) -> None:
        whole, _, final = await self._complete_and_stream(server)
        for response in (whole, final):
            assert response.usage.input_tokens > 0
            assert response.usage.output_tokens > 0

    @pytest.mark.parametrize(
        ("status", "retryable"), [(400, False), (401, False), (404, False), (429, True),
                                  (500, True), (503, True)]
    )  # fmt: skip
    async def test_http_errors_map_to_provider_error(
        self, server: FakeServer, status: int, retryable: bool
    ) -> None:
        for streaming in (False, True):
            server.enqueue(HTTPError(status, message="scripted failure"))
            error = await _failure(self.provider(server), self.request(), streaming)
            assert error.status_code == status
            assert error.retryable is retryable
            assert error.provider == self.spec().display_name

    async def test_retry_after_headers_are_parsed(self, server: FakeServer) -> None:
        server.enqueue(HTTPError(429, retry_after=3))
        error = await _failure(self.provider(server), self.request(), False)
        assert error.retry_after == 3.0
        server.enqueue(HTTPError(429, retry_after=3, retry_after_ms=1500))
        error = await _failure(self.provider(server), self.request(), True)
        assert error.retry_after == 1.5

    async def test_dropped_connection_is_a_retryable_error_without_status(
        self, server: FakeServer
    ) -> None:
        for stage in ("before_response", "mid_body"):
            for streaming in (False, True):
                server.enqueue(DropConnection(stage))
                error = await _failure(self.provider(server), self.request(), streaming)
                assert error.status_code is None, (stage, streaming)
                assert error.retryable is True, (stage, streaming)

    @pytest.mark.parametrize("streaming", [False, True])
    async def test_retries_send_exactly_the_expected_requests(
        self, server: FakeServer, streaming: bool
    ) -> None:
        server.enqueue(HTTPError(429, retry_after_ms=10), HTTPError(503))
        async with self.agent(server, max_retries=2, retry_delay=0.01) as agent:
            result = await _outcome(agent, "hi", streaming)
        assert result.success
        assert len(server.requests) == 3
        server.reset()
        server.enqueue(HTTPError(400))
        async with self.agent(server, max_retries=2, retry_delay=0.01) as agent:
            failed = await agent.run("hi")
        assert not failed.success
        assert len(server.requests) == 1

    async def test_cancelling_a_stream_closes_its_connection(self, server: FakeServer) -> None:
        self.script_text(server, "a long answer " * 20)
        server.enqueue(SlowStream(event_delay=0.05))
        provider = self.provider(server)
        try:
            events = provider.stream(self.request())
            first = await anext(events)
            assert isinstance(first, TextDelta)
            assert server.open_connections == 1
            await events.aclose()  # type: ignore[attr-defined]
            assert await server.async_wait_idle(timeout=2.0), "the stream's connection stayed open"
        finally:
            await provider.aclose()

    async def test_cancelling_an_agent_stream_closes_its_connection(
        self, server: FakeServer
    ) -> None:
        self.script_text(server, "a long answer " * 20)
        server.enqueue(SlowStream(event_delay=0.05))
        async with self.agent(server) as agent:
            async with agent.stream("hi") as events:
                async for event in events:
                    if event.type == "text":
                        break
            assert await server.async_wait_idle(timeout=2.0)

    async def test_a_cancelled_task_leaves_no_open_connection(self, server: FakeServer) -> None:
        server.enqueue(Delay(5.0))
        async with self.agent(server) as agent:
            task = asyncio.ensure_future(agent.run("hi"))
            assert await server.async_wait_until(lambda: server.in_flight == 1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await server.async_wait_idle(timeout=2.0)

    async def test_many_concurrent_runs_all_complete(self, server: FakeServer) -> None:
        server.response_delay = 0.3
        async with self.agent(server) as agent:
            results = await asyncio.gather(*(agent.run(f"run {i}") for i in range(200)))
        assert all(r.success for r in results)
        assert len(server.requests) == 200
        assert server.max_in_flight >= 50

    async def test_render_is_what_reaches_the_wire(self, server: FakeServer) -> None:
        for sample in _sendable(self.spec().capabilities):
            if self.refused_for_the_model(sample):
                continue  # refused before any request (test_declared_blocks_reach_the_wire)
            server.reset()
            async with self.agent(server, system_prompt="be brief") as agent:
                rendered = agent.provider().render(agent.build_request(list(sample.conversation)))
                result = await agent.run(list(sample.conversation))
            _assert_outcome(result, self.expected_refusal(sample), sample.id)
            assert server.requests[0].json == rendered, sample.id
            assert server.requests[0].body == self.encode_body(rendered), sample.id

    # -- retries, faults and secrets --------------------------------------------------------

    @pytest.mark.parametrize(
        ("fault", "requests", "success"),
        [
            pytest.param((HTTPError(429, retry_after=0.2),), 2, True, id="429-retry-after"),
            pytest.param((HTTPError(500),), 2, True, id="500"),
            pytest.param((HTTPError(529),) * 3, 3, False, id="529-until-out-of-retries"),
            pytest.param((DropConnection("mid_body"),), 2, True, id="dropped-mid-body"),
            pytest.param((DropConnection("before_response"),), 2, True, id="dropped-at-once"),
            pytest.param((HTTPError(400),), 1, False, id="400-never-retried"),
        ],
    )
    async def test_orchestrator_retries_send_one_request_per_attempt(
        self, server: FakeServer, fault: tuple[Fault, ...], requests: int, success: bool
    ) -> None:
        from ..orchestrator import OpenMultiAgent

        server.enqueue(*fault)
        config = self.config(server, retry_delay=0.001)
        started = time.monotonic()
        result = await OpenMultiAgent().run_agent(config, "hi", max_retries=2)
        elapsed = time.monotonic() - started
        assert len(server.requests) == requests
        assert result.success is success, result.status.error
        if not success:
            error = result.status.error
            assert isinstance(error, ProviderError)
            first = fault[0]
            if isinstance(first, HTTPError):
                assert error.status_code == first.status
                assert error.retryable is (first.status != 400)
        if isinstance(fault[0], HTTPError) and fault[0].retry_after is not None:
            assert elapsed >= 0.2, "retry-after was not honoured"

    async def test_runs_that_share_the_provider_reuse_its_connection_until_aclose(
        self, server: FakeServer
    ) -> None:
        from ..orchestrator import OpenMultiAgent

        for _ in range(3):
            self.script_text(server, "ok")
        async with OpenMultiAgent(share_providers=True) as oma:
            for _ in range(3):
                result = await oma.run_agent(self.config(server), "hi")
                assert result.success, result.status.error
            # A shared provider keeps one client: the three calls ride one keep-alive connection.
            assert server.total_connections == (1 if self.spec().shared else 3)
        assert await server.async_wait_idle(), "aclose left a connection open"

    @pytest.mark.parametrize("status", [500, 529])
    async def test_the_sdk_does_not_retry_on_its_own(self, server: FakeServer, status: int) -> None:
        server.enqueue(*[HTTPError(status)] * 3)
        result = await _run_agent(self.config(server), max_retries=0)
        assert len(server.requests) == 1
        error = result.status.error
        assert isinstance(error, ProviderError)
        assert (error.status_code, error.retryable) == (status, True)
        for streaming in (False, True):
            server.reset()
            server.enqueue(HTTPError(status))
            error = await _failure(self.provider(server), self.request(), streaming)
            assert len(server.requests) == 1, streaming
            assert (error.status_code, error.retryable) == (status, True)

    @pytest.mark.parametrize(
        ("name", "requests", "success"),
        [
            ("error-event-before-any-output", 2, True),
            ("error-event-after-output", 1, False),
            ("truncated-before-any-output", 2, True),
            ("truncated-after-output", 1, False),
            ("aborted-before-any-output", 2, True),
        ],
    )
    async def test_stream_faults_are_retried_only_before_any_output(
        self, server: FakeServer, name: str, requests: int, success: bool
    ) -> None:
        faults: dict[str, Fault] = {
            "error-event-before-any-output": ErrorMidStream(0, self.transient_stream_error),
            "error-event-after-output": ErrorMidStream(-3, self.transient_stream_error),
            "truncated-before-any-output": TruncatedStream(after_events=0),
            "truncated-after-output": TruncatedStream(after_events=-3),
            "aborted-before-any-output": TruncatedStream(after_events=0, abort=True),
        }
        text = "several words of a streamed answer"
        for _ in range(requests):
            self.script_text(server, text)
        server.enqueue(faults[name])
        agent = self.agent(server, max_retries=2, retry_delay=0.001)
        async with agent, agent.stream("hi") as events:
            seen = [e async for e in events]
        result = seen[-1].data
        assert len(server.requests) == requests
        assert result.success is success, result.status.error
        if success:
            assert result.output == text
        else:
            error = result.status.error
            assert isinstance(error, ProviderError)
            assert error.retryable is True  # retryable, but output had reached the caller
            assert [e.type for e in seen][-2:] == ["error", "done"]
            assert any(e.type == "text" for e in seen)

    # -- hostile replies ---------------------------------------------------------------------

    @pytest.mark.parametrize("streaming", [False, True])
    async def test_a_redirect_is_refused_not_followed_and_not_retried(
        self, server: FakeServer, streaming: bool
    ) -> None:
        server.enqueue(Redirect("http://127.0.0.1:9/elsewhere?token=conformance-secret"))
        error = await _failure(self.provider(server), self.request(), streaming)
        assert (error.status_code, error.retryable) == (307, False)
        assert "HTTP 307) to 127.0.0.1:9" in error.message
        assert "conformance-secret" not in error.message
        assert len(server.requests) == 1

    async def test_a_compression_bomb_stops_at_the_body_limit_in_bounded_memory(
        self, server: FakeServer
    ) -> None:
        await self._compression_bomb(server, streaming=False)

    async def test_a_compression_bomb_in_a_stream_stops_at_the_body_limit(
        self, server: FakeServer
    ) -> None:
        await self._compression_bomb(server, streaming=True)

    async def _compression_bomb(self, server: FakeServer, *, streaming: bool) -> None:
        import tracemalloc

        limit = 4 * 1024 * 1024
        kind = "text/event-stream" if streaming else None
        prefix = b'data: {"x": "' if kind else b'{"x": "'
        headers = {"content-type": kind or "application/json", "content-encoding": "gzip"}
        # 2 GB inflated, about 2 MB on the wire
        server.enqueue(RawBody(gzip_bomb(2 * 1024**3, prefix=prefix), headers=headers))
        provider = self.provider(server, max_response_bytes=limit, max_event_bytes=2 * limit)
        tracemalloc.start()
        try:
            error = await _failure(provider, self.request(), streaming)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert f"exceeds the limit of {limit} bytes" in error.message
        assert "max_response_bytes" in error.message and error.retryable is False
        assert peak < 16 * limit, f"peak {peak} bytes"
        assert await server.async_wait_idle(timeout=5.0)

    async def test_an_endless_event_stops_at_the_event_limit(self, server: FakeServer) -> None:
        limit = 1024 * 1024
        headers = {"content-type": "text/event-stream"}
        server.enqueue(RawBody(endless(b'data: {"x": "'), headers=headers))
        provider = self.provider(server, max_event_bytes=limit)
        error = await asyncio.wait_for(_failure(provider, self.request(), True), 30)
        assert f"exceeds the limit of {limit} bytes" in error.message
        assert "max_event_bytes" in error.message and error.retryable is False
        assert await server.async_wait_idle(timeout=5.0)

    async def test_a_complete_stream_kept_open_ends_at_its_last_event(
        self, server: FakeServer
    ) -> None:
        self.script_text(server, "all of it")
        headers = {"content-type": "text/event-stream"}
        server.enqueue(RawBody(keep_alive_after(), headers=headers, chunk_delay=0.05))
        provider = self.provider(server)
        try:
            _, response = await asyncio.wait_for(_drain(provider, self.request()), 10)
        finally:
            await provider.aclose()
        assert "all of it" in _reply_text(response)
        assert await server.async_wait_idle(timeout=5.0), "the kept-open stream was not closed"

    async def test_a_complete_stream_kept_open_is_no_timeout_for_the_run(
        self, server: FakeServer
    ) -> None:
        self.script_text(server, "all of it")
        headers = {"content-type": "text/event-stream"}
        server.enqueue(RawBody(keep_alive_after(), headers=headers, chunk_delay=0.05))
        settings = RunSettings(timeout=5.0)
        async with self.agent(server) as agent, agent.stream("hi", settings=settings) as events:
            result = [e async for e in events][-1].data
        assert result.success, repr(result.status.error)
        assert "all of it" in result.output

    async def test_a_stream_that_is_not_utf8_is_a_malformed_response(
        self, server: FakeServer
    ) -> None:

        def spoiled(response: Response) -> list[bytes]:
            events = b"".join(e.encode() for e in response.events or ())
            return [b": \xff\xfe not UTF-8\n\n", events]

        server.enqueue(RawBody(spoiled, headers={"content-type": "text/event-stream"}))
        error = await _failure(self.provider(server), self.request(), True)
        assert "the stream is not valid UTF-8" in error.message
        assert error.retryable is True

    async def test_a_reply_that_never_starts_fails_naming_the_first_byte_timeout(
        self, server: FakeServer
    ) -> None:
        server.enqueue(Delay(5.0))
        provider = self.provider(server, timeout=0.5)
        error = await asyncio.wait_for(_failure(provider, self.request(), False), 10)
        assert error.retryable is True
        assert 'provider_options["timeout"]' in error.message, error.message
        assert "first-byte" in error.message or "whole request" in error.message, error.message
        assert await server.async_wait_idle(timeout=5.0)

    async def test_a_stream_that_goes_silent_fails_naming_the_idle_timeout(
        self, server: FakeServer
    ) -> None:
        self.script_text(server, "a long answer " * 20)
        server.enqueue(SlowStream(event_delay=5.0))
        provider = self.provider(server, timeout=0.5)
        error = await asyncio.wait_for(_failure(provider, self.request(), True), 10)
        assert error.retryable is True
        assert 'provider_options["timeout"]' in error.message, error.message
        assert "idle timeout" in error.message or "whole request" in error.message, error.message
        assert await server.async_wait_idle(timeout=5.0)

    @pytest.mark.parametrize("streaming", [False, True])
    async def test_error_messages_hold_no_key_and_no_base64(
        self, server: FakeServer, streaming: bool
    ) -> None:
        secret = "sk-" + os.urandom(24).hex()
        payload = base64.b64encode(MEDIA_SAMPLES["image/png"] + os.urandom(3000)).decode()
        image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": payload}}  # fmt: skip
        conversation = [_user(_text("what is this?"), image)]
        capabilities = self.spec().capabilities
        if not declared(capabilities, Sample("image", "user", "base64", "image/png",
                                             tuple(conversation), (0, 1, None))):  # fmt: skip
            conversation = [_user(_text("hello " + payload))]
        server.enqueue(EchoRequestError(400))
        async with self.agent(server, api_key=secret) as agent:
            result = await _outcome(agent, conversation, streaming)
        assert len(server.requests) == 1
        assert secret.encode() in server.requests[0].body + _header_bytes(server.requests[0])
        error = result.status.error
        assert isinstance(error, ProviderError)
        assert error.status_code == 400
        # A logged traceback prints chained errors: the SDK's, which may echo the request,
        # must not ride along as the cause or the shown context.
        shown = traceback.format_exception(error)
        for text in (str(error), repr(error), error.message, "".join(shown)):
            assert secret not in text
            assert secret[3:19] not in text
            for i in range(0, len(payload) - 32, 16):
                assert payload[i : i + 32] not in text, "a base64 payload leaked"

    # -- request mapping (needs read_request) ---------------------------------------------

    def _sent(
        self, agent: Agent, kit: KitRequest, tool_choice: str | None = None
    ) -> NeutralRequest:
        """What the core asked for: the neutral view of the request ``agent`` builds."""
        request = agent.build_request(list(kit.conversation))
        return NeutralRequest.of(request, tool_choice=tool_choice)

    def _assert_seen(self, seen: NeutralRequest, sent: NeutralRequest, what: str) -> None:
        found = differences(
            seen,
            sent,
            error_flag=self.tool_error_flag,
            media_among_texts=not self.media_apart_from_text,
        )
        assert not found, f"{what}: the service does not see what was sent:\n  " + "\n  ".join(
            found
        )

    @pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
    @pytest.mark.parametrize("variant", [0, 1], ids=["whole-conversation", "one-question"])
    async def test_requests_reach_the_service_as_sent(
        self, server: FakeServer, streaming: bool, variant: int
    ) -> None:
        kit = self.kit_requests()[variant]
        async with self.agent(server, **kit.config) as agent:
            sent = self._sent(agent, kit)
            result = await _outcome(agent, list(kit.conversation), streaming)
        assert result.success, result.status.error
        assert len(server.requests) == 1
        # the kit's own request, as meant (so a core that drops a field fails here, not later)
        stop = kit.config.get("stop")
        assert (sent.temperature, sent.max_tokens, sent.stop) == (
            kit.config["temperature"],
            kit.config["max_tokens"],
            None if stop is None else tuple(stop),
        )
        assert sent.system_prompt == kit.config["system_prompt"]
        assert [t.name for t in sent.tools] == [t.name for t in kit.config["tools"]]
        self._assert_seen(self.read_request(server.requests[0].json), sent, kit.name)

    async def test_the_reader_reads_every_field_of_the_rendered_body(
        self, server: FakeServer
    ) -> None:
        """The reader itself, against ``render`` (the body ``complete`` sends): it must see
        each variant as sent, and the two variants apart in every field, so a reader that
        ignores a field (or hard-codes it) fails."""
        views = []
        for kit in self.kit_requests():
            async with self.agent(server, **kit.config) as agent:
                request = agent.build_request(list(kit.conversation))
                if self.render_is_the_wire:
                    body = agent.provider().render(request)
                else:  # a bridge's render is its library's input: read the wire instead
                    assert (await agent.run(list(kit.conversation))).success
                    body = server.requests[-1].json
                seen = self.read_request(body)
            self._assert_seen(seen, NeutralRequest.of(request), f"the body of {kit.name}")
            views.append(seen)
        whole, short = views
        fields = ["system_prompt", "temperature", "max_tokens", "tools", "messages"]
        if self.stop_sequences:
            fields.append("stop")
        for name in fields:
            assert getattr(whole, name) != getattr(short, name), f"the reader ignores {name}"

    async def test_tool_choice_reaches_the_service(self, server: FakeServer) -> None:
        declared_options: Mapping[str, Any] = self.spec().provider_options or {}
        if not self.tool_choices:
            assert "tool_choice" not in declared_options, (
                "the provider declares a tool_choice option: set tool_choices on the kit"
            )
            return
        kit = self.kit_requests()[1]
        for meaning, options in self.tool_choices.items():
            server.reset()
            config = {**kit.config, "provider_options": dict(options)}
            async with self.agent(server, **config) as agent:
                sent = self._sent(agent, kit, tool_choice=meaning)
                request = agent.build_request(list(kit.conversation))
                rendered = self.read_request(agent.provider().render(request))
                result = await agent.run(list(kit.conversation))
            assert result.success, (meaning, result.status.error)
            self._assert_seen(self.read_request(server.requests[0].json), sent, meaning)
            assert rendered.tool_choice == meaning, "the reader ignores tool_choice"

    async def test_results_of_streamed_calls_reach_the_service(self, server: FakeServer) -> None:
        """Three calls streamed in one reply (a string result, an error, text-and-media
        parts) run, and their results reach the service answering the streamed ids."""
        capabilities = self.spec().capabilities
        tools = kit_tools(capabilities)
        calls = tuple(
            ScriptedCall(name, args, call_id)
            for call_id, name, args in streamed_calls(self.tool_call_ids == "always")
        )
        self.script_reply(server, ScriptedReply(tool_calls=calls, stop_reason="tool_use"))
        self.script_reply(server, ScriptedReply(text="It is sunny."))
        question = "What is the weather like in Paris?"
        async with self.agent(server, tools=list(tools.values())) as agent:
            first = agent.build_request(question)
            async with agent.stream(question) as events:
                result = [e async for e in events][-1].data
        assert result.success, result.status.error
        assert len(server.requests) == 2
        made_calls, results = result.messages[0], result.messages[1]
        assert [b.name for b in made_calls.content if b.type == "tool_use"] == [
            "lookup",
            "broken",
            "chart",
        ]
        shapes = [(isinstance(b.content, str), b.is_error) for b in results.content]
        assert shapes == [(True, False), (True, True), (False, False)], shapes
        sent = attrs.evolve(
            NeutralRequest.of(first), messages=(*first.messages, made_calls, results)
        )
        self._assert_seen(self.read_request(server.requests[1].json), sent, "the second call")

    def _usable(self, sample: Sample) -> bool:
        """Whether the kit may send ``sample`` expecting a success: declared, with the blocks
        around it, not refused by the service nor for the kit's model."""
        capabilities = self.spec().capabilities
        return (
            declared(capabilities, sample)
            and _scaffolding_declared(capabilities, sample)
            and self.expected_refusal(sample) is None
            and not self.refused_for_the_model(sample)
        )

    @pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
    async def test_several_blocks_of_a_type_arrive_all_and_in_order(
        self, server: FakeServer, streaming: bool
    ) -> None:
        """Several blocks of each declared type in one turn (user and assistant) and in one
        tool result, several calls and results in one turn, and a long conversation mixing
        them (``oma_core.testing.crowded``): the service must see every block, in order,
        among the texts where it was sent (a provider that drops the second image of a
        turn, or reorders a turn's blocks, passes every one-block sample)."""
        crowded = crowded_conversations(self._usable)
        lookup = kit_tools(self.spec().capabilities)["lookup"]
        for case in crowded:
            server.reset()
            async with self.agent(server, tools=[lookup] if case.calls_tools else []) as agent:
                request = agent.build_request(list(case.conversation))
                rendered = agent.provider().render(request) if self.render_is_the_wire else None
                result = await _outcome(agent, list(case.conversation), streaming)
            assert result.success, (case.name, result.status.error)
            assert len(server.requests) == 1, case.name
            if case.located:  # media a reader may not read back: each block at its place
                for sample in case.located:
                    self.assert_on_wire(sample, server.requests[0])
                continue
            sent = NeutralRequest.of(request)
            self._assert_seen(self.read_request(server.requests[0].json), sent, case.name)
            if rendered is not None:  # the reader too: it must see all of render's blocks
                self._assert_seen(self.read_request(rendered), sent, f"render: {case.name}")
        assert len(crowded) > 3, [c.name for c in crowded]

    # -- reply mapping (needs script_reply) -----------------------------------------------

    @pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
    async def test_usage_is_mapped_as_the_service_counts_it(
        self, server: FakeServer, streaming: bool
    ) -> None:
        self.script_reply(server, ScriptedReply(text="counted", usage=Usage(1234, 56)))
        async with self.agent(server) as agent:
            result = await _outcome(agent, "hi", streaming)
        assert result.success, result.status.error
        assert (result.usage.input_tokens, result.usage.output_tokens) == (1234, 56), (
            f"usage {result.usage} for 1234 tokens in and 56 out (swapped or lost?)"
        )

    async def test_stop_reasons_are_mapped(self, server: FakeServer) -> None:
        for reason in self.stop_reasons:
            for streaming in (False, True):
                calls = (ScriptedCall("lookup", {"q": "x"}, "call_kit_stop"),)
                reply = ScriptedReply(
                    text="" if reason == "tool_use" else "stopped",
                    tool_calls=calls if reason == "tool_use" else (),
                    stop_reason=reason,
                )
                self.script_reply(server, reply)
                provider = self.provider(server)
                try:
                    if streaming:
                        _, response = await _drain(provider, self.request())
                    else:
                        response = await provider.complete(self.request())
                finally:
                    await provider.aclose()
                assert response.stop_reason == reason, (reason, streaming, response.stop_reason)

    async def test_tool_calls_without_ids_get_unique_ids(self, server: FakeServer) -> None:
        calls = (ScriptedCall("lookup", {"q": "x"}), ScriptedCall("lookup", {"q": "x"}))
        for streaming in (False, True):
            self.script_reply(server, ScriptedReply(tool_calls=calls, stop_reason="tool_use"))
            provider = self.provider(server)
            try:
                if streaming:
                    events, response = await _drain(provider, self.request())
                    assert [e.block for e in events if isinstance(e, ToolCall)] == [
                        b for b in response.message.content if b.type == "tool_use"
                    ]
                else:
                    response = await provider.complete(self.request())
            finally:
                await provider.aclose()
            made = [b for b in response.message.content if b.type == "tool_use"]
            assert [(b.name, thaw_json(b.input)) for b in made] == [("lookup", {"q": "x"})] * 2
            ids = [b.id for b in made]
            assert all(ids) and len(set(ids)) == 2, f"ids {ids} (streaming: {streaming})"

    async def test_tool_argument_pieces_join_to_their_call(self, server: FakeServer) -> None:
        """The ``ToolCallDelta`` pieces of a streamed reply with two calls: each call's pieces
        (one ``index``) come before its ``ToolCall``, name it as it is named, and join into
        its arguments (what tool mode shows as partial output; a piece under the wrong index
        or lost shows the user a wrong or stalled partial)."""
        arguments: tuple[dict[str, Any], ...] = (
            {"q": "pieces", "n": 2, "tags": ["a", "b"]},
            {"q": "second", "deep": {"x": 1}},
        )
        with_ids = self.tool_call_ids != "never"
        calls = tuple(
            ScriptedCall("lookup", args, f"call_kit_piece_{n}" if with_ids else None)
            for n, args in enumerate(arguments)
        )
        self.script_reply(server, ScriptedReply(tool_calls=calls, stop_reason="tool_use"))
        provider = self.provider(server)
        try:
            events, _ = await _drain(provider, self.request())
        finally:
            await provider.aclose()
        made = [(i, e.block) for i, e in enumerate(events) if isinstance(e, ToolCall)]
        assert [thaw_json(b.input) for _, b in made] == list(arguments), "the calls themselves"
        pieces: dict[int, list[tuple[int, ToolCallDelta]]] = {}
        for position, event in enumerate(events):
            if isinstance(event, ToolCallDelta):
                pieces.setdefault(event.index, []).append((position, event))
        if self.streams_tool_arguments:
            assert len(pieces) == len(made), (
                f"{len(made)} calls streamed, pieces of {len(pieces)} (streams_tool_arguments)"
            )
        unpaired = list(made)
        for index, its in pieces.items():
            # a group's call: the one its pieces name by id, else the first call after them
            ids = {p.id for _, p in its} - {None}
            last = its[-1][0]
            found = [c for c in unpaired if (c[1].id in ids if ids else c[0] > last)]
            assert found, f"the pieces of index {index} (ids {ids or 'none'}) belong to no call"
            at, block = found[0]
            unpaired.remove(found[0])
            joined = "".join(piece.arguments for _, piece in its)
            try:
                value = json.loads(joined)
            except ValueError:
                value = joined
            assert value == thaw_json(block.input), (
                f"the pieces of index {index} join into {joined!r}, not the arguments of "
                f"{block.id}: {thaw_json(block.input)}"
            )
            assert all(position < at for position, _ in its), f"pieces of {block.id} after it"
            assert {p.name for _, p in its} <= {None, block.name}, f"names of {block.id}"
            assert len(ids) <= 1, f"the pieces of index {index} name several calls: {ids}"

    # -- the service's own words -----------------------------------------------------------

    @pytest.mark.parametrize("after", [1, -3], ids=["before-output", "after-output"])
    async def test_an_error_event_keeps_the_service_message(
        self, server: FakeServer, after: int
    ) -> None:
        words = "quota for project conformance-kit exhausted"
        key = self.api_key or ""
        message = f"{words} (key {key})" if len(key) >= 8 else words
        self.script_text(server, "several words of a streamed answer")
        server.enqueue(ErrorMidStream(after, self.transient_stream_error, message=message))
        async with self.agent(server) as agent, agent.stream("hi") as events:
            result = [e async for e in events][-1].data
        error = result.status.error
        assert isinstance(error, ProviderError), repr(error)
        assert words in error.message, f"the service's message is lost: {error.message!r}"
        if len(key) >= 8:
            assert key not in error.message and key not in str(error)

    @pytest.mark.parametrize("output", ["before-output", "after-output"])
    async def test_an_error_in_the_final_event_fails_the_stream(
        self, server: FakeServer, output: str
    ) -> None:
        """A final event that says the generation failed (``final_event_errors``) is a
        retryable ``ProviderError`` keeping the service's text, never a short answer: retried
        while no output reached the caller, reported (not repeated) after."""
        words = "the generation failed (conformance kit)"
        text = "several words of a streamed answer"
        self.script_text(server, text if output == "after-output" else "")
        server.enqueue(ErrorInFinalEvent(words))
        error = await _failure(self.provider(server), self.request(), True)
        assert words in error.message, f"the service's text is lost: {error.message!r}"
        assert (error.retryable, error.status_code) == (True, None), repr(error)
        server.reset()
        self.script_text(server, text if output == "after-output" else "")
        self.script_text(server, "the retried answer")
        server.enqueue(ErrorInFinalEvent(words))
        agent = self.agent(server, max_retries=2, retry_delay=0.001)
        async with agent, agent.stream("hi") as events:
            seen = [e async for e in events]
        result = seen[-1].data
        if output == "before-output":
            assert len(server.requests) == 2, "retried once, then the whole answer"
            assert result.success and result.output == "the retried answer", result.status.error
        else:
            assert len(server.requests) == 1, "output had reached the caller: not retried"
            assert isinstance(result.status.error, ProviderError), result.status.error
            assert words in result.status.error.message
            assert [e.type for e in seen][-2:] == ["error", "done"]


async def _outcome(agent: Agent, run_input: Any, streaming: bool) -> RunResult:
    """The result of ``agent.run(run_input)``, or of the ``done`` event of its stream."""
    if streaming:
        async with agent.stream(run_input) as events:
            return [e async for e in events][-1].data  # type: ignore[no-any-return]
    return await agent.run(run_input)


async def _run_agent(config: AgentConfig, **options: Any) -> RunResult:
    from ..orchestrator import OpenMultiAgent

    async with OpenMultiAgent() as oma:
        return await oma.run_agent(config, "hi", **options)


def _assert_outcome(result: RunResult, refusal: int | None, what: str) -> None:
    """A success, or (for a block the service refuses) that status as a ``ProviderError``."""
    if refusal is None:
        assert result.success, f"{what}: {result.status.error!r}"
        return
    error = result.status.error
    assert isinstance(error, ProviderError), f"{what}: {error!r}"
    assert error.status_code == refusal, what
    assert error.retryable is False, what


def _header_bytes(request: RecordedRequest) -> bytes:
    return "".join(f"{k}: {v}\n" for k, v in request.headers.items()).encode()


def _sendable(capabilities: Capabilities) -> Iterator[Sample]:
    """The samples whose block, and the blocks around it, ``capabilities`` all carry."""
    for sample in samples():
        if declared(capabilities, sample) and _scaffolding_declared(capabilities, sample):
            yield sample


def _scaffolding_declared(capabilities: Capabilities, sample: Sample) -> bool:
    """Whether the blocks around the sample (text, tool calls and results) are carried too."""
    message, index, part = sample.locator
    around: list[Any] = []
    for i, m in enumerate(sample.conversation):
        blocks = []
        for j, block in enumerate(m["content"]):
            if (i, j) == (message, index):
                if part is None:
                    continue
                block = dict(
                    block, content=[p for k, p in enumerate(block["content"]) if k != part]
                )
            blocks.append(block)
        if blocks:
            around.append(dict(m, content=blocks))
    try:
        capabilities.check(load_messages(around, allow_empty=True), "probe")
    except UnsupportedContentBlockError:
        return False
    return True


async def _drain(
    provider: Provider, request: ProviderRequest
) -> tuple[list[Any], ProviderResponse]:
    events = [e async for e in provider.stream(request)]
    assert isinstance(events[-1], ResponseComplete), "a stream must end with ResponseComplete"
    assert not any(isinstance(e, ResponseComplete) for e in events[:-1])
    return events[:-1], events[-1].response


async def _failure(provider: Provider, request: ProviderRequest, streaming: bool) -> ProviderError:
    try:
        with pytest.raises(ProviderError) as caught:
            if streaming:
                async for _ in provider.stream(request):
                    pass
            else:
                await provider.complete(request)
    finally:
        await provider.aclose()
    return caught.value


def _reply_text(response: ProviderResponse) -> str:
    return "".join(getattr(block, "text", "") for block in response.message.content)
