"""What the plugin puts on the wire: exactly render(request), to the configured URL and key."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic

from oma_core import ProviderError, load_messages
from oma_core.errors import PluginError
from oma_core.testing.conformance import MEDIA_SAMPLES
from oma_core.toolkit import ProviderRequest, ProviderSettings, ToolDefinition

PNG = __import__("base64").b64encode(MEDIA_SAMPLES["image/png"]).decode()


def request(**kwargs: Any) -> ProviderRequest:
    messages = load_messages(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": 'héllo \u2603 "quoted" </script>'},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                ],
            }
        ]
    )
    return ProviderRequest(model="claude-test", messages=messages, **kwargs)


def make(server: FakeAnthropic, **options: Any) -> Any:
    from oma_anthropic import create_provider

    return create_provider(
        ProviderSettings(base_url=server.url, api_key="test-key", options=options)
    )


RICH = {
    "system_prompt": "be brief",
    "tools": (ToolDefinition("f", "does f", {"type": "object", "properties": {}}),),
    "temperature": 0.25,
}
OPTIONS = {"thinking": {"type": "disabled"}, "top_k": 5, "max_tokens": 99}


@pytest.mark.parametrize("rich", [False, True])
async def test_the_body_received_is_render_byte_for_byte(server: FakeAnthropic, rich: bool) -> None:
    # Held equal: the exact bytes of a non-streaming request against json.dumps(render) in the
    # SDK's serialisation (compact separators, UTF-8, no ASCII escaping), key order included.
    provider = make(server, **(OPTIONS if rich else {}))
    req = request(**(RICH if rich else {}))
    try:
        rendered = provider.render(req)
        await provider.complete(req)
    finally:
        await provider.aclose()
    expected = json.dumps(rendered, separators=(",", ":"), ensure_ascii=False).encode()
    assert server.requests[0].body == expected


async def test_the_streamed_body_is_render_plus_stream_true(server: FakeAnthropic) -> None:
    # Held equal for streaming: the same JSON value with "stream": true added (key order aside).
    provider = make(server, **OPTIONS)
    req = request(**RICH)
    try:
        rendered = provider.render(req)
        [e async for e in provider.stream(req)]
    finally:
        await provider.aclose()
    assert server.requests[0].json == {**rendered, "stream": True}


def test_render_sends_nothing_and_needs_no_key() -> None:
    from oma_anthropic import create_provider

    with FakeAnthropic() as server:
        provider = create_provider(ProviderSettings(base_url=server.url))
        body = provider.render(request())
        assert body["messages"][0]["content"][1]["source"]["data"] == PNG
        assert server.requests == []


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
async def test_base_url_reaches_the_sdk_without_v1(server: FakeAnthropic, suffix: str) -> None:
    from oma_anthropic import create_provider

    provider = create_provider(ProviderSettings(base_url=server.url + suffix, api_key="test-key"))
    try:
        await provider.complete(request())
    finally:
        await provider.aclose()
    assert server.requests[0].path == "/v1/messages"


async def test_api_key_falls_back_to_the_environment(
    server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oma_anthropic import create_provider

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    provider = create_provider(ProviderSettings(base_url=server.url))
    try:
        await provider.complete(request())
    finally:
        await provider.aclose()
    assert len(server.requests) == 1


async def test_a_missing_api_key_fails_before_any_request(
    server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oma_anthropic import create_provider

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    provider = create_provider(ProviderSettings(base_url=server.url))
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY") as caught:
        await provider.complete(request())
    assert caught.value.retryable is False
    assert server.requests == []


def test_unknown_provider_options_are_refused() -> None:
    from oma_anthropic import create_provider

    with pytest.raises(PluginError, match="max_token"):
        create_provider(ProviderSettings(options={"max_token": 5}))


async def test_one_provider_works_across_event_loops(server: FakeAnthropic) -> None:
    import asyncio
    import threading

    provider = make(server)
    results: list[Any] = []

    def in_other_loop() -> None:
        async def call() -> None:
            results.append(await provider.complete(request()))
            await provider.aclose()

        asyncio.run(call())

    thread = threading.Thread(target=in_other_loop)
    thread.start()
    thread.join()
    results.append(await provider.complete(request()))
    await provider.aclose()
    assert len(results) == 2 and len(server.requests) == 2


def test_loading_the_plugin_imports_no_sdk() -> None:
    code = (
        "import sys; from oma_core import PluginHost; "
        "spec = PluginHost(load_entrypoints=True).provider_spec('anthropic'); "
        "print(spec.display_name, 'anthropic' in sys.modules, 'httpx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["Anthropic", "Messages", "False", "False"]


def test_oma_render_prints_the_body_that_reaches_the_wire(server: FakeAnthropic) -> None:
    from oma_core import Agent, AgentConfig

    argv = ["render", "--no-stream", "-p", "anthropic", "-m", "claude-test", "--system", "s", "hi"]
    code = f"from oma_core.cli import main; main({argv!r})"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    config = AgentConfig(
        name="t",
        provider="anthropic",
        model="claude-test",
        system_prompt="s",
        base_url=server.url,
        api_key="test-key",
    )
    assert Agent(config).run_sync("hi").success
    assert server.requests[0].json == printed


async def test_timeout_option_is_the_sdk_timeout(server: FakeAnthropic) -> None:
    from oma_core.testing import Delay

    server.enqueue(Delay(2.0))
    provider = make(server, timeout=0.2)
    try:
        with pytest.raises(ProviderError) as caught:
            await provider.complete(request())
    finally:
        await provider.aclose()
    assert (caught.value.status_code, caught.value.retryable) == (None, True)
    assert "timed out" in str(caught.value)
    assert len(server.requests) == 1


async def test_a_500_without_oma_retries_is_exactly_one_request(server: FakeAnthropic) -> None:
    from oma_core import Agent, AgentConfig
    from oma_core.testing import HTTPError

    server.enqueue(HTTPError(500), HTTPError(500))
    config = AgentConfig(
        name="t", provider="anthropic", base_url=server.url, api_key="test-key", max_retries=0
    )
    async with Agent(config) as agent:
        result = await agent.run("hi")
    assert len(server.requests) == 1
    error = result.status.error
    assert isinstance(error, ProviderError)
    assert (error.status_code, error.retryable) == (500, True)


async def test_what_only_the_service_refuses_takes_the_normal_failure_path(
    server: FakeAnthropic,
) -> None:
    # Empty text is a valid oma block; the Messages API refuses it, and the plugin neither
    # drops it nor hides the refusal: one request, a non-retryable 400 ProviderError.
    from oma_core import Agent, AgentConfig

    config = AgentConfig(
        name="t", provider="anthropic", base_url=server.url, api_key="test-key", max_retries=2
    )
    conversation = [{"role": "user", "content": [{"type": "text", "text": ""}]}]
    async with Agent(config) as agent:
        result = await agent.run(conversation)
    assert server.requests[0].json["messages"][0]["content"] == [{"type": "text", "text": ""}]
    assert len(server.requests) == 1
    error = result.status.error
    assert isinstance(error, ProviderError)
    assert (error.status_code, error.retryable) == (400, False)
    assert "non-empty" in str(error)
