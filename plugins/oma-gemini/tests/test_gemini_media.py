"""Images, video and tool-result media on the wire; what is refused locally, and why."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from fake_gemini import API_KEY, FakeGemini, file_uri
from hypothesis import given
from hypothesis import strategies as st
from oma_gemini import CAPABILITIES, create_provider

from oma_core import Agent, AgentConfig, UnsupportedContentBlockError, load_messages
from oma_core.testing.conformance import MEDIA_SAMPLES
from oma_core.toolkit import ProviderRequest, ProviderSettings

MP4 = MEDIA_SAMPLES["video/mp4"] + bytes(range(256)) * 4


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _media(kind: str, source: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "source": source}


def _base64(media_type: str, data: bytes) -> dict[str, Any]:
    return {"type": "base64", "media_type": media_type, "data": _b64(data)}


def _url(media_type: str, url: str) -> dict[str, Any]:
    return {"type": "url", "media_type": media_type, "url": url}


def _user(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "text", "text": "what is this?"}, *blocks]}]


async def _run(server: FakeGemini, conversation: Any, **options: Any) -> Any:
    config = AgentConfig(
        name="a",
        provider="gemini",
        base_url=server.base_url,
        api_key=API_KEY,
        provider_options=options,
    )
    async with Agent(config) as agent:
        return await agent.run(conversation)


def _parts(server: FakeGemini, message: int = 0) -> list[dict[str, Any]]:
    return server.requests[0].json["contents"][message]["parts"]  # type: ignore[no-any-return]


class TestVideo:
    async def test_base64_video_is_inline_data_byte_for_byte(self, server: FakeGemini) -> None:
        result = await _run(server, _user(_media("video", _base64("video/mp4", MP4))))
        assert result.success, result.status.error
        inline = _parts(server)[1]["inlineData"]
        assert inline["mimeType"] == "video/mp4"
        assert base64.b64decode(inline["data"]) == MP4

    @pytest.mark.parametrize(
        ("media_type", "wire"),
        [
            ("video/quicktime", "video/mov"),
            ("video/x-msvideo", "video/avi"),
            ("video/x-ms-wmv", "video/wmv"),
            ("video/webm", "video/webm"),
            ("video/3gpp", "video/3gpp"),
            ("video/x-flv", "video/x-flv"),
        ],
    )
    async def test_video_types_go_by_gemini_s_names(
        self, server: FakeGemini, media_type: str, wire: str
    ) -> None:
        result = await _run(server, _user(_media("video", _base64(media_type, MP4))))
        assert result.success, result.status.error
        assert _parts(server)[1]["inlineData"]["mimeType"] == wire

    async def test_video_beyond_the_inline_limit_is_refused_naming_limit_and_file_api(
        self, server: FakeGemini
    ) -> None:
        big = _media("video", _base64("video/mp4", MP4 * 2))
        result = await _run(server, _user(big), inline_limit=len(MP4))
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError)
        assert error.block_type == "video" and error.provider == "Google Gemini"
        assert f"inline limit of {len(MP4)} bytes" in str(error)
        assert "File API" in str(error)
        assert server.requests == []

    async def test_the_limit_counts_all_media_of_the_request(self, server: FakeGemini) -> None:
        one = _media("video", _base64("video/mp4", MP4))
        assert (await _run(server, _user(one), inline_limit=len(MP4))).success
        server.reset()
        result = await _run(server, _user(one, one), inline_limit=len(MP4) * 2 - 1)
        assert isinstance(result.status.error, UnsupportedContentBlockError)
        assert server.requests == []

    def test_the_default_limit_is_20_mb_of_decoded_media(self) -> None:
        limit = 20 * 1000 * 1000
        provider = create_provider(ProviderSettings())
        fits = _base64("video/mp4", bytes(limit))
        request = _request(_user(_media("video", fits)))
        assert provider.render(request)["contents"][0]["parts"][1]["inlineData"]
        over = _base64("video/mp4", bytes(limit + 1))
        with pytest.raises(UnsupportedContentBlockError, match="20000000 bytes"):
            provider.render(_request(_user(_media("video", over))))

    @pytest.mark.parametrize(
        "url",
        [
            "https://www.youtube.com/watch?v=9hE5-98ZeCg",
            "https://youtu.be/9hE5-98ZeCg",
            file_uri("vid42"),
            "https://generativelanguage.googleapis.com/v1/files/abc-1",
        ],
    )
    async def test_youtube_and_file_api_urls_are_file_data(
        self, server: FakeGemini, url: str
    ) -> None:
        result = await _run(server, _user(_media("video", _url("video/mp4", url))))
        assert result.success, result.status.error
        if "youtu" in url:  # as Gemini documents YouTube links: no MIME type
            assert _parts(server)[1] == {"fileData": {"fileUri": url}}
        else:
            assert _parts(server)[1] == {"fileData": {"mimeType": "video/mp4", "fileUri": url}}

    @pytest.mark.parametrize(
        "url",
        [
            "https://example.com/clip.mp4",
            "http://generativelanguage.googleapis.com/v1beta/files/a",
            "https://storage.googleapis.com/bucket/clip.mp4",
            "https://generativelanguage.googleapis.com/v1beta/models",
        ],
    )
    async def test_any_other_video_url_is_refused_saying_why(
        self, server: FakeGemini, url: str
    ) -> None:
        result = await _run(server, _user(_media("video", _url("video/mp4", url))))
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError) and error.block_type == "video"
        assert error.detail is not None
        assert "File API URIs" in error.detail and "YouTube" in error.detail
        assert "base64" in error.detail
        assert server.requests == []


class TestImages:
    @pytest.mark.parametrize(
        "media_type", ["image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"]
    )
    async def test_base64_images_are_inline_data(self, server: FakeGemini, media_type: str) -> None:
        data = MEDIA_SAMPLES.get(media_type, b"\x00\x00\x00\x18ftypheic" + bytes(20))
        result = await _run(server, _user(_media("image", _base64(media_type, data))))
        assert result.success, result.status.error
        assert _parts(server)[1]["inlineData"] == {"mimeType": media_type, "data": _b64(data)}

    async def test_a_gif_is_refused_locally(self, server: FakeGemini) -> None:
        gif = _media("image", _base64("image/gif", MEDIA_SAMPLES["image/gif"]))
        result = await _run(server, _user(gif))
        assert isinstance(result.status.error, UnsupportedContentBlockError)
        assert "image/gif" in str(result.status.error)
        assert server.requests == []

    async def test_a_file_api_image_url_is_file_data(self, server: FakeGemini) -> None:
        result = await _run(server, _user(_media("image", _url("image/png", file_uri()))))
        assert result.success, result.status.error
        assert _parts(server)[1] == {"fileData": {"mimeType": "image/png", "fileUri": file_uri()}}

    @pytest.mark.parametrize(
        ("url", "why"),
        [
            ("https://example.com/cat.png", "File API URIs"),
            ("https://www.youtube.com/watch?v=abc", "a YouTube link is a video"),
        ],
    )
    async def test_other_image_urls_are_refused_saying_why(
        self, server: FakeGemini, url: str, why: str
    ) -> None:
        result = await _run(server, _user(_media("image", _url("image/png", url))))
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError) and error.block_type == "image"
        assert why in str(error)
        assert server.requests == []


def _request(conversation: Any) -> ProviderRequest:
    return ProviderRequest(model="m", messages=load_messages(conversation))


def _tool_round(result: Any, call_id: str = "c1") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": "look it up"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "lookup", "input": {"q": "x"}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}],
        },
    ]


class TestToolResults:
    async def test_a_tool_result_is_a_function_response_named_after_its_call(
        self, server: FakeGemini
    ) -> None:
        assert (await _run(server, _tool_round("42 results"))).success
        assert _parts(server, 1) == [
            {"functionCall": {"id": "c1", "name": "lookup", "args": {"q": "x"}}}
        ]
        assert _parts(server, 2) == [
            {
                "functionResponse": {
                    "id": "c1",
                    "name": "lookup",
                    "response": {"result": "42 results"},
                }
            }
        ]

    async def test_an_error_result_is_sent_as_error(self, server: FakeGemini) -> None:
        conversation = _tool_round("boom")
        conversation[2]["content"][0]["is_error"] = True
        assert (await _run(server, conversation)).success
        assert _parts(server, 2)[0]["functionResponse"]["response"] == {"error": "boom"}

    async def test_media_a_tool_returned_follow_its_function_response(
        self, server: FakeGemini
    ) -> None:
        png = MEDIA_SAMPLES["image/png"]
        pdf = MEDIA_SAMPLES["application/pdf"]
        content = [
            {"type": "text", "text": "the chart:"},
            {"type": "image", "source": _base64("image/png", png)},
            {"type": "file", "filename": "r.pdf", "source": _base64("application/pdf", pdf)},
        ]
        assert (await _run(server, _tool_round(content))).success
        parts = _parts(server, 2)
        assert parts[0]["functionResponse"]["response"] == {"result": "the chart:"}
        assert parts[1:] == [
            {"inlineData": {"mimeType": "image/png", "data": _b64(png)}},
            {"inlineData": {"mimeType": "application/pdf", "data": _b64(pdf)}},
        ]

    async def test_a_result_whose_call_is_not_in_the_conversation_is_refused_locally(
        self, server: FakeGemini
    ) -> None:
        conversation = [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "gone", "content": "x"}],
            }
        ]
        result = await _run(server, conversation)
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError)
        assert error.block_type == "tool_result"
        assert "'gone'" in str(error) and "function's name" in str(error)
        assert server.requests == []


class TestCapabilities:
    def test_video_is_native_both_as_base64_and_as_url(self) -> None:
        assert CAPABILITIES.mode("video", "user", "base64") is not None
        assert CAPABILITIES.mode("video", "user", "url") is not None
        assert CAPABILITIES.mode("video", "assistant") is None


@given(st.binary(min_size=1, max_size=300))
def test_the_inline_size_is_the_decoded_size(data: bytes) -> None:
    block = _media("video", _base64("video/mp4", data))
    exact = create_provider(ProviderSettings(options={"inline_limit": len(data)}))
    exact.render(_request(_user(block)))  # exactly at the limit: accepted
    tight = create_provider(ProviderSettings(options={"inline_limit": len(data) - 1}))
    with pytest.raises(UnsupportedContentBlockError):
        tight.render(_request(_user(block)))
