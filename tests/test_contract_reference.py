"""The behaviours of the two reference pages that DESIGN.md keeps, as oma's Python API.

reference/structured-agent-input.txt (structured input, video sources, validation and
copying, which adapters accept which blocks, beforeRun, progress and evaluation payloads,
external backends) and reference/multimodal-vision.txt (image helpers, sending images, the
capability matrix, detail, the flat per-image token estimate). Each test names the sentence
it holds oma to. Providers are ``echo``, ``ScriptedProvider`` and, for the few tests about a
real adapter, the installed plugins' declarations, their ``render`` and, for video forwarding, a
small Chat Completions server on 127.0.0.1 (those tests skip when the plugin is not installed).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import hashlib
import json
import math
import re
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import attrs
import pytest

from oma_core import (
    IMAGE_MEDIA_TYPES,
    Agent,
    AgentConfig,
    BackendSpec,
    Base64Source,
    BlockSupport,
    Capabilities,
    EvalCase,
    ImageBlock,
    InvalidMessageError,
    LLMMessage,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    ProviderError,
    ProviderRequest,
    ProviderSettings,
    StreamEvent,
    TaskSpec,
    Team,
    TextBlock,
    ToolResultBlock,
    UnsupportedContentBlockError,
    UrlSource,
    VideoBlock,
    dump_messages,
    estimate_tokens,
    hookimpl,
    image_base64,
    image_url,
    load_messages,
    video_base64,
    video_url,
)
from oma_core.backends import BackendRequest, BackendResult
from oma_core.capabilities import Mode
from oma_core.evaluation import StorePayloads
from oma_core.providers import TextDelta
from oma_core.testing import ScriptedProvider
from oma_core.testing.fake_server import FakeServer, RecordedRequest, Response, SSEEvent

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(60))).decode("ascii")
MP4 = base64.b64encode(b"\x00\x00\x00\x18ftypmp42" + bytes(range(100))).decode("ascii")


# -------------------------------------------------------------------------------------------
# helpers
# -------------------------------------------------------------------------------------------


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": [_text(b) if isinstance(b, str) else b for b in blocks]}


def _assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [_text(text)]}


def _png(kind: str = "base64") -> dict[str, Any]:
    if kind == "base64":
        source = {"type": "base64", "media_type": "image/png", "data": PNG}
    else:
        source = {"type": "url", "media_type": "image/png", "url": "https://example.com/a.png"}
    return {"type": "image", "source": source}


def _video(kind: str = "url") -> dict[str, Any]:
    if kind == "base64":
        source = {"type": "base64", "media_type": "video/mp4", "data": MP4}
    else:
        source = {
            "type": "url",
            "media_type": "video/mp4",
            "url": "https://example.com/clip.mp4",
        }
    return {"type": "video", "source": source}


def _reference_conversation() -> list[dict[str, Any]]:
    """The conversation of the page's first example."""
    return [
        _user("Keep answers concise."),
        _assistant("Understood."),
        _user("What is shown here?", _png()),
    ]


def _host(*plugins: object) -> PluginHost:
    """Built-in plugins only (no installed package adds hooks), plus ``plugins``."""
    host = PluginHost(load_entrypoints=False)
    for plugin in plugins:
        host.register(plugin)
    return host


def _scripted(responses: list[Any], **config: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    agent = Agent(AgentConfig(name="vision", provider=provider, **config), plugins=_host())
    return agent, provider


async def _events(agent: Agent, input: Any) -> list[StreamEvent]:
    return [event async for event in agent.stream(input)]


def _collect(cases: list[EvalCase]) -> Callable[[EvalCase], float]:
    """A scorer that keeps every case it is given."""

    def scorer(case: EvalCase) -> float:
        cases.append(case)
        return 1.0

    return scorer


def _plugin_capabilities(name: str) -> Capabilities:
    capabilities = PluginHost().provider_spec(name).capabilities
    assert isinstance(capabilities, Capabilities)
    return capabilities


# -------------------------------------------------------------------------------------------
# string form and structured form
# -------------------------------------------------------------------------------------------


async def test_the_string_form_is_shorthand_for_one_user_text_message() -> None:
    agent, provider = _scripted(["a", "b"])
    await agent.run("What is shown?")
    await agent.run([_user("What is shown?")])
    first, second = provider.requests
    assert first.messages == (LLMMessage("user", (TextBlock("What is shown?"),)),)
    assert first.messages == second.messages


async def test_run_agent_accepts_the_reference_conversation_with_a_base64_image() -> None:
    oma = OpenMultiAgent(plugins=_host())
    result = await oma.run_agent(
        AgentConfig(name="vision", model="claude-sonnet-4-6"), _reference_conversation()
    )
    assert result.success
    # echo describes every message it received: all three turns and the image arrived
    assert "Keep answers concise." in result.output
    assert "Understood." in result.output
    assert "image/png" in result.output and "base64" in result.output


async def test_run_stream_and_run_agent_send_the_complete_conversation() -> None:
    conversation = _reference_conversation()
    expected = load_messages(conversation)
    agent, provider = _scripted(["1", "2"])
    await agent.run(conversation)
    await _events(agent, conversation)
    oma_provider = ScriptedProvider(["3"])
    oma = OpenMultiAgent(plugins=_host())
    await oma.run_agent(AgentConfig(name="v", provider=oma_provider), conversation)
    assert [r.messages for r in provider.requests] == [expected, expected]
    assert oma_provider.requests[0].messages == expected


async def test_messages_and_blocks_may_be_objects_or_dicts_mixed_freely() -> None:
    agent, provider = _scripted(["ok"])
    message = LLMMessage("user", (TextBlock("from an object"),))
    await agent.run([message, _assistant("r"), _user(image_url("https://example.com/a.png"), "t")])
    sent = provider.requests[0].messages
    assert sent[0] == message
    assert isinstance(sent[2].content[0], ImageBlock)


# -------------------------------------------------------------------------------------------
# video blocks and their sources
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["url", "base64"])
def test_a_video_block_carries_inline_base64_or_a_remote_reference(kind: str) -> None:
    (message,) = load_messages([_user(_video(kind))])
    block = message.content[0]
    assert isinstance(block, VideoBlock)
    assert block.source.type == kind
    assert block.source.media_type == "video/mp4"
    assert dump_messages([message])[0]["content"][0] == _video(kind)


def test_validating_a_video_url_touches_neither_network_nor_files(no_io: None) -> None:
    (message,) = load_messages([_user("Describe", _video("url"))])
    assert message.content[1] == video_url("https://example.com/clip.mp4")


async def test_a_video_url_reaches_the_provider_as_a_url_not_fetched_by_oma() -> None:
    agent, provider = _scripted(["seen"])
    result = await agent.run([_user("Describe", _video("url"))])
    assert result.success
    block = provider.requests[0].messages[0].content[1]
    assert isinstance(block, VideoBlock) and isinstance(block.source, UrlSource)
    assert block.source.url == "https://example.com/clip.mp4"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///home/me/clip.mp4", "must use HTTP or HTTPS"),
        ("mm_file://abc123", "must be an absolute HTTP(S) URL"),
        ("data:video/mp4;base64," + MP4, "must use HTTP or HTTPS"),
        ("s3://bucket/clip.mp4", "must use HTTP or HTTPS"),
        ("/tmp/clip.mp4", "must be an absolute HTTP(S) URL"),
        ("ftp://example.com/clip.mp4", "must use HTTP or HTTPS"),
    ],
)
async def test_a_video_url_that_is_not_http_is_refused_before_an_adapter_sees_it(
    url: str, reason: str
) -> None:
    agent, provider = _scripted(["never"])
    video = {"type": "video", "source": {"type": "url", "media_type": "video/mp4", "url": url}}
    with pytest.raises(InvalidMessageError, match=re.escape(reason)) as caught:
        agent.run([_user("x", video)])
    assert caught.value.path == "messages[0].content[1].source.url"
    assert MP4 not in str(caught.value)
    assert provider.requests == []


def _file_video() -> dict[str, Any]:
    return {
        "type": "video",
        "source": {"type": "url", "media_type": "video/mp4", "url": "file:///tmp/clip.mp4"},
    }


@pytest.mark.parametrize("entry", ["run", "stream", "prompt", "run_agent", "history"])
async def test_video_sources_are_validated_at_every_public_entry_point(entry: str) -> None:
    provider = ScriptedProvider(["never"])
    config = AgentConfig(name="v", provider=provider)
    agent = Agent(config, plugins=_host())
    with pytest.raises(InvalidMessageError, match="must use HTTP or HTTPS"):
        if entry == "run":
            agent.run([_user("x", _file_video())])
        elif entry == "stream":
            agent.stream([_user("x", _file_video())])
        elif entry == "prompt":
            agent.prompt([_text("x"), _file_video()])
        elif entry == "run_agent":
            _ = OpenMultiAgent(plugins=_host()).run_agent(config, [_user("x", _file_video())])
        else:
            Agent(AgentConfig(name="v", history=[_user(_file_video())]), plugins=_host())
    assert provider.requests == []


async def test_a_video_source_a_hook_returns_is_validated_and_fails_the_run() -> None:
    agent, provider = _scripted(
        ["never"], before_run=lambda ctx: {"messages": [_user("x", _file_video())]}
    )
    result = await agent.run("hi")
    assert not result.success
    assert "must use HTTP or HTTPS" in str(result.status.error)
    assert provider.requests == []


async def test_a_video_streams_to_the_provider_like_it_runs() -> None:
    agent, provider = _scripted(["seen it"])
    events = await _events(agent, [_user("Describe", _video("base64"))])
    assert events[-1].type == "done" and events[-1].data.success
    block = provider.requests[0].messages[0].content[1]
    assert isinstance(block, VideoBlock) and block.source == Base64Source("video/mp4", MP4)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (
            {"type": "base64", "media_type": "video/mp4", "data": "data:video/mp4;base64," + MP4},
            "must contain raw base64 data",
        ),
        (
            {"type": "base64", "media_type": "video/mp4", "data": MP4[:20] + "\n" + MP4[20:]},
            "must contain raw base64 data",
        ),
        (
            {"type": "base64", "media_type": "video/mp4; codecs=avc1", "data": MP4},
            "MIME type without parameters",
        ),
        (
            {"type": "file", "media_type": "video/mp4", "path": "/tmp/clip.mp4"},
            'must be "base64" or "url"',
        ),
    ],
)
def test_a_video_source_must_be_raw_canonical_base64_with_a_parameterless_mime_type(
    source: dict[str, Any], reason: str
) -> None:
    with pytest.raises(InvalidMessageError, match=reason):
        load_messages([_user({"type": "video", "source": source})])


def test_tool_result_media_follow_the_same_source_rules() -> None:
    def result_with(url: str) -> dict[str, Any]:
        image = {"type": "image", "source": {"type": "url", "media_type": "image/png", "url": url}}
        return {"type": "tool_result", "tool_use_id": "t1", "content": [image]}

    call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "snap", "input": {}}],
    }
    load_messages([_user("go"), call, _user(result_with("https://example.com/a.png"))])
    with pytest.raises(InvalidMessageError, match="must use HTTP or HTTPS") as caught:
        load_messages([_user("go"), call, _user(result_with("file:///etc/a.png"))])
    assert caught.value.path.startswith("messages[2].content[0].content[0].source")


def test_the_video_helpers_build_both_source_shapes() -> None:
    remote = video_url("https://example.com/clip.mp4")
    inline = video_base64(MP4, "video/mp4")
    assert remote.source == UrlSource("video/mp4", "https://example.com/clip.mp4")
    assert inline.source == Base64Source("video/mp4", MP4)
    with pytest.raises(InvalidMessageError):
        video_url("mm_file://abc123", "video/mp4")


# -------------------------------------------------------------------------------------------
# which adapters accept which blocks
# -------------------------------------------------------------------------------------------


async def test_a_provider_that_cannot_carry_a_block_refuses_it_instead_of_dropping_it() -> None:
    provider = ScriptedProvider(["never"], capabilities=Capabilities.text_only())
    agent = Agent(AgentConfig(name="t", provider=provider), plugins=_host())
    result = await agent.run([_user("What is this?", _png())])
    assert not result.success
    assert isinstance(result.status.error, UnsupportedContentBlockError)
    assert result.status.error.block_type == "image"
    assert provider.requests == []


async def test_a_stream_with_an_unsupported_block_ends_with_error_then_done() -> None:
    provider = ScriptedProvider(["never"], capabilities=Capabilities.text_only())
    agent = Agent(AgentConfig(name="t", provider=provider), plugins=_host())
    events = await _events(agent, [_user("x", _video())])
    assert [e.type for e in events] == ["error", "done"]
    assert isinstance(events[0].data, UnsupportedContentBlockError)
    assert events[1].data.status.error is events[0].data


async def test_an_unsupported_block_is_terminal_and_never_retried() -> None:
    provider = ScriptedProvider(["never"], capabilities=Capabilities.text_only())
    progress: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=progress.append, max_retries=3, plugins=_host())
    result = await oma.run_agent(
        AgentConfig(name="t", provider=provider), [_user("x", _video())], max_retries=3
    )
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert error.retryable is False and error.code == "UNSUPPORTED_CONTENT_BLOCK"
    assert [e for e in progress if e.type == "retry"] == []
    assert provider.requests == []


async def test_a_provider_error_for_a_forwarded_block_follows_the_normal_failure_path() -> None:
    refusal = ProviderError("video_url is not supported by this model", status_code=400)
    agent, provider = _scripted([refusal])
    result = await agent.run([_user("x", _video())])  # returns, does not raise
    assert not result.success
    assert result.status.code == "error"
    assert result.status.error is refusal
    assert len(provider.requests) == 1  # forwarded, and refused by the service, not by oma
    events = await _events(_scripted([refusal])[0], [_user("x", _video())])
    assert [e.type for e in events][-2:] == ["error", "done"]


def test_anthropic_declares_no_video_and_refuses_it_locally() -> None:
    pytest.importorskip("oma_anthropic")
    spec = PluginHost().provider_spec("anthropic")
    assert spec.display_name == "Anthropic Messages"
    assert spec.capabilities.mode("video", "user") is None
    with pytest.raises(UnsupportedContentBlockError) as caught:
        spec.capabilities.check(load_messages([_user("x", _video())]), spec.display_name)
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
    result = await oma.run_agent(config, [_user("What happens?", _video())])
    assert not result.success
    assert isinstance(result.status.error, UnsupportedContentBlockError)
    assert result.status.error.block_type == "video"
    assert [e for e in progress if e.type == "retry"] == []


@pytest.mark.parametrize("media_type", ["image/tiff", "image/bmp", "image/svg+xml"])
def test_installed_providers_refuse_image_types_outside_their_table(media_type: str) -> None:
    pytest.importorskip("oma_anthropic")
    pytest.importorskip("oma_openai")
    messages = load_messages([_user(image_base64(PNG, media_type))])
    for name in ("anthropic", "openai"):
        spec = PluginHost().provider_spec(name)
        with pytest.raises(UnsupportedContentBlockError, match=re.escape(media_type)):
            spec.capabilities.check(messages, spec.display_name)
    Capabilities.everything().check(messages, "Echo")  # a valid block, just not for them


async def test_oma_does_not_infer_a_vision_flag_from_the_model_name() -> None:
    pytest.importorskip("oma_openai")
    config = AgentConfig(name="o", provider="openai", model="gpt-3.5-turbo", api_key="k")
    agent = Agent(config, plugins=PluginHost())
    request = agent.build_request([_user("What is it?", _png("url"))])
    body = agent.provider().render(request)
    parts = body["messages"][-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    await agent.aclose()


def test_the_anthropic_adapter_itself_refuses_video_rather_than_dropping_it() -> None:
    pytest.importorskip("oma_anthropic")
    provider = PluginHost().provider_spec("anthropic").factory(ProviderSettings(api_key="k"))
    request = ProviderRequest("claude-sonnet-4-6", load_messages([_user("x", _video())]))
    with pytest.raises(UnsupportedContentBlockError, match='"video"'):
        provider.render(request)


@pytest.mark.parametrize(
    ("plugin", "name", "block"),
    [
        ("oma_anthropic", "anthropic", _video()),
        ("oma_openai", "deepseek", _png("url")),
        ("oma_openai", "groq", _video()),
    ],
)
async def test_a_plugin_provider_object_passed_directly_keeps_its_capabilities(
    plugin: str, name: str, block: dict[str, Any]
) -> None:
    pytest.importorskip(plugin)
    spec = PluginHost().provider_spec(name)
    provider = spec.factory(ProviderSettings(base_url="http://127.0.0.1:9", api_key="k"))
    agent = Agent(AgentConfig(name="direct", provider=provider, model="m"), plugins=_host())
    result = await agent.run([_user("x", block)])
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert error.provider == spec.display_name
    await provider.aclose()


@pytest.mark.parametrize("name", ["openai", "minimax"])
def test_openai_shaped_adapters_forward_video_for_the_service_to_decide(name: str) -> None:
    pytest.importorskip("oma_openai")
    capabilities = _plugin_capabilities(name)
    assert capabilities.mode("video", "user", "url") is Mode.FORWARDED
    capabilities.check(load_messages([_user("x", _video())]), name)


def test_openai_renders_a_video_block_as_a_video_url_content_part() -> None:
    pytest.importorskip("oma_openai")
    spec = PluginHost().provider_spec("minimax")
    provider = spec.factory(ProviderSettings(api_key="test-key"))
    request = ProviderRequest("MiniMax-M1", load_messages([_user("Describe", _video())]))
    body = provider.render(request)
    user = [m for m in body["messages"] if m["role"] == "user"][-1]
    assert {"type": "video_url", "video_url": {"url": "https://example.com/clip.mp4"}} in user[
        "content"
    ]


def test_openai_renders_a_base64_video_as_a_data_url_video_part() -> None:
    pytest.importorskip("oma_openai")
    provider = PluginHost().provider_spec("minimax").factory(ProviderSettings(api_key="k"))
    request = ProviderRequest("MiniMax-M1", load_messages([_user(_video("base64"))]))
    body = provider.render(request)
    parts = body["messages"][-1]["content"]
    video_parts = [p for p in parts if p["type"] == "video_url"]
    assert video_parts == [
        {"type": "video_url", "video_url": {"url": f"data:video/mp4;base64,{MP4}"}}
    ]


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
            result = await oma.run_agent(config, [_user("What happens?", _video())])
        else:
            agent = Agent(config)
            events = await _events(agent, [_user("What happens?", _video())])
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
        result = await OpenMultiAgent().run_agent(config, [_user("Describe", _video("base64"))])
        assert result.success, result.status.error
        assert result.output == "a clip"
        (part,) = [
            p for p in server.requests[0].json["messages"][-1]["content"] if p["type"] != "text"
        ]
        assert part == {"type": "video_url", "video_url": {"url": f"data:video/mp4;base64,{MP4}"}}


# -------------------------------------------------------------------------------------------
# API boundaries: run and stream are fresh, prompt keeps a history
# -------------------------------------------------------------------------------------------


async def test_run_does_not_read_or_update_persistent_history() -> None:
    agent, provider = _scripted(["r1", "r2"], history=[_user("old"), _assistant("older")])
    await agent.run("fresh")
    await _events(agent, [_user("also fresh")])
    assert [len(r.messages) for r in provider.requests] == [1, 1]
    assert dump_messages(agent.get_history()) == [_user("old"), _assistant("older")]


async def test_prompt_appends_the_turn_and_the_response_to_history() -> None:
    agent, provider = _scripted(["a cat"], history=[_user("hi"), _assistant("hello")])
    result = await agent.prompt([image_url("https://example.com/a.png"), _text("What is it?")])
    assert result.success
    sent = provider.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "user"]  # history is kept, not replaced
    history = dump_messages(agent.get_history())
    assert history[:2] == [_user("hi"), _assistant("hello")]
    assert history[2]["role"] == "user" and history[2]["content"][0]["type"] == "image"
    assert history[3] == _assistant("a cat")


async def test_prompt_takes_a_tuple_of_blocks_as_one_user_turn() -> None:
    agent, provider = _scripted(["ok"])
    await agent.prompt((_text("a"), image_url("https://example.com/a.png")))
    (turn,) = provider.requests[0].messages
    assert turn.role == "user" and [b.type for b in turn.content] == ["text", "image"]


@pytest.mark.parametrize(
    ("blocks", "path", "reason"),
    [
        ([], "messages[0].content", "at least one content block"),
        (
            [
                _text("ok"),
                {
                    "type": "image",
                    "source": {"type": "url", "media_type": "image/png", "url": "file:///x.png"},
                },
            ],
            "messages[0].content[1].source.url",
            "must use HTTP or HTTPS",
        ),
        (
            [_text("ok"), {"type": "tool_use", "id": "t", "name": "n", "input": {}}],
            "messages[0].content[1]",
            "only assistant messages",
        ),
    ],
)
def test_prompt_checks_its_blocks_as_the_first_messages_content(
    blocks: list[Any], path: str, reason: str
) -> None:
    agent, _ = _scripted([])
    with pytest.raises(InvalidMessageError, match=re.escape(reason)) as caught:
        agent.prompt(blocks)
    assert caught.value.path == path
    assert str(caught.value).startswith(path)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"role": "user", "content": [_text("x")]}, "messages must be a list, got dict"),
        ([], "at least one"),
        (
            [_user("a"), {"role": "user", "content": "b"}],
            "messages[1].content must be a list of content blocks, got str",
        ),
        (None, "got None"),
    ],
)
def test_run_and_run_agent_refuse_malformed_conversations(value: Any, message: str) -> None:
    agent, _ = _scripted([])
    with pytest.raises(InvalidMessageError, match=re.escape(message)):
        agent.run(value)
    with pytest.raises(InvalidMessageError, match=re.escape(message)):
        _ = OpenMultiAgent(plugins=_host()).run_agent(AgentConfig(name="v"), value)


async def test_history_seeds_prompt_only() -> None:
    agent, provider = _scripted(["p", "r"], history=[_user("seed"), _assistant("ok")])
    await agent.prompt("next")
    await agent.run("alone")
    assert len(provider.requests[0].messages) == 3
    assert len(provider.requests[1].messages) == 1


async def test_prompt_cannot_insert_assistant_turns() -> None:
    agent, provider = _scripted(["never"])
    with pytest.raises(InvalidMessageError):
        agent.prompt([_assistant("I said so")])
    with pytest.raises(InvalidMessageError):
        agent.prompt([{"type": "tool_use", "id": "t", "name": "n", "input": {}}])
    assert agent.get_history() == [] and provider.requests == []


def test_an_invalid_history_makes_the_agent_constructor_raise() -> None:
    with pytest.raises(InvalidMessageError):
        Agent(AgentConfig(name="a", history=[_user({"type": "image"})]), plugins=_host())


async def test_run_agent_is_a_fresh_one_off_agent_each_time() -> None:
    provider = ScriptedProvider(["a", "b"])
    oma = OpenMultiAgent(plugins=_host())
    config = AgentConfig(name="v", provider=provider, history=[_user("seed"), _assistant("k")])
    await oma.run_agent(config, "one")
    await oma.run_agent(config, "two")
    assert [len(r.messages) for r in provider.requests] == [1, 1]


async def test_team_goals_and_task_descriptions_remain_text_only() -> None:
    with pytest.raises((TypeError, ValueError, InvalidMessageError)):
        TaskSpec("t", [_text("a block")])  # type: ignore[arg-type]
    oma = OpenMultiAgent(plugins=_host())
    team = Team("team", [AgentConfig(name="a")])
    with pytest.raises((TypeError, ValueError, InvalidMessageError)):
        await oma.run_team(team, [_user("goal")])  # type: ignore[arg-type]


# -------------------------------------------------------------------------------------------
# copying and validation
# -------------------------------------------------------------------------------------------


async def test_mutating_the_callers_data_after_the_call_does_not_change_the_run() -> None:
    agent, provider = _scripted(["ok"])
    tool_call: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "zoom", "input": {"factor": [2]}}],
    }
    result_turn = _user({"type": "tool_result", "tool_use_id": "t1", "content": "zoomed"})
    image = _png("url")
    conversation = [_user("look", image), tool_call, result_turn]
    expected = dump_messages(load_messages(conversation))
    pending = agent.run(conversation)
    # mutate arrays, blocks, the image source and the tool input before the run starts
    conversation[0]["content"].append(_text("injected"))
    image["source"]["url"] = "https://evil.example/b.png"
    tool_call["content"][0]["input"]["factor"].append(99)
    conversation.append(_user("later"))
    assert (await pending).success
    assert dump_messages(provider.requests[0].messages) == expected


@pytest.mark.parametrize("entry", ["run", "stream", "run_agent", "prompt"])
async def test_every_entry_point_copies_its_input_when_called(entry: str) -> None:
    provider = ScriptedProvider(["ok"])
    config = AgentConfig(name="v", provider=provider)
    agent = Agent(config, plugins=_host())
    image = _png("url")
    turn = _user("What is shown?", image)
    if entry == "run":
        pending: Any = agent.run([turn])
    elif entry == "stream":
        pending = agent.stream([turn])
    elif entry == "run_agent":
        pending = OpenMultiAgent(plugins=_host()).run_agent(config, [turn])
    else:
        pending = agent.prompt(turn["content"])
    turn["content"][0]["text"] = "changed"
    image["source"]["url"] = "https://evil.example/x.png"
    turn["content"].clear()
    if entry == "stream":
        async with pending as events:
            kinds = [event.type async for event in events]
        assert kinds[-1] == "done"
    else:
        assert (await pending).success
    sent = dump_messages(provider.requests[0].messages)
    assert sent == [_user("What is shown?", _png("url"))]
    if entry == "prompt":
        assert dump_messages(agent.get_history())[0] == _user("What is shown?", _png("url"))


async def test_mutating_a_run_result_does_not_change_history() -> None:
    agent, _ = _scripted(["reply"])
    result = await agent.prompt("hi")
    result.messages.append(load_messages([_user("injected")])[0])
    assert dump_messages(agent.get_history()) == [_user("hi"), _assistant("reply")]


async def test_history_messages_cannot_be_changed_through_what_get_history_returns() -> None:
    call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "zoom", "input": {"xs": [1]}}],
    }
    result_turn = _user({"type": "tool_result", "tool_use_id": "t1", "content": "done"})
    agent, _ = _scripted([], history=[_user("go"), call, result_turn, _assistant("ok")])
    block = agent.get_history()[1].content[0]
    for mutate in (
        lambda: block.input.__setitem__("xs", []),  # type: ignore[union-attr,index]
        lambda: block.input["xs"].append(2),  # type: ignore[union-attr]
        lambda: setattr(block, "name", "other"),
    ):
        with contextlib.suppress(TypeError, AttributeError):
            mutate()
    assert dump_messages(agent.get_history())[1] == call


async def test_get_history_returns_a_copy() -> None:
    agent, _ = _scripted(["r"])
    await agent.prompt("hi")
    history = agent.get_history()
    history.clear()
    assert len(agent.get_history()) == 2
    assert agent.get_history() is not agent.get_history()


@pytest.mark.parametrize(
    ("bad", "bad_blocks"),
    [
        pytest.param(
            _user({"type": "text", "text": print}), [{"type": "text", "text": print}], id="function"
        ),
        pytest.param(
            _user({"type": "text", "text": b"x"}), [{"type": "text", "text": b"x"}], id="bytes"
        ),
        pytest.param(
            {"role": "system", "content": [_text("x")]}, [{"type": "system"}], id="role-and-type"
        ),
        pytest.param({"role": "user", "content": "plain"}, [_assistant("x")], id="shape"),
        pytest.param(_user({"type": "image"}), [{"type": "image"}], id="no-source"),
        pytest.param(
            _user({"type": "text", "text": "x", "cache_control": {}}),
            [{"type": "text", "text": "x", "cache_control": {}}],
            id="magic-key",
        ),
    ],
)
async def test_invalid_input_raises_before_hooks_providers_progress_or_evaluation(
    bad: dict[str, Any], bad_blocks: list[Any]
) -> None:
    hook_calls: list[Any] = []
    provider = ScriptedProvider(["never"])
    progress: list[ProgressEvent] = []
    scored: list[EvalCase] = []
    oma = OpenMultiAgent(
        on_progress=progress.append,
        evaluation=OnlineEvaluationConfig(scorers=[_collect(scored)]),
        plugins=_host(),
    )
    config = AgentConfig(name="v", provider=provider, before_run=hook_calls.append)
    agent = Agent(config, plugins=_host())
    with pytest.raises(InvalidMessageError):
        agent.run([bad])
    with pytest.raises(InvalidMessageError):
        agent.stream([bad])
    with pytest.raises(InvalidMessageError):
        _ = oma.run_agent(config, [bad])
    with pytest.raises(InvalidMessageError):
        agent.prompt(bad_blocks)
    await oma.evaluation.flush()
    assert hook_calls == [] and provider.requests == [] and progress == [] and scored == []
    assert oma.evaluation.stats().sampled == 0
    assert agent.get_history() == []


def test_data_that_cannot_be_cloned_is_an_invalid_message_error() -> None:
    call = {"type": "tool_use", "id": "t", "name": "n", "input": {"when": {1, 2}}}
    with pytest.raises(InvalidMessageError, match="cloneable structured data"):
        load_messages([_user("x"), {"role": "assistant", "content": [call]}])
    assert issubclass(InvalidMessageError, ValueError)


@pytest.mark.parametrize(
    "value",
    [print, {1, 2}, b"bytes", datetime.datetime(2026, 1, 1), object()],
    ids=["function", "set", "bytes", "datetime", "object"],
)
@pytest.mark.parametrize("where", ["tool input", "text", "block", "content", "message"])
def test_uncloneable_data_anywhere_is_refused_as_such(value: Any, where: str) -> None:
    if where == "tool input":
        call = {"type": "tool_use", "id": "t", "name": "n", "input": {"x": [value]}}
        data: Any = [_user("x"), {"role": "assistant", "content": [call]}]
    elif where == "text":
        data = [_user({"type": "text", "text": value})]
    elif where == "block":
        data = [_user("x", value)]
    elif where == "content":
        data = [{"role": "user", "content": value}]
    else:
        data = [_user("x"), value]
    agent, provider = _scripted(["never"])
    with pytest.raises(
        InvalidMessageError, match="messages must contain cloneable structured data"
    ):
        agent.run(data)
    assert provider.requests == []


async def test_stream_validates_when_called_before_the_iterator_starts() -> None:
    agent, provider = _scripted(["never"])
    with pytest.raises(InvalidMessageError, match="messages must be a list, got dict"):
        agent.stream(_user("not wrapped in a list"))  # type: ignore[arg-type]
    assert provider.requests == []


async def test_an_invalid_prompt_is_not_appended_to_history() -> None:
    agent, _ = _scripted(["r"], history=[_user("a"), _assistant("b")])
    with pytest.raises(InvalidMessageError):
        agent.prompt([{"type": "image", "source": {"type": "url", "url": "file:///x.png"}}])
    assert dump_messages(agent.get_history()) == [_user("a"), _assistant("b")]


async def test_a_failed_prompt_leaves_history_as_it_was() -> None:
    agent, _ = _scripted([ProviderError("down", status_code=400)])
    result = await agent.prompt("hello")
    assert not result.success
    assert agent.get_history() == []


# -------------------------------------------------------------------------------------------
# beforeRun
# -------------------------------------------------------------------------------------------


async def test_before_run_receives_a_message_copy_and_the_latest_user_text() -> None:
    seen: list[Any] = []
    agent, _ = _scripted(["ok"], before_run=seen.append)
    conversation = [
        _user("old text"),
        _assistant("a"),
        _user("What is ", _png("url"), "shown here?"),
    ]
    await agent.run(conversation)
    (ctx,) = seen
    assert ctx.messages == load_messages(conversation)
    assert ctx.prompt == "What is shown here?"


async def test_an_image_only_turn_has_an_empty_prompt_but_full_messages() -> None:
    seen: list[Any] = []
    agent, _ = _scripted(["ok"], before_run=seen.append)
    await agent.run([_user("earlier"), _assistant("a"), _user(_png())])
    assert seen[0].prompt == ""
    assert isinstance(seen[0].messages[-1].content[0], ImageBlock)


async def test_before_run_may_return_the_context_spread_with_changes() -> None:
    def hook(ctx: Any) -> dict[str, Any]:
        return {"messages": ctx.messages, "prompt": ctx.prompt, "agent": ctx.agent}

    agent, provider = _scripted(["ok"], before_run=hook)
    conversation = _reference_conversation()
    assert (await agent.run(conversation)).success
    assert provider.requests[0].messages == load_messages(conversation)


@pytest.mark.parametrize("style", ["evolve", "mapping", "async", "none"])
async def test_before_run_return_forms(style: str) -> None:
    def hook(ctx: Any) -> Any:
        if style == "evolve":
            return attrs.evolve(ctx, prompt="changed")
        if style == "mapping":
            return {"prompt": "changed"}
        return None

    async def async_hook(ctx: Any) -> Any:
        await asyncio.sleep(0)
        return {"prompt": "changed"}

    agent, provider = _scripted(["ok"], before_run=async_hook if style == "async" else hook)
    await agent.run([_user("orig", _png("url"))])
    expected = "orig" if style == "none" else "changed"
    assert dump_messages(provider.requests[0].messages) == [_user(expected, _png("url"))]


async def test_a_prompt_rewrite_of_an_image_only_turn_prepends_a_text_block() -> None:
    agent, provider = _scripted(["ok"], before_run=lambda ctx: {"prompt": "Describe it."})
    await agent.run([_user(_png("url"), _png())])
    assert dump_messages(provider.requests[0].messages) == [
        _user("Describe it.", _png("url"), _png())
    ]


async def test_before_run_messages_are_a_copy_the_hook_cannot_change_in_place() -> None:
    def hook(ctx: Any) -> None:
        assert isinstance(ctx.messages, tuple)
        with pytest.raises((TypeError, AttributeError)):
            ctx.messages[0].content[0].text = "hacked"

    agent, provider = _scripted(["ok"], before_run=hook)
    result = await agent.run([_user("safe")])
    assert result.success
    assert dump_messages(provider.requests[0].messages) == [_user("safe")]


async def test_before_run_on_prompt_sees_history_plus_the_new_turn() -> None:
    seen: list[Any] = []
    agent, _ = _scripted(["r"], history=[_user("old"), _assistant("a")], before_run=seen.append)
    await agent.prompt([_png("url"), _text("new question")])
    assert dump_messages(seen[0].messages) == [
        _user("old"),
        _assistant("a"),
        _user(_png("url"), "new question"),
    ]
    assert seen[0].prompt == "new question"


async def test_returning_messages_replaces_the_complete_input() -> None:
    replacement = [_user("a whole new conversation")]
    agent, provider = _scripted(["ok"], before_run=lambda ctx: {"messages": replacement})
    await agent.run(_reference_conversation())
    assert provider.requests[0].messages == load_messages(replacement)


async def test_a_spread_context_with_new_messages_and_the_old_prompt_keeps_the_new_text() -> None:
    def hook(ctx: Any) -> dict[str, Any]:
        return {"agent": ctx.agent, "prompt": ctx.prompt, "messages": [_user("replacement")]}

    agent, provider = _scripted(["ok"], before_run=hook)
    await agent.run("original")
    assert dump_messages(provider.requests[0].messages) == [_user("replacement")]


async def test_evolving_only_the_messages_replaces_the_input() -> None:
    def hook(ctx: Any) -> Any:
        return attrs.evolve(ctx, messages=load_messages([_user("replacement", _png("url"))]))

    agent, provider = _scripted(["ok"], before_run=hook)
    await agent.run("original")
    assert dump_messages(provider.requests[0].messages) == [_user("replacement", _png("url"))]


async def test_messages_are_replaced_first_then_the_prompt_and_non_text_keeps_order() -> None:
    a = _png("url")
    b = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}

    def hook(ctx: Any) -> dict[str, Any]:
        return {
            "messages": [_user("ignored"), _assistant("x"), _user(a, "t1", b, "t2")],
            "prompt": "new",
        }

    agent, provider = _scripted(["ok"], before_run=hook)
    await agent.run("original")
    sent = dump_messages(provider.requests[0].messages)
    assert sent[0] == _user("ignored")  # only the latest user turn's text is replaced
    assert sent[-1] == _user(a, "new", b)


async def test_a_prompt_rewrite_alone_replaces_the_latest_user_text_blocks() -> None:
    agent, provider = _scripted(["ok"], before_run=lambda ctx: {"prompt": ctx.prompt.upper()})
    await agent.run([_user("first"), _assistant("a"), _user("one ", _png("url"), "two")])
    sent = dump_messages(provider.requests[0].messages)
    assert sent[0] == _user("first")
    assert sent[-1] == _user("ONE TWO", _png("url"))


async def test_a_hook_rewrite_does_not_touch_caller_data_or_the_stored_prompt_turn() -> None:
    agent, provider = _scripted(["ok"], before_run=lambda ctx: {"prompt": "rewritten"})
    blocks = [_png("url"), _text("original")]
    snapshot = json.dumps(blocks)
    result = await agent.prompt(blocks)
    assert result.success
    assert json.dumps(blocks) == snapshot
    assert dump_messages(provider.requests[0].messages)[-1] == _user(_png("url"), "rewritten")
    assert dump_messages(agent.get_history())[0] == _user(_png("url"), "original")


async def test_package_before_run_hooks_run_first_then_the_agents_own() -> None:
    order: list[str] = []

    class Package:
        @hookimpl
        def oma_before_run(self, ctx: Any) -> dict[str, Any]:
            order.append("package:" + ctx.prompt)
            return {"prompt": ctx.prompt + " +pkg"}

    def own(ctx: Any) -> dict[str, Any]:
        order.append("agent:" + ctx.prompt)
        return {"prompt": ctx.prompt + " +own"}

    provider = ScriptedProvider(["ok"])
    agent = Agent(
        AgentConfig(name="v", provider=provider, before_run=own), plugins=_host(Package())
    )
    await agent.run("hi")
    assert order == ["package:hi", "agent:hi +pkg"]
    assert provider.requests[0].messages[-1].content == (TextBlock("hi +pkg +own"),)


async def test_a_hook_returning_invalid_messages_fails_the_run_without_raising() -> None:
    agent, provider = _scripted(["never"], before_run=lambda ctx: {"messages": [{"role": "x"}]})
    result = await agent.run("hi")
    assert not result.success and provider.requests == []
    events = await _events(_scripted(["never"], before_run=lambda ctx: 1 / 0)[0], [_user("hi")])
    assert [e.type for e in events] == ["error", "done"]
    assert events[-1].data.success is False


# -------------------------------------------------------------------------------------------
# progress and online evaluation
# -------------------------------------------------------------------------------------------


async def test_agent_start_carries_the_prompt_for_string_input() -> None:
    progress: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=progress.append, plugins=_host())
    await oma.run_agent(AgentConfig(name="vision"), "What is shown?")
    start = next(e for e in progress if e.type == "agent_start")
    assert start.agent == "vision"
    assert start.data == {"prompt": "What is shown?"}


async def test_agent_start_carries_the_messages_for_structured_input() -> None:
    progress: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=progress.append, plugins=_host())
    conversation = _reference_conversation()
    await oma.run_agent(AgentConfig(name="vision"), conversation)
    start = next(e for e in progress if e.type == "agent_start")
    assert set(start.data) == {"messages"}
    assert isinstance(start.data["messages"], tuple)
    assert start.data["messages"] == load_messages(conversation)


async def test_progress_callback_mutations_cannot_affect_execution_or_evaluation() -> None:
    def meddle(event: ProgressEvent) -> None:
        if event.type == "agent_start":
            event.data["messages"] = (LLMMessage("user", (TextBlock("tampered"),)),)
            event.data.clear()

    cases: list[EvalCase] = []
    provider = ScriptedProvider(["fine"])
    oma = OpenMultiAgent(
        on_progress=meddle,
        evaluation=OnlineEvaluationConfig(scorers=[_collect(cases)], store_payloads="full"),
        plugins=_host(),
    )
    conversation = [_user("original question")]
    result = await oma.run_agent(AgentConfig(name="v", provider=provider), conversation)
    await oma.evaluation.flush()
    assert result.success
    assert dump_messages(provider.requests[0].messages) == conversation
    assert json.loads(cases[0].input) == conversation


async def test_one_observer_mutating_its_event_does_not_change_what_another_sees() -> None:
    seen: list[dict[str, Any]] = []

    class Watcher:
        @hookimpl
        def oma_progress(self, event: ProgressEvent) -> None:
            if event.type == "agent_start":
                seen.append(dict(event.data))

    def meddle(event: ProgressEvent) -> None:
        event.data.clear()

    oma = OpenMultiAgent(on_progress=meddle, plugins=_host(Watcher()))
    conversation = _reference_conversation()
    await oma.run_agent(AgentConfig(name="v"), conversation)
    assert seen == [{"messages": load_messages(conversation)}]


async def _evaluated(input: Any, store_payloads: StorePayloads) -> EvalCase:
    cases: list[EvalCase] = []
    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(scorers=[_collect(cases)], store_payloads=store_payloads),
        plugins=_host(),
    )
    result = await oma.run_agent(AgentConfig(name="v"), input)
    await oma.evaluation.flush()
    (case,) = cases
    assert case.output == result.output  # scorers see the output in every mode
    return case


async def test_evaluation_under_none_omits_the_content() -> None:
    string_case = await _evaluated("What is shown?", "none")
    assert string_case.input == "[string input omitted; 14 characters]"
    array_case = await _evaluated(_reference_conversation(), "none")
    assert array_case.input == "[array input omitted; 3 items]"
    assert PNG not in array_case.input


async def test_evaluation_under_full_serializes_the_input() -> None:
    string_case = await _evaluated("What is shown?", "full")
    assert json.loads(string_case.input) == "What is shown?"
    conversation = _reference_conversation()
    array_case = await _evaluated(conversation, "full")
    assert json.loads(array_case.input) == conversation


async def test_evaluation_under_redacted_replaces_media_and_strips_url_queries() -> None:
    secret_url = "https://example.com/clip.mp4?sig=SECRET"
    video = {
        "type": "video",
        "source": {"type": "url", "media_type": "video/mp4", "url": secret_url},
    }
    case = await _evaluated([_user("look", _png(), video)], "redacted")
    assert PNG not in case.input and "SECRET" not in case.input
    payload = json.loads(case.input)
    image_source = payload[0]["content"][1]["source"]
    raw = base64.b64decode(PNG)
    assert {
        "media_type": "image/png",
        "bytes": len(raw),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }.items() <= _flat(image_source).items()
    assert "example.com/clip.mp4" in case.input


def _flat(value: Mapping[str, Any]) -> dict[str, Any]:
    """A source dict with any nested mapping's keys lifted to the top."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, Mapping):
            out.update(_flat(item))
        else:
            out[key] = item
    return out


async def test_evaluation_payloads_are_bounded() -> None:
    long_text = "word " * 5000
    case = await _evaluated([_user(long_text)], "full")
    assert 8192 <= len(case.input) < 8192 + 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(case.input)


async def test_what_is_stored_under_none_omits_input_and_output() -> None:
    stored: list[Any] = []
    cases: list[EvalCase] = []
    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(
            scorers=[_collect(cases)], store_payloads="none", on_result=stored.append
        ),
        plugins=_host(),
    )
    result = await oma.run_agent(AgentConfig(name="v"), _reference_conversation())
    await oma.evaluation.flush()
    (record,) = stored
    assert record.input == "[array input omitted; 3 items]"
    assert "Keep answers concise" not in record.output and PNG not in record.output
    assert cases[0].output == result.output  # the scorer itself saw the real output
    assert oma.evaluation.stats().sampled == 1 and oma.evaluation.stats().scored == 1


def test_an_unknown_store_payloads_policy_is_refused() -> None:
    with pytest.raises(ValueError):
        OnlineEvaluationConfig(store_payloads="everything")  # type: ignore[arg-type]


async def test_evaluation_gets_a_separate_copy_of_structured_input() -> None:
    conversation = _reference_conversation()
    case = await _evaluated(conversation, "full")
    conversation[0]["content"][0]["text"] = "changed afterwards"
    assert json.loads(case.input)[0]["content"][0]["text"] == "Keep answers concise."


# -------------------------------------------------------------------------------------------
# external process and ACP backends: string prompts only
# -------------------------------------------------------------------------------------------


class _TextBackend:
    def __init__(self, kind: str, requests: list[BackendRequest]) -> None:
        self.kind = kind
        self.display_name = kind
        self._requests = requests

    async def run(self, request: BackendRequest) -> AsyncIterator[Any]:
        self._requests.append(request)
        yield TextDelta("echo:" + request.prompt)
        yield BackendResult(output="echo:" + request.prompt)

    async def aclose(self) -> None:
        return None


class _BackendPlugin:
    """Registers fake "process" and "acp" backends that record whether they were started."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.requests: list[BackendRequest] = []

    def _factory(self, kind: str) -> Any:
        def make(options: Mapping[str, Any]) -> _TextBackend:
            self.started.append(kind)
            return _TextBackend(kind, self.requests)

        return make

    @hookimpl
    def oma_register_backends(self) -> list[BackendSpec]:
        return [
            BackendSpec(kind=k, display_name=k, factory=self._factory(k))
            for k in ("process", "acp")
        ]


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_external_backends_refuse_structured_input_before_starting(kind: str) -> None:
    plugin = _BackendPlugin()
    host = _host(plugin)
    config = AgentConfig(name="ext", backend={"kind": kind})
    agent = Agent(config, plugins=host)
    progress: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=progress.append, plugins=host)
    for call in (
        lambda: agent.run([_user("x")]),
        lambda: agent.stream([_user("x")]),
        lambda: agent.prompt([_text("x")]),
        lambda: agent.prompt([image_url("https://example.com/a.png")]),
        lambda: oma.run_agent(config, [_user("x")]),
    ):
        with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
            call()
    assert plugin.started == [] and plugin.requests == [] and progress == []
    assert agent.get_history() == []


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_external_backends_run_string_prompts(kind: str) -> None:
    plugin = _BackendPlugin()
    agent = Agent(AgentConfig(name="ext", backend={"kind": kind}), plugins=_host(plugin))
    result = await agent.run("hello")
    assert result.success and result.output == "echo:hello"
    assert plugin.requests[0].prompt == "hello"
    await agent.prompt("again")
    assert [r.continue_session for r in plugin.requests] == [False, True]
    events = await _events(agent, "streamed")
    assert events[-1].data.output == "echo:streamed"


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_external_backends_refuse_message_and_block_objects_too(kind: str) -> None:
    plugin = _BackendPlugin()
    agent = Agent(AgentConfig(name="ext", backend={"kind": kind}), plugins=_host(plugin))
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.run(load_messages([_user("x")]))
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.prompt([TextBlock("x")])
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.run([])  # not even an empty list is mistaken for a prompt
    assert plugin.started == []


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_an_external_agents_hook_may_rewrite_the_prompt_but_not_messages(kind: str) -> None:
    plugin = _BackendPlugin()
    host = _host(plugin)
    rewrite = Agent(
        AgentConfig(name="e", backend={"kind": kind}, before_run=lambda c: {"prompt": "new"}),
        plugins=host,
    )
    assert (await rewrite.run("old")).output == "echo:new"
    replace = Agent(
        AgentConfig(
            name="e",
            backend={"kind": kind},
            before_run=lambda c: {"messages": [_user("other"), _assistant("a"), _user("q")]},
        ),
        plugins=host,
    )
    result = await replace.run("old")
    assert not result.success
    assert "cannot be forwarded without loss" in str(result.status.error)
    assert [r.prompt for r in plugin.requests] == ["new"]


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_an_external_agents_hook_may_hand_back_the_same_messages(kind: str) -> None:
    plugin = _BackendPlugin()

    def hook(ctx: Any) -> dict[str, Any]:
        return {"messages": dump_messages(ctx.messages), "prompt": ctx.prompt + "!"}

    agent = Agent(
        AgentConfig(name="e", backend={"kind": kind}, before_run=hook), plugins=_host(plugin)
    )
    result = await agent.run("hello")
    assert result.success, result.status.error
    assert plugin.requests[0].prompt == "hello!"


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_history_does_not_seed_an_external_transport(kind: str) -> None:
    plugin = _BackendPlugin()
    agent = Agent(
        AgentConfig(name="e", backend={"kind": kind}, history=[_user("secret"), _assistant("a")]),
        plugins=_host(plugin),
    )
    result = await agent.prompt("now")
    assert result.success
    assert plugin.requests[0].prompt == "now"
    assert "secret" not in plugin.requests[0].prompt


# -------------------------------------------------------------------------------------------
# image helpers
# -------------------------------------------------------------------------------------------


def test_image_url_references_a_remote_image() -> None:
    block = image_url("https://example.com/photo.jpg")
    assert isinstance(block, ImageBlock)
    assert block.source == UrlSource("image/jpeg", "https://example.com/photo.jpg")
    assert block.detail is None
    assert dump_messages([LLMMessage("user", (block,))])[0]["content"][0] == {
        "type": "image",
        "source": {
            "type": "url",
            "media_type": "image/jpeg",
            "url": "https://example.com/photo.jpg",
        },
    }


def test_image_url_takes_a_media_type_and_a_detail() -> None:
    block = image_url("https://example.com/photo", media_type="image/jpeg", detail="high")
    assert block.source.media_type == "image/jpeg"
    assert block.detail == "high"


@pytest.mark.parametrize("detail", ["low", "high", "auto"])
def test_detail_is_low_high_or_auto(detail: str) -> None:
    assert image_url("https://example.com/a.png", detail=detail).detail == detail  # type: ignore[arg-type]
    (message,) = load_messages([_user({**_png(), "detail": detail})])
    assert message.content[0].detail == detail  # type: ignore[union-attr]


@pytest.mark.parametrize("detail", ["medium", "HIGH", "", 1])
def test_any_other_detail_is_refused(detail: Any) -> None:
    with pytest.raises(InvalidMessageError):
        image_url("https://example.com/a.png", detail=detail)
    with pytest.raises(InvalidMessageError):
        load_messages([_user({**_png(), "detail": detail})])


def test_image_url_without_an_inferable_media_type_is_refused() -> None:
    with pytest.raises(InvalidMessageError, match="media_type"):
        image_url("https://example.com/photo")


def test_image_base64_embeds_raw_base64() -> None:
    block = image_base64(PNG, "image/png")
    assert block.source == Base64Source("image/png", PNG)
    assert dump_messages([LLMMessage("user", (block,))])[0]["content"][0] == _png()


@pytest.mark.parametrize(
    "data",
    [
        "data:image/png;base64," + PNG,
        PNG[:16] + " " + PNG[16:],
        "",
        "not base64!",
    ],
)
def test_image_base64_refuses_anything_but_raw_base64(data: str) -> None:
    with pytest.raises(InvalidMessageError, match="raw base64") as caught:
        image_base64(data, "image/png")
    assert PNG not in str(caught.value)


def test_image_base64_refuses_bytes() -> None:
    with pytest.raises(InvalidMessageError):
        image_base64(base64.b64decode(PNG), "image/png")  # type: ignore[arg-type]


def test_an_image_helper_refuses_a_non_image_media_type() -> None:
    with pytest.raises(InvalidMessageError):
        image_base64(PNG, "video/mp4")
    with pytest.raises(InvalidMessageError):
        video_base64(MP4, "image/png")


def test_image_media_types_are_the_four_every_provider_takes() -> None:
    four = {"image/jpeg", "image/png", "image/gif", "image/webp"}
    assert four == IMAGE_MEDIA_TYPES


@pytest.mark.parametrize(
    ("url", "media_type"),
    [
        ("https://example.com/a.jpg", "image/jpeg"),
        ("https://example.com/a.JPEG", "image/jpeg"),
        ("https://example.com/a.png?size=large", "image/png"),
        ("https://example.com/a.gif#frame", "image/gif"),
        ("https://example.com/a.webp", "image/webp"),
    ],
)
def test_the_media_type_is_looked_up_from_the_file_extension(url: str, media_type: str) -> None:
    assert image_url(url).source.media_type == media_type


# -------------------------------------------------------------------------------------------
# sending images
# -------------------------------------------------------------------------------------------


async def test_text_and_image_blocks_can_appear_in_any_order() -> None:
    agent, provider = _scripted(["a", "b"])
    await agent.prompt([image_url("https://example.com/chart.png"), _text("Summarize this chart.")])
    await agent.prompt([_text("And now?"), image_base64(PNG, "image/png")])
    first, second = (r.messages[-1] for r in provider.requests)
    assert [b.type for b in first.content] == ["image", "text"]
    assert [b.type for b in second.content] == ["text", "image"]


async def test_one_input_built_once_runs_on_several_agents_at_once() -> None:
    shared = [image_url("https://example.com/diagram.png"), _text("Explain this diagram.")]
    snapshot = list(shared)
    providers = [ScriptedProvider([f"answer {i}"]) for i in range(3)]
    agents = [
        Agent(AgentConfig(name=f"a{i}", provider=p), plugins=_host())
        for i, p in enumerate(providers)
    ]
    results = await asyncio.gather(*(agent.prompt(shared) for agent in agents))
    assert [r.output for r in results] == ["answer 0", "answer 1", "answer 2"]
    assert shared == snapshot
    assert len({p.requests[0].messages for p in providers}) == 1


async def test_multiple_images_in_a_single_turn() -> None:
    agent = Agent(AgentConfig(name="v"), plugins=_host())  # echo
    result = await agent.prompt(
        [
            _text("Compare these two images:"),
            image_url("https://example.com/before.jpg"),
            image_url("https://example.com/after.jpg"),
        ]
    )
    assert result.success
    assert "https://example.com/before.jpg" in result.output
    assert "https://example.com/after.jpg" in result.output
    assert result.output.index("before.jpg") < result.output.index("after.jpg")


async def test_a_local_file_is_sent_as_base64_and_echo_reports_its_decoded_size() -> None:
    agent = Agent(AgentConfig(name="v"), plugins=_host())
    result = await agent.prompt([image_base64(PNG, "image/png"), _text("What do you see?")])
    assert result.success
    assert f"{len(base64.b64decode(PNG))} bytes" in result.output
    assert PNG not in result.output


def test_sync_wrappers_send_images_from_scripts() -> None:
    agent = Agent(AgentConfig(name="v"), plugins=_host())
    result = agent.prompt_sync([image_url("https://example.com/a.png"), _text("hi")])
    assert result.success and "image/png" in result.output
    assert agent.run_sync([_user(_png())]).success


# -------------------------------------------------------------------------------------------
# the capability matrix and cross-provider input
# -------------------------------------------------------------------------------------------


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
            else image_base64(PNG, media_type)
        )
        capabilities.check([LLMMessage("user", (block,))], name)


async def test_a_provider_that_takes_url_images_only_refuses_base64_at_run_time() -> None:
    # the reference's Mistral row, declared the oma way: URL images only
    url_only = Capabilities(
        (BlockSupport("text"), BlockSupport("image", sources=frozenset({"url"})))
    )
    provider = ScriptedProvider(["url ok", "never"], capabilities=url_only, display_name="Mistral")
    agent = Agent(AgentConfig(name="m", provider=provider), plugins=_host())
    assert (await agent.prompt([image_url("https://example.com/a.png"), _text("x")])).success
    result = await agent.run([_user(image_base64(PNG, "image/png"), "x")])
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert str(error) == (
        'Mistral cannot represent the "image" content block: '
        "base64 sources are not supported in a user message"
    )
    assert len(provider.requests) == 1


def test_the_reference_typescript_block_shapes_are_not_oma_blocks() -> None:
    # imageUrl()/imageBase64() of the other framework build {type: "image_url"} and
    # {type: "image_base64"}; oma has one "image" block with a source, and no magic keys
    for block in (
        {"type": "image_url", "url": "https://example.com/a.png"},
        {"type": "image_base64", "data": PNG, "mimeType": "image/png"},
        {**_png(), "mimeType": "image/png"},
    ):
        with pytest.raises(InvalidMessageError):
            load_messages([_user(block)])


def test_the_same_input_is_valid_across_providers() -> None:
    pytest.importorskip("oma_anthropic")
    pytest.importorskip("oma_openai")
    built_once = load_messages(
        [_user(image_url("https://example.com/diagram.png"), "Explain this diagram.")]
    )
    for name in ("anthropic", "openai", "minimax", "echo"):
        spec = PluginHost().provider_spec(name)
        spec.capabilities.check(built_once, spec.display_name)


def test_openai_sends_the_detail_option() -> None:
    pytest.importorskip("oma_openai")
    provider = PluginHost().provider_spec("openai").factory(ProviderSettings(api_key="k"))
    block = image_url("https://example.com/a.png", detail="low")
    body = provider.render(
        ProviderRequest("gpt-4o", (LLMMessage("user", (block, TextBlock("hi"))),))
    )
    (part,) = [p for p in body["messages"][-1]["content"] if p["type"] == "image_url"]
    assert part["image_url"] == {"url": "https://example.com/a.png", "detail": "low"}


def test_each_adapter_converts_images_to_its_native_format() -> None:
    pytest.importorskip("oma_anthropic")
    pytest.importorskip("oma_openai")
    messages = load_messages(
        [_user(image_base64(PNG, "image/png"), image_url("https://example.com/b.jpg"), "Compare")]
    )
    host = PluginHost()
    claude = host.provider_spec("anthropic").factory(ProviderSettings(api_key="k"))
    claude_parts = claude.render(ProviderRequest("claude-sonnet-4-6", messages))["messages"][0][
        "content"
    ]
    assert claude_parts == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/b.jpg"}},
        {"type": "text", "text": "Compare"},
    ]
    gpt = host.provider_spec("openai").factory(ProviderSettings(api_key="k"))
    gpt_parts = gpt.render(ProviderRequest("gpt-4o", messages))["messages"][0]["content"]
    assert gpt_parts == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/b.jpg"}},
        {"type": "text", "text": "Compare"},
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


# -------------------------------------------------------------------------------------------
# the flat per-image token estimate
# -------------------------------------------------------------------------------------------


def test_an_image_costs_a_flat_thousand_tokens_regardless_of_size() -> None:
    small = image_base64(PNG, "image/png")
    large = image_base64(base64.b64encode(bytes(200_000)).decode("ascii"), "image/png")
    remote = image_url("https://example.com/a-very-long-name-for-a-large-image.png")
    for block in (small, large, remote):
        assert estimate_tokens([LLMMessage("user", (block,))]) == 1000


def test_the_image_estimate_adds_to_the_text_estimate() -> None:
    text = "x" * 10  # ceil(10 / 4) == 3
    messages = [_user(text, _png(), _png("url"))]
    assert estimate_tokens(messages) == 3 + 2 * 1000
    assert estimate_tokens(messages, image_tokens=85) == 3 + 2 * 85


@pytest.mark.parametrize("detail", ["low", "high", "auto"])
def test_detail_does_not_change_the_flat_image_estimate(detail: str) -> None:
    block = {**_png(), "detail": detail}
    assert estimate_tokens([_user(block)]) == 1000


def test_a_video_costs_a_quarter_of_its_payload_or_url() -> None:
    url = "https://example.com/clip.mp4"
    assert estimate_tokens([_user(_video("url"))]) == math.ceil(len(url) / 4)
    assert estimate_tokens([_user(_video("base64"))]) == math.ceil(len(MP4) / 4)


def test_images_inside_tool_results_count_too() -> None:
    block = ToolResultBlock("t1", (TextBlock("abcd"), image_url("https://example.com/a.png")))
    assert estimate_tokens([LLMMessage("user", (block,))]) == 1 + 1000


async def test_the_flat_image_estimate_drives_max_history_tokens() -> None:
    # each old turn holds one image (1000 tokens); a 2,500-token window keeps at most two
    history: list[dict[str, Any]] = []
    for index in range(4):
        history += [_user(f"turn {index}", _png("url")), _assistant(f"reply {index}")]
    agent, provider = _scripted(["ok"], history=history, max_history_tokens=2500)
    await agent.prompt("now")
    sent = provider.requests[0].messages
    assert estimate_tokens(sent) <= 2500
    assert sent[0].role == "user"
    images = sum(isinstance(b, ImageBlock) for m in sent for b in m.content)
    assert images == 2
    assert sent[-1].content == (TextBlock("now"),)


# -------------------------------------------------------------------------------------------
# the wire shape of the blocks the pages use
# -------------------------------------------------------------------------------------------


def test_load_and_dump_invert_each_other_on_the_reference_shapes() -> None:
    conversation = [*_reference_conversation(), _user(_video("url"), _video("base64"))]
    assert dump_messages(load_messages(conversation)) == conversation
    assert load_messages(dump_messages(load_messages(conversation))) == load_messages(conversation)


async def test_concurrent_runs_on_one_agent_do_not_share_input() -> None:
    agent, provider = _scripted(["a", "b"])
    await asyncio.gather(agent.run([_user("one")]), agent.run([_user("two")]))
    texts = sorted(r.messages[0].content[0].text for r in provider.requests)  # type: ignore[union-attr]
    assert texts == ["one", "two"]
