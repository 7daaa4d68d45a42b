"""The installed provider plugins hold to their block tables (these tests skip when a plugin is
absent; marked ``combination``, they run in ``nox -s all``).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from _builders import (
    REFERENCE_MP4,
    REFERENCE_PNG,
    ROOT,
    builtin_host,
    png_block,
    stream_events,
    user_turn,
    video_block,
)

from oma_core import (
    IMAGE_MEDIA_TYPES,
    Agent,
    AgentConfig,
    Capabilities,
    LLMMessage,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    ProviderError,
    TextBlock,
    UnsupportedContentBlockError,
    image_base64,
    image_url,
    load_messages,
)
from oma_core.capabilities import Mode
from oma_core.testing.fake_server import FakeServer, RecordedRequest, Response, SSEEvent
from oma_core.toolkit import ProviderRequest, ProviderSettings

pytestmark = pytest.mark.combination  # run where every plugin is installed: `nox -s all`


def _plugin_capabilities(name: str) -> Capabilities:
    capabilities = PluginHost().provider_spec(name).capabilities
    assert isinstance(capabilities, Capabilities)
    return capabilities


class _VideoJudge(FakeServer):
    """A Chat Completions server that accepts or refuses ``video_url`` parts, like a real
    OpenAI-compatible service: MiniMax accepts them, the others answer 400."""

    def __init__(self, *, accepts_video: bool) -> None:
        super().__init__()
        self.accepts_video = accepts_video

    def handle(self, request: RecordedRequest) -> Response:
        parts = [
            part
            for message in request.json["messages"]
            if isinstance(message.get("content"), list)
            for part in message["content"]
        ]
        if any(p["type"] == "video_url" for p in parts) and not self.accepts_video:
            return self.error_response(400, "Invalid content type: video_url", "invalid_request")
        if request.json.get("stream"):
            chunk = {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": request.json["model"],
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": "a clip"},
                        "finish_reason": "stop",
                    }
                ],
            }
            return Response.sse([SSEEvent(chunk), SSEEvent("[DONE]")])
        return Response.json(
            {
                "id": "c1",
                "object": "chat.completion",
                "created": 0,
                "model": request.json["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "a clip"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
            }
        )


def test_anthropic_declares_no_video_and_refuses_it_locally() -> None:
    pytest.importorskip("oma_anthropic")
    spec = PluginHost().provider_spec("anthropic")
    assert spec.display_name == "Anthropic Messages"
    assert spec.capabilities.mode("video", "user") is None
    with pytest.raises(UnsupportedContentBlockError) as caught:
        spec.capabilities.check(load_messages([user_turn("x", video_block())]), spec.display_name)
    assert str(caught.value).startswith(
        'Anthropic Messages cannot represent the "video" content block'
    )
    assert caught.value.provider == "Anthropic Messages"


async def test_anthropic_agent_run_with_video_fails_before_any_request_is_sent() -> None:
    pytest.importorskip("oma_anthropic")
    progress: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=progress.append, max_retries=3)
    config = AgentConfig(
        name="claude",
        provider="anthropic",
        model="claude-sonnet-4-6",
        api_key="test-key",
        base_url="http://127.0.0.1:9",  # nothing listens there; nothing may be sent either
    )
    result = await oma.run_agent(config, [user_turn("What happens?", video_block())])
    assert not result.success
    assert isinstance(result.status.error, UnsupportedContentBlockError)
    assert result.status.error.block_type == "video"
    assert [e for e in progress if e.type == "retry"] == []


@pytest.mark.parametrize("media_type", ["image/tiff", "image/bmp", "image/svg+xml"])
def test_installed_providers_refuse_image_types_outside_their_table(media_type: str) -> None:
    pytest.importorskip("oma_anthropic")
    pytest.importorskip("oma_openai")
    messages = load_messages([user_turn(image_base64(REFERENCE_PNG, media_type))])
    for name in ("anthropic", "openai"):
        spec = PluginHost().provider_spec(name)
        with pytest.raises(UnsupportedContentBlockError, match=re.escape(media_type)):
            spec.capabilities.check(messages, spec.display_name)
    Capabilities.everything().check(messages, "Echo")  # a valid block, just not for them


def test_the_anthropic_adapter_itself_refuses_video_rather_than_dropping_it() -> None:
    pytest.importorskip("oma_anthropic")
    provider = PluginHost().provider_spec("anthropic").factory(ProviderSettings(api_key="k"))
    request = ProviderRequest("claude-sonnet-4-6", load_messages([user_turn("x", video_block())]))
    with pytest.raises(UnsupportedContentBlockError, match='"video"'):
        provider.render(request)


@pytest.mark.parametrize(
    ("plugin", "name", "block"),
    [
        ("oma_anthropic", "anthropic", video_block()),
        ("oma_openai", "deepseek", png_block("url")),
        ("oma_openai", "groq", video_block()),
    ],
)
async def test_a_plugin_provider_object_passed_directly_keeps_its_capabilities(
    plugin: str, name: str, block: dict[str, Any]
) -> None:
    pytest.importorskip(plugin)
    spec = PluginHost().provider_spec(name)
    provider = spec.factory(ProviderSettings(base_url="http://127.0.0.1:9", api_key="k"))
    agent = Agent(AgentConfig(name="direct", provider=provider, model="m"), plugins=builtin_host())
    result = await agent.run([user_turn("x", block)])
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert error.provider == spec.display_name
    await provider.aclose()


@pytest.mark.parametrize("name", ["openai", "minimax"])
def test_openai_shaped_adapters_forward_video_for_the_service_to_decide(name: str) -> None:
    pytest.importorskip("oma_openai")
    capabilities = _plugin_capabilities(name)
    assert capabilities.mode("video", "user", "url") is Mode.FORWARDED
    capabilities.check(load_messages([user_turn("x", video_block())]), name)


def test_openai_renders_a_video_block_as_a_video_url_content_part() -> None:
    pytest.importorskip("oma_openai")
    spec = PluginHost().provider_spec("minimax")
    provider = spec.factory(ProviderSettings(api_key="test-key"))
    request = ProviderRequest("MiniMax-M1", load_messages([user_turn("Describe", video_block())]))
    body = provider.render(request)
    user = [m for m in body["messages"] if m["role"] == "user"][-1]
    assert {"type": "video_url", "video_url": {"url": "https://example.com/clip.mp4"}} in user[
        "content"
    ]


def test_openai_renders_a_base64_video_as_a_data_url_video_part() -> None:
    pytest.importorskip("oma_openai")
    provider = PluginHost().provider_spec("minimax").factory(ProviderSettings(api_key="k"))
    request = ProviderRequest("MiniMax-M1", load_messages([user_turn(video_block("base64"))]))
    body = provider.render(request)
    parts = body["messages"][-1]["content"]
    video_parts = [p for p in parts if p["type"] == "video_url"]
    assert video_parts == [
        {"type": "video_url", "video_url": {"url": f"data:video/mp4;base64,{REFERENCE_MP4}"}}
    ]


@pytest.mark.parametrize("mode", ["run", "stream"])
async def test_openai_forwards_video_and_the_services_refusal_is_an_ordinary_failure(
    mode: str,
) -> None:
    pytest.importorskip("oma_openai")
    with _VideoJudge(accepts_video=False) as server:
        config = AgentConfig(
            name="gpt", provider="openai", model="gpt-4o", api_key="k", base_url=server.url + "/v1"
        )
        oma = OpenMultiAgent(max_retries=2, retry_delay=0.01)
        if mode == "run":
            result = await oma.run_agent(config, [user_turn("What happens?", video_block())])
        else:
            agent = Agent(config)
            events = await stream_events(agent, [user_turn("What happens?", video_block())])
            await agent.aclose()
            assert [e.type for e in events][-2:] == ["error", "done"]
            result = events[-1].data
        assert not result.success and result.status.code == "error"
        error = result.status.error
        assert isinstance(error, ProviderError) and error.status_code == 400
        assert not isinstance(error, UnsupportedContentBlockError)
        assert len(server.requests) == 1  # a 400 is not retried
        sent = server.requests[0].json["messages"][-1]["content"]
        assert {"type": "video_url", "video_url": {"url": "https://example.com/clip.mp4"}} in sent


async def test_minimax_accepts_a_forwarded_video() -> None:
    pytest.importorskip("oma_openai")
    with _VideoJudge(accepts_video=True) as server:
        config = AgentConfig(
            name="mm", provider="minimax", model="MiniMax-M2", api_key="k", base_url=server.url
        )
        async with OpenMultiAgent() as oma:
            result = await oma.run_agent(config, [user_turn("Describe", video_block("base64"))])
        assert result.success, result.status.error
        assert result.output == "a clip"
        (part,) = [
            p for p in server.requests[0].json["messages"][-1]["content"] if p["type"] != "text"
        ]
        assert part == {
            "type": "video_url",
            "video_url": {"url": f"data:video/mp4;base64,{REFERENCE_MP4}"},
        }


@pytest.mark.parametrize(
    ("plugin", "name"),
    [("oma_anthropic", "anthropic"), ("oma_openai", "openai"), ("oma_openai", "minimax")],
)
@pytest.mark.parametrize("kind", ["url", "base64"])
def test_url_and_base64_images_are_carried_by_every_installed_provider(
    plugin: str, name: str, kind: str
) -> None:
    pytest.importorskip(plugin)
    capabilities = _plugin_capabilities(name)
    assert capabilities.mode("image", "user", kind) is Mode.NATIVE
    for media_type in IMAGE_MEDIA_TYPES:
        block = (
            image_url(f"https://example.com/a.{media_type.split('/')[1]}", media_type)
            if kind == "url"
            else image_base64(REFERENCE_PNG, media_type)
        )
        capabilities.check([LLMMessage("user", (block,))], name)


DIAGRAM = "https://example.com/diagram.png"


def _plugin_fake(plugin: str, module: str, name: str) -> type[FakeServer]:
    """A plugin's fake service, from its tests folder (not an importable package), loaded once
    under a name of its own so that it cannot clash with the plugin's own test run."""
    key = f"_oma_{module}"
    if key not in sys.modules:
        path = ROOT / "plugins" / plugin / "tests" / f"{module}.py"
        spec = importlib.util.spec_from_file_location(key, path)
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[key] = loaded  # its attrs classes look themselves up there
        spec.loader.exec_module(loaded)
    fake: type[FakeServer] = getattr(sys.modules[key], name)
    return fake


def _chat_part(body: dict[str, Any]) -> Any:
    (user,) = [m for m in body["messages"] if m["role"] == "user"]
    return user["content"][0]


@attrs.frozen
class _UrlReader:
    """A provider that reads image URLs: its plugin, its fake service and where the URL sits
    in the body that service receives, in the form the service documents."""

    package: str
    name: str
    plugin: str
    fake: tuple[str, str]
    model: str
    versioned: bool  # the SDK's base URL holds the API version (/v1, /v1beta), not the root
    on_wire: Callable[[dict[str, Any]], Any]
    expected: Any


_URL_READERS = (
    _UrlReader(
        "oma_anthropic",
        "anthropic",
        "oma-anthropic",
        ("fake_anthropic", "FakeAnthropic"),
        "claude-test",
        False,
        lambda body: body["messages"][0]["content"][0],
        {"type": "image", "source": {"type": "url", "url": DIAGRAM}},
    ),
    *(
        _UrlReader(
            "oma_openai",
            name,
            "oma-openai",
            ("fake_openai", "FakeChatCompletions"),
            model,
            True,
            _chat_part,
            {"type": "image_url", "image_url": {"url": DIAGRAM}},
        )
        for name, model in (("openai", "gpt-4o"), ("minimax", "MiniMax-M2"))
    ),
    _UrlReader(
        "oma_gemini",
        "gemini",
        "oma-gemini",
        ("fake_gemini", "FakeGemini"),
        "gemini-test",
        True,
        lambda body: body["contents"][0]["parts"][0],
        {"fileData": {"mimeType": "image/png", "fileUri": DIAGRAM}},
    ),
    _UrlReader(
        "oma_mistral",
        "mistral",
        "oma-mistral",
        ("fake_mistral", "FakeMistral"),
        "mistral-small-latest",
        True,
        _chat_part,
        {"type": "image_url", "image_url": DIAGRAM},  # Mistral's image_url is the URL itself
    ),
    _UrlReader(
        "oma_litellm",
        "litellm",
        "oma-litellm",
        ("fake_chat_completions", "FakeChatCompletions"),
        "openai/gpt-fake",
        True,
        _chat_part,
        {"type": "image_url", "image_url": {"url": DIAGRAM}},
    ),
)


def test_the_same_input_is_valid_across_providers() -> None:
    """The reference's cross-provider example: one content array, built once, that every
    installed provider reading image URLs takes (echo too)."""
    built_once = load_messages([user_turn(image_url(DIAGRAM), "Explain this diagram.")])
    names = [reader.name for reader in _URL_READERS if _installed(reader.package)]
    if not names:
        pytest.skip("no provider plugin that reads image URLs is installed")
    for name in (*names, "echo"):
        spec = PluginHost().provider_spec(name)
        spec.capabilities.check(built_once, spec.display_name)


@pytest.mark.parametrize("reader", _URL_READERS, ids=lambda reader: reader.name)
async def test_the_same_input_runs_on_every_provider_that_reads_urls(reader: _UrlReader) -> None:
    pytest.importorskip(reader.package)
    built_once = load_messages([user_turn(image_url(DIAGRAM), "Explain this diagram.")])
    fake: Any = _plugin_fake(reader.plugin, *reader.fake)(api_key="test-key")
    with fake as server:
        config = AgentConfig(
            name="reader",
            provider=reader.name,
            model=reader.model,
            api_key="test-key",
            base_url=server.base_url if reader.versioned else server.url,
            max_retries=0,
        )
        async with OpenMultiAgent() as oma:
            result = await oma.run_agent(config, built_once)
        assert result.success, result.status.error
        [request] = server.requests
        assert reader.on_wire(request.json) == reader.expected
        assert not server.handler_errors


async def test_bedrock_refuses_the_url_image_before_any_request() -> None:
    """Converse takes images inline or from S3 only: the same array is refused locally."""
    pytest.importorskip("oma_bedrock")
    built_once = load_messages([user_turn(image_url(DIAGRAM), "Explain this diagram.")])
    spec = PluginHost().provider_spec("bedrock")
    assert spec.capabilities.mode("image", "user", "url") is None
    fake = _plugin_fake("oma-bedrock", "fake_bedrock", "FakeBedrock")
    with fake(api_key="bedrock-key") as server:
        config = AgentConfig(
            name="reader", provider="bedrock", api_key="bedrock-key", base_url=server.url
        )
        async with OpenMultiAgent() as oma:
            result = await oma.run_agent(config, built_once)
        assert isinstance(result.status.error, UnsupportedContentBlockError)
        assert str(result.status.error) == (
            'Amazon Bedrock cannot represent the "image" content block: url sources are not '
            "supported in a user message"
        )
        assert server.requests == []


def _installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def test_openai_sends_the_detail_option() -> None:
    pytest.importorskip("oma_openai")
    provider = PluginHost().provider_spec("openai").factory(ProviderSettings(api_key="k"))
    block = image_url("https://example.com/a.png", detail="low")
    body = provider.render(
        ProviderRequest("gpt-4o", (LLMMessage("user", (block, TextBlock("hi"))),))
    )
    # OpenAI's own host speaks the Responses API by default.
    (part,) = [p for p in body["input"][-1]["content"] if p["type"] == "input_image"]
    assert part == {
        "type": "input_image",
        "image_url": "https://example.com/a.png",
        "detail": "low",
    }


def test_each_adapter_converts_images_to_its_native_format() -> None:
    pytest.importorskip("oma_anthropic")
    pytest.importorskip("oma_openai")
    messages = load_messages(
        [
            user_turn(
                image_base64(REFERENCE_PNG, "image/png"),
                image_url("https://example.com/b.jpg"),
                "Compare",
            )
        ]
    )
    host = PluginHost()
    claude = host.provider_spec("anthropic").factory(ProviderSettings(api_key="k"))
    claude_parts = claude.render(ProviderRequest("claude-sonnet-4-6", messages))["messages"][0][
        "content"
    ]
    assert claude_parts == [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": REFERENCE_PNG},
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.com/b.jpg"}},
        {"type": "text", "text": "Compare"},
    ]
    gpt = host.provider_spec("openai").factory(ProviderSettings(api_key="k"))
    gpt_parts = gpt.render(ProviderRequest("gpt-4o", messages))["input"][0]["content"]
    assert gpt_parts == [
        # the Responses API requires ``detail``: "auto" where the block sets none
        {
            "type": "input_image",
            "image_url": f"data:image/png;base64,{REFERENCE_PNG}",
            "detail": "auto",
        },
        {"type": "input_image", "image_url": "https://example.com/b.jpg", "detail": "auto"},
        {"type": "input_text", "text": "Compare"},
    ]


def test_anthropic_accepts_an_image_with_detail_and_does_not_send_it() -> None:
    pytest.importorskip("oma_anthropic")
    spec = PluginHost().provider_spec("anthropic")
    provider = spec.factory(ProviderSettings(api_key="k"))
    block = image_url("https://example.com/a.png", detail="high")
    messages = (LLMMessage("user", (block, TextBlock("hi"))),)
    spec.capabilities.check(messages, spec.display_name)
    body = provider.render(ProviderRequest("claude-sonnet-4-6", messages))
    assert "detail" not in json.dumps(body["messages"])
    image = body["messages"][-1]["content"][0]
    assert image["type"] == "image"
    assert image["source"] == {"type": "url", "url": "https://example.com/a.png"}
