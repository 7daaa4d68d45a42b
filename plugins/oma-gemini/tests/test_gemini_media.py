"""Images, video and tool-result media on the wire; what is refused locally, and why."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from fake_gemini import API_KEY, FakeGemini, file_uri
from genai_types import assert_google_genai_takes
from hypothesis import given
from hypothesis import strategies as st
from oma_gemini import CAPABILITIES, create_provider
from oma_gemini.capabilities import DEFAULT_INLINE_LIMIT

from oma_core import (
    Agent,
    AgentConfig,
    InvalidMessageError,
    UnsupportedContentBlockError,
    image_url,
    load_messages,
    video_url,
)
from oma_core.testing.conformance import MEDIA_SAMPLES
from oma_core.toolkit import ProviderRequest, ProviderSettings

MP4 = MEDIA_SAMPLES["video/mp4"] + bytes(range(256)) * 4
#: An S3 presigned URL (without its extension and query) and the query it carries.
SIGNED_S3 = "https://bucket.s3.eu-west-1.amazonaws.com/media/photo"
S3_QUERY = (
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20260101%2Feu-west-1"
    "%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=900"
    "&X-Amz-SignedHeaders=host&X-Amz-Signature=abc123"
)
GIF_URL = "https://example.com/cat.gif"


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

    def test_the_default_limit_is_100_mb_of_decoded_media(self) -> None:
        # the API's inline limit since January 2026 (20 MB before); the limit's boundary is
        # tested with small limits below, without building 100 MB of base64
        (limit,) = CAPABILITIES.limits
        assert (limit.max_bytes, limit.scope, limit.measure) == (100_000_000, "request", "decoded")
        assert DEFAULT_INLINE_LIMIT == 100_000_000

    async def test_past_the_limit_the_error_offers_a_url_and_the_file_api(
        self, server: FakeGemini
    ) -> None:
        big = _media("video", _base64("video/mp4", MP4))
        result = await _run(server, _user(big), inline_limit=len(MP4) - 1)
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError)
        assert "signed https URL" in str(error) and "File API" in str(error)
        assert server.requests == []

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
            "https://storage.googleapis.com/bucket/clip.mp4",
            SIGNED_S3 + ".mp4?" + S3_QUERY,
            "https://acct.blob.core.windows.net/c/clip.mp4?sv=2024-11-04&sig=abc%3D",
        ],
    )
    async def test_public_and_signed_https_urls_are_file_data_with_their_type(
        self, server: FakeGemini, url: str
    ) -> None:
        result = await _run(server, _user(_media("video", _url("video/mp4", url))))
        assert result.success, result.status.error
        assert _parts(server)[1] == {"fileData": {"mimeType": "video/mp4", "fileUri": url}}
        assert_google_genai_takes(server.requests[0].json)

    async def test_a_video_url_goes_under_gemini_s_name_for_its_type(
        self, server: FakeGemini
    ) -> None:
        block = video_url("https://example.com/clip.mov")  # video/quicktime, from the extension
        result = await _run(server, [{"role": "user", "content": [block]}])
        assert result.success, result.status.error
        url = "https://example.com/clip.mov"
        assert _parts(server)[0] == {"fileData": {"mimeType": "video/mov", "fileUri": url}}

    @pytest.mark.parametrize(
        "url",
        [
            "http://example.com/clip.mp4",
            "http://generativelanguage.googleapis.com/v1beta/files/a",
        ],
    )
    async def test_an_http_url_is_refused_because_gemini_fetches_https_only(
        self, server: FakeGemini, url: str
    ) -> None:
        result = await _run(server, _user(_media("video", _url("video/mp4", url))))
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError) and error.block_type == "video"
        assert error.detail is not None
        assert "HTTPS only" in error.detail and "https://" in error.detail
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

    async def test_a_signed_image_url_is_file_data_typed_from_its_path(
        self, server: FakeGemini
    ) -> None:
        # the media type comes from the path's extension; the query string is not looked at
        url = SIGNED_S3 + ".webp?" + S3_QUERY
        result = await _run(server, [{"role": "user", "content": [image_url(url)]}])
        assert result.success, result.status.error
        assert _parts(server)[0] == {"fileData": {"mimeType": "image/webp", "fileUri": url}}

    def test_a_url_whose_type_cannot_be_told_needs_it_given(self) -> None:
        with pytest.raises(InvalidMessageError, match="media_type"):
            image_url("https://example.com/render?id=7")
        block = image_url("https://example.com/render?id=7", media_type="image/png")
        assert block.source.media_type == "image/png"

    async def test_an_image_url_of_a_type_gemini_cannot_read_is_refused(
        self, server: FakeGemini
    ) -> None:
        result = await _run(server, [{"role": "user", "content": [image_url(GIF_URL)]}])
        assert isinstance(result.status.error, UnsupportedContentBlockError)
        assert "image/gif" in str(result.status.error)
        assert server.requests == []

    @pytest.mark.parametrize(
        ("url", "why"),
        [
            ("http://example.com/cat.png", "HTTPS only"),
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
