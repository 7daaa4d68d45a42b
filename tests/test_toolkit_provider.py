"""What the toolkit owns of a provider plugin's boilerplate: the end of a stream
(``stream_end``), the key and base URL read from the spec (``provider_settings``), the
``HttpProvider`` base, and docstrings that say which helpers are coroutines."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from oma_core import Capabilities, ProviderError, ProviderSpec, TextBlock, ToolUseBlock, Usage
from oma_core.http import HttpProvider, assistant_response, provider_settings, stream_end
from oma_core.testing import FakeServer, HTTPError, RecordedRequest, Response
from oma_core.toolkit import (
    ProviderEvent,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ResponseComplete,
    ToolCall,
)

KEY = "sk-" + "k3y" * 16


# -- stream_end ---------------------------------------------------------------------------------


class TestStreamEnd:
    def test_a_finished_stream_ends_with_its_calls_then_the_response(self) -> None:
        calls = (ToolUseBlock("a", "f", {}), ToolUseBlock("b", "g", {"x": 1}))
        response = assistant_response("hi", calls, Usage(3, 4), "tool_use")
        events = stream_end("S", response)
        assert events == (ToolCall(calls[0]), ToolCall(calls[1]), ResponseComplete(response))

    def test_calls_already_yielded_are_not_yielded_again(self) -> None:
        response = assistant_response("", [ToolUseBlock("a", "f", {})])
        assert stream_end("S", response, calls_sent=True) == (ResponseComplete(response),)

    def test_a_stream_cut_before_its_final_event_is_a_retryable_malformed_response(self) -> None:
        with pytest.raises(ProviderError) as caught:
            stream_end("S", None, missing="no done line")
        error = caught.value
        assert (error.message, error.retryable, error.status_code) == (
            "S sent a malformed response: no done line",
            True,
            None,
        )


# -- provider_settings ---------------------------------------------------------------------------


def _spec(**fields: Any) -> ProviderSpec:
    values: dict[str, Any] = {
        "name": "svc",
        "display_name": "Svc",
        "factory": lambda settings: _Echo(_spec(**fields), settings),
        "capabilities": Capabilities.text_only(),
        "default_base_url": "http://svc.example/v1/",
        "api_key_env": ("SVC_KEY", "SVC_OTHER_KEY"),
    }
    return ProviderSpec(**{**values, **fields})


class TestProviderSettings:
    def test_the_key_comes_from_the_first_variable_that_is_set(self) -> None:
        env = {"SVC_KEY": "", "SVC_OTHER_KEY": "second"}
        assert provider_settings(_spec(), ProviderSettings(), env).api_key == "second"
        env["SVC_KEY"] = "first"
        assert provider_settings(_spec(), ProviderSettings(), env).api_key == "first"

    def test_a_key_given_in_the_config_wins_over_the_environment(self) -> None:
        given = ProviderSettings(api_key="given")
        assert provider_settings(_spec(), given, {"SVC_KEY": "env"}).api_key == "given"

    def test_no_variable_set_leaves_no_key(self) -> None:
        assert provider_settings(_spec(), ProviderSettings(), {}).api_key is None
        assert provider_settings(_spec(api_key_env=None), ProviderSettings(), {}).api_key is None

    def test_the_base_url_defaults_to_the_specs_and_a_given_one_wins(self) -> None:
        assert provider_settings(_spec(), ProviderSettings(), {}).base_url == (
            "http://svc.example/v1/"
        )
        given = ProviderSettings(base_url="http://mine")
        assert provider_settings(_spec(), given, {}).base_url == "http://mine"
        assert (
            provider_settings(_spec(default_base_url=None), ProviderSettings(), {}).base_url is None
        )

    def test_the_options_pass_through_unchanged(self) -> None:
        given = ProviderSettings(options={"timeout": 3})
        assert provider_settings(_spec(), given, {}).options == {"timeout": 3}


# -- HttpProvider --------------------------------------------------------------------------------


class _Echo(HttpProvider):
    """A provider whose wire is ``POST /chat`` -> ``{"text": ...}``."""

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        return {"text": "".join(getattr(b, "text", "") for b in request.messages[0].content)}

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        reply = await self.post_json("/chat", self.render(request))
        return assistant_response(reply["text"])

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        for event in stream_end(self.display_name, await self.complete(request)):
            yield event


class _Service(FakeServer):
    def handle(self, request: RecordedRequest) -> Response:
        return Response.json({"text": request.json["text"].upper()})


@pytest.fixture
def service() -> Iterator[_Service]:
    with _Service() as server:
        yield server  # type: ignore[misc]
    assert server.handler_errors == []


def _request(text: str = "hi") -> ProviderRequest:
    from oma_core import LLMMessage

    return ProviderRequest(model=None, messages=(LLMMessage("user", (TextBlock(text),)),))


class TestHttpProvider:
    def test_names_key_base_url_and_body_options_come_from_the_spec(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("SVC_KEY", KEY)
        options = {"timeout": 5, "headers": {"x-a": "1"}, "top_k": 3}
        provider = _Echo(_spec(), ProviderSettings(options=options))
        assert (provider.name, provider.display_name) == ("svc", "Svc")
        assert (provider.api_key, provider.base_url) == (KEY, "http://svc.example/v1")
        assert provider.options == {"top_k": 3}  # the client's options are the client's
        assert provider.secrets == (KEY,)

    async def test_every_request_carries_the_key_and_the_option_headers(
        self, service: _Service
    ) -> None:
        settings = ProviderSettings(service.url, KEY, {"headers": {"x-trace": "t1"}})
        provider = _Echo(_spec(), settings)
        try:
            response = await provider.complete(_request("hi"))
        finally:
            await provider.aclose()
        assert response.message.content == (TextBlock("HI"),)
        sent = service.requests[0]
        assert (sent.path, sent.headers["authorization"]) == ("/chat", f"Bearer {KEY}")
        assert sent.headers["x-trace"] == "t1"
        assert await service.async_wait_idle(timeout=2), "aclose left a connection open"

    async def test_a_required_key_that_is_missing_fails_before_anything_is_sent(
        self, service: _Service, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("SVC_KEY", raising=False)
        monkeypatch.delenv("SVC_OTHER_KEY", raising=False)
        provider = _Echo(_spec(requires_api_key=True), ProviderSettings(service.url))
        with pytest.raises(ProviderError) as caught:
            await provider.complete(_request())
        await provider.aclose()
        assert caught.value.retryable is False
        assert "SVC_KEY or SVC_OTHER_KEY" in caught.value.message
        assert service.requests == []

    async def test_errors_hold_no_key(self, service: _Service) -> None:
        service.enqueue(HTTPError(401, message=f"bad key {KEY}"))
        provider = _Echo(_spec(), ProviderSettings(service.url, KEY))
        with pytest.raises(ProviderError) as caught:
            await provider.complete(_request())
        await provider.aclose()
        assert caught.value.status_code == 401
        assert KEY not in caught.value.message and "[REDACTED]" in caught.value.message

    async def test_the_spec_builds_it_through_its_factory(self, service: _Service) -> None:
        provider = _spec().factory(ProviderSettings(service.url, KEY))
        try:
            events = [e async for e in provider.stream(_request("ok"))]
        finally:
            await provider.aclose()
        assert events == [ResponseComplete(assistant_response("OK"))]


# -- coroutines say so ---------------------------------------------------------------------------

#: The helper modules behind ``oma_core.http`` and ``oma_core.processes`` (the toolkit's
#: interfaces, Provider and Backend, are protocols).
_HELPERS = (
    *("http._bounded", "http._client", "http._provider", "http._ndjson", "http._replies"),
    *("http._sse", "processes"),
)


def _async_helpers() -> Iterator[tuple[str, Any]]:
    import oma_core.http
    import oma_core.processes

    for surface in (oma_core.http, oma_core.processes):
        yield from _async_members(surface)
    yield "next_chunk", importlib.import_module("oma_core.http._bounded").next_chunk


def _async_members(surface: Any) -> Iterator[tuple[str, Any]]:
    for name in surface.__all__:
        value = getattr(surface, name)
        module = getattr(value, "__module__", None) or ""
        if module.removeprefix("oma_core.") not in _HELPERS:
            continue
        members = [(name, value)]
        if inspect.isclass(value):
            members = [(f"{name}.{k}", v) for k, v in vars(value).items() if not k.startswith("_")]
        for qualified, member in members:
            if inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member):
                yield qualified, member


@pytest.mark.parametrize(("name", "function"), list(_async_helpers()))
def test_every_async_helper_of_the_toolkit_says_what_it_is(name: str, function: Any) -> None:
    first = (inspect.getdoc(function) or "").split(":", 1)[0]
    expected = "An async generator" if inspect.isasyncgenfunction(function) else "A coroutine"
    assert first == expected, f"{name}'s docstring starts {first!r}"
