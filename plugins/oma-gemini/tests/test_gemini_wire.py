"""What reaches the Gemini API: URLs, the key, the body's fields, generation settings."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from fake_gemini import API_KEY, FakeGemini, Reply
from oma_gemini import create_provider
from oma_gemini.provider import api_root

from oma_core import Agent, AgentConfig, ProviderError, load_messages
from oma_core.errors import PluginError
from oma_core.toolkit import ProviderRequest, ProviderSettings, ToolDefinition


def _request(text: str = "hi", **fields: Any) -> ProviderRequest:
    messages = load_messages([{"role": "user", "content": [{"type": "text", "text": text}]}])
    return ProviderRequest(model="gemini-test", messages=messages, **fields)


async def _complete(server: FakeGemini, base_url: str | None = None, **settings: Any) -> Any:
    settings.setdefault("api_key", API_KEY)
    provider = create_provider(ProviderSettings(base_url=base_url or server.base_url, **settings))
    try:
        return await provider.complete(_request())
    finally:
        await provider.aclose()


class TestUrls:
    @pytest.mark.parametrize(
        ("suffix", "path"),
        [
            ("/v1beta", "/v1beta/models/gemini-test:generateContent"),
            ("/v1", "/v1/models/gemini-test:generateContent"),
            ("/v1alpha/", "/v1alpha/models/gemini-test:generateContent"),
            ("/proxy/gemini/v1beta", "/proxy/gemini/v1beta/models/gemini-test:generateContent"),
            ("", "/v1beta/models/gemini-test:generateContent"),
        ],
    )
    async def test_base_url_may_carry_any_version_prefix(
        self, server: FakeGemini, suffix: str, path: str
    ) -> None:
        await _complete(server, server.url + suffix)
        assert server.requests[0].path == path

    def test_a_bare_host_gets_v1beta(self) -> None:
        assert api_root("https://example.test") == "https://example.test/v1beta"
        assert api_root(None) == "https://generativelanguage.googleapis.com/v1beta"

    async def test_a_stream_asks_for_sse(self, server: FakeGemini) -> None:
        provider = create_provider(ProviderSettings(base_url=server.base_url, api_key=API_KEY))
        try:
            [_ async for _ in provider.stream(_request())]
        finally:
            await provider.aclose()
        assert server.requests[0].path == "/v1beta/models/gemini-test:streamGenerateContent"
        assert server.requests[0].query == "alt=sse"

    async def test_a_model_named_with_its_resource_prefix_is_not_doubled(
        self, server: FakeGemini
    ) -> None:
        async with Agent(
            AgentConfig(
                name="a",
                provider="gemini",
                model="models/gemini-x",
                base_url=server.base_url,
                api_key=API_KEY,
            )
        ) as agent:
            assert (await agent.run("hi")).success
        assert server.requests[0].path == "/v1beta/models/gemini-x:generateContent"


class TestTheKey:
    async def test_is_sent_as_x_goog_api_key_and_never_in_the_url(self, server: FakeGemini) -> None:
        await _complete(server)
        request = server.requests[0]
        assert request.headers["x-goog-api-key"] == API_KEY
        assert API_KEY not in request.path + request.query

    @pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
    async def test_comes_from_the_environment_when_not_configured(
        self, server: FakeGemini, monkeypatch: pytest.MonkeyPatch, variable: str
    ) -> None:
        monkeypatch.delenv("GEMINI_API_KEY", raising=False)
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        monkeypatch.setenv(variable, API_KEY)
        await _complete(server, api_key=None)
        assert server.requests[0].headers["x-goog-api-key"] == API_KEY

    async def test_gemini_api_key_wins_over_google_api_key(
        self, server: FakeGemini, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("GEMINI_API_KEY", API_KEY)
        monkeypatch.setenv("GOOGLE_API_KEY", "other")
        await _complete(server, api_key=None)
        assert server.requests[0].headers["x-goog-api-key"] == API_KEY

    async def test_without_a_key_nothing_is_sent(
        self, server: FakeGemini, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("GEMINI_API_KEY", raising=False)
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        with pytest.raises(ProviderError, match="GEMINI_API_KEY") as caught:
            await _complete(server, api_key=None)
        assert caught.value.retryable is False
        assert server.requests == []


class TestTheBody:
    def test_system_prompt_is_system_instruction(self) -> None:
        body = create_provider(ProviderSettings()).render(_request(system_prompt="be brief"))
        assert body["systemInstruction"] == {"parts": [{"text": "be brief"}]}
        assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]

    def test_temperature_max_tokens_and_stop_go_into_generation_config(self) -> None:
        request = _request(temperature=0.2, max_tokens=64, stop=("END", "##"))
        body = create_provider(ProviderSettings()).render(request)
        assert body["generationConfig"] == {
            "temperature": 0.2,
            "maxOutputTokens": 64,
            "stopSequences": ["END", "##"],
        }

    def test_unset_settings_send_no_generation_config(self) -> None:
        assert "generationConfig" not in create_provider(ProviderSettings()).render(_request())

    def test_provider_options_reach_the_body_and_merge_generation_config(self) -> None:
        options = {
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
            "generationConfig": {"topK": 3, "temperature": 1.0},
        }
        provider = create_provider(ProviderSettings(options=options))
        body = provider.render(_request(temperature=0.5))
        assert body["safetySettings"] == options["safetySettings"]
        assert body["generationConfig"] == {"topK": 3, "temperature": 0.5}

    def test_tools_are_function_declarations(self) -> None:
        tool = ToolDefinition("lookup", "find a thing", {"type": "object", "properties": {}})
        body = create_provider(ProviderSettings()).render(_request(tools=(tool,)))
        assert body["tools"] == [
            {
                "functionDeclarations": [
                    {
                        "name": "lookup",
                        "description": "find a thing",
                        "parameters": {"type": "object", "properties": {}},
                    }
                ]
            }
        ]

    async def test_generation_settings_from_agent_config_reach_the_wire(
        self, server: FakeGemini
    ) -> None:
        config = AgentConfig(
            name="a",
            provider="gemini",
            base_url=server.base_url,
            api_key=API_KEY,
            temperature=0.1,
            max_tokens=9,
            stop=["x"],
        )
        async with Agent(config) as agent:
            assert (await agent.run("hi")).success
        generation = server.requests[0].json["generationConfig"]
        assert generation == {"temperature": 0.1, "maxOutputTokens": 9, "stopSequences": ["x"]}

    async def test_the_fake_takes_snake_case_too(self, server: FakeGemini) -> None:
        import httpx

        body = {
            "contents": [
                {
                    "role": "user",
                    "parts": [{"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}],
                }
            ],
            "generation_config": {"max_output_tokens": 5},
        }
        async with httpx.AsyncClient() as client:
            reply = await client.post(
                f"{server.base_url}/models/m:generateContent",
                json=body,
                headers={"x-goog-api-key": API_KEY},
            )
        assert reply.status_code == 200, reply.text


class TestOptions:
    @pytest.mark.parametrize("bad", [-1, "20MB", 1.5, True])
    def test_inline_limit_must_be_a_byte_count(self, bad: Any) -> None:
        with pytest.raises(PluginError, match="inline_limit"):
            create_provider(ProviderSettings(options={"inline_limit": bad}))

    async def test_a_timeout_option_sets_the_read_timeout(self, server: FakeGemini) -> None:
        server.response_delay = 1.0
        with pytest.raises(ProviderError, match="timed out") as caught:
            await _complete(server, options={"timeout": 0.05})
        assert caught.value.retryable is True

    async def test_a_shared_provider_reuses_its_connection(self, server: FakeGemini) -> None:
        server.reply(Reply(), Reply())
        provider = create_provider(ProviderSettings(base_url=server.base_url, api_key=API_KEY))
        try:
            await provider.complete(_request())
            await provider.complete(_request())
        finally:
            await provider.aclose()
        assert [r.connection for r in server.requests] == [1, 1]
        assert await server.async_wait_idle()


def test_importing_the_plugin_imports_no_http_library() -> None:
    code = "import sys, oma_gemini; print(sorted(m for m in sys.modules "
    code += "if m.split('.')[0] in ('httpx', 'httpx_sse', 'httpcore', 'google')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
