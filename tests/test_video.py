"""Video blocks: both source shapes, checked at every entry point, passed to providers as given."""

from __future__ import annotations

import re
from typing import Any

import pytest
from _builders import (
    REFERENCE_MP4,
    builtin_host,
    stream_events,
    text_block,
    user_turn,
    video_block,
    vision_agent,
)

from oma_core import (
    Agent,
    AgentConfig,
    Base64Source,
    InvalidMessageError,
    OpenMultiAgent,
    UrlSource,
    VideoBlock,
    dump_messages,
    load_messages,
    video_base64,
    video_url,
)
from oma_core.testing import ScriptedProvider


def _file_video() -> dict[str, Any]:
    return {
        "type": "video",
        "source": {"type": "url", "media_type": "video/mp4", "url": "file:///tmp/clip.mp4"},
    }


@pytest.mark.parametrize("kind", ["url", "base64"])
def test_a_video_block_carries_inline_base64_or_a_remote_reference(kind: str) -> None:
    (message,) = load_messages([user_turn(video_block(kind))])
    block = message.content[0]
    assert isinstance(block, VideoBlock)
    assert block.source.type == kind
    assert block.source.media_type == "video/mp4"
    assert dump_messages([message])[0]["content"][0] == video_block(kind)


def test_validating_a_video_url_touches_neither_network_nor_files(no_io: None) -> None:
    (message,) = load_messages([user_turn("Describe", video_block("url"))])
    assert message.content[1] == video_url("https://example.com/clip.mp4")


async def test_a_video_url_reaches_the_provider_as_a_url_not_fetched_by_oma() -> None:
    agent, provider = vision_agent(["seen"])
    result = await agent.run([user_turn("Describe", video_block("url"))])
    assert result.success
    block = provider.requests[0].messages[0].content[1]
    assert isinstance(block, VideoBlock) and isinstance(block.source, UrlSource)
    assert block.source.url == "https://example.com/clip.mp4"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///home/me/clip.mp4", "must use HTTP or HTTPS"),
        ("mm_file://abc123", "must be an absolute HTTP(S) URL"),
        ("data:video/mp4;base64," + REFERENCE_MP4, "must use HTTP or HTTPS"),
        ("s3://bucket/clip.mp4", "must use HTTP or HTTPS"),
        ("/tmp/clip.mp4", "must be an absolute HTTP(S) URL"),
        ("ftp://example.com/clip.mp4", "must use HTTP or HTTPS"),
    ],
)
async def test_a_video_url_that_is_not_http_is_refused_before_an_adapter_sees_it(
    url: str, reason: str
) -> None:
    agent, provider = vision_agent(["never"])
    video = {"type": "video", "source": {"type": "url", "media_type": "video/mp4", "url": url}}
    with pytest.raises(InvalidMessageError, match=re.escape(reason)) as caught:
        agent.run([user_turn("x", video)])
    assert caught.value.path == "messages[0].content[1].source.url"
    assert REFERENCE_MP4 not in str(caught.value)
    assert provider.requests == []


@pytest.mark.parametrize("entry", ["run", "stream", "prompt", "run_agent", "history"])
async def test_video_sources_are_validated_at_every_public_entry_point(entry: str) -> None:
    provider = ScriptedProvider(["never"])
    config = AgentConfig(name="v", provider=provider)
    agent = Agent(config, plugins=builtin_host())
    with pytest.raises(InvalidMessageError, match="must use HTTP or HTTPS"):
        if entry == "run":
            agent.run([user_turn("x", _file_video())])
        elif entry == "stream":
            agent.stream([user_turn("x", _file_video())])
        elif entry == "prompt":
            agent.prompt([text_block("x"), _file_video()])
        elif entry == "run_agent":
            _ = OpenMultiAgent(plugins=builtin_host()).run_agent(
                config, [user_turn("x", _file_video())]
            )
        else:
            Agent(AgentConfig(name="v", history=[user_turn(_file_video())]), plugins=builtin_host())
    assert provider.requests == []


async def test_a_video_source_a_hook_returns_is_validated_and_fails_the_run() -> None:
    agent, provider = vision_agent(
        ["never"], before_run=lambda ctx: {"messages": [user_turn("x", _file_video())]}
    )
    result = await agent.run("hi")
    assert not result.success
    assert "must use HTTP or HTTPS" in str(result.status.error)
    assert provider.requests == []


async def test_a_video_streams_to_the_provider_like_it_runs() -> None:
    agent, provider = vision_agent(["seen it"])
    events = await stream_events(agent, [user_turn("Describe", video_block("base64"))])
    assert events[-1].type == "done" and events[-1].data.success
    block = provider.requests[0].messages[0].content[1]
    assert isinstance(block, VideoBlock) and block.source == Base64Source(
        "video/mp4", REFERENCE_MP4
    )


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (
            {
                "type": "base64",
                "media_type": "video/mp4",
                "data": "data:video/mp4;base64," + REFERENCE_MP4,
            },
            "must contain raw base64 data",
        ),
        (
            {
                "type": "base64",
                "media_type": "video/mp4",
                "data": REFERENCE_MP4[:20] + "\n" + REFERENCE_MP4[20:],
            },
            "must contain raw base64 data",
        ),
        (
            {"type": "base64", "media_type": "video/mp4; codecs=avc1", "data": REFERENCE_MP4},
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
        load_messages([user_turn({"type": "video", "source": source})])


def test_tool_result_media_follow_the_same_source_rules() -> None:
    def result_with(url: str) -> dict[str, Any]:
        image = {"type": "image", "source": {"type": "url", "media_type": "image/png", "url": url}}
        return {"type": "tool_result", "tool_use_id": "t1", "content": [image]}

    call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "snap", "input": {}}],
    }
    load_messages([user_turn("go"), call, user_turn(result_with("https://example.com/a.png"))])
    with pytest.raises(InvalidMessageError, match="must use HTTP or HTTPS") as caught:
        load_messages([user_turn("go"), call, user_turn(result_with("file:///etc/a.png"))])
    assert caught.value.path.startswith("messages[2].content[0].content[0].source")


def test_the_video_helpers_build_both_source_shapes() -> None:
    remote = video_url("https://example.com/clip.mp4")
    inline = video_base64(REFERENCE_MP4, "video/mp4")
    assert remote.source == UrlSource("video/mp4", "https://example.com/clip.mp4")
    assert inline.source == Base64Source("video/mp4", REFERENCE_MP4)
    with pytest.raises(InvalidMessageError):
        video_url("mm_file://abc123", "video/mp4")
