"""Documents and audio on Gemini's wire: ``inlineData`` or ``fileData``, through ``complete``
and ``stream``, each body checked against ``google-genai``'s types; what is refused locally."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from fake_gemini import API_KEY, FakeGemini
from genai_types import assert_google_genai_takes
from oma_gemini import CAPABILITIES, create_provider

from oma_core import (
    Agent,
    AgentConfig,
    LLMMessage,
    TextBlock,
    UnsupportedContentBlockError,
    audio_base64,
    audio_file,
    audio_url,
    document_base64,
    document_file,
    document_url,
)
from oma_core.media import document_text
from oma_core.toolkit import ProviderRequest, ProviderSettings

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
REPORT = (EXAMPLES / "report.pdf").read_bytes()
MEMO = (EXAMPLES / "memo.md").read_bytes()
VOICE = (EXAMPLES / "voice.wav").read_bytes()
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PDF_URL = "https://example.com/papers/report.pdf?X-Amz-Signature=abc123"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _request(*blocks: Any) -> ProviderRequest:
    message = LLMMessage("user", (TextBlock("what is in it?"), *blocks))
    return ProviderRequest(model="gemini-test", messages=(message,))


async def _send(server: FakeGemini, how: str, *blocks: Any) -> list[dict[str, Any]]:
    """The parts of the one user turn the fake received, sent by ``complete`` or ``stream``."""
    provider = create_provider(ProviderSettings(base_url=server.base_url, api_key=API_KEY))
    try:
        if how == "complete":
            await provider.complete(_request(*blocks))
        else:
            [_ async for _ in provider.stream(_request(*blocks))]
    finally:
        await provider.aclose()
    (received,) = server.requests
    assert_google_genai_takes(received.json)
    (content,) = received.json["contents"]
    assert content["role"] == "user" and content["parts"][0] == {"text": "what is in it?"}
    return content["parts"][1:]  # type: ignore[no-any-return]


async def _run(server: FakeGemini, *blocks: Any, **options: Any) -> Any:
    config = AgentConfig(
        name="a", provider="gemini", base_url=server.base_url, api_key=API_KEY,
        provider_options=options,
    )  # fmt: skip
    async with Agent(config) as agent:
        return await agent.run([LLMMessage("user", (TextBlock("what is in it?"), *blocks))])


HOW = pytest.mark.parametrize("how", ["complete", "stream"])


class TestDocuments:
    @HOW
    async def test_a_pdf_file_is_inline_data_byte_for_byte(
        self, server: FakeGemini, how: str
    ) -> None:
        parts = await _send(server, how, document_file(EXAMPLES / "report.pdf"))
        assert parts == [{"inlineData": {"mimeType": "application/pdf", "data": _b64(REPORT)}}]
        assert base64.b64decode(parts[0]["inlineData"]["data"]) == REPORT

    @HOW
    async def test_a_markdown_file_is_inline_data_of_its_utf8_bytes(
        self, server: FakeGemini, how: str
    ) -> None:
        parts = await _send(server, how, document_file(EXAMPLES / "memo.md"))
        assert parts == [{"inlineData": {"mimeType": "text/markdown", "data": _b64(MEMO)}}]

    @pytest.mark.parametrize(
        "media_type", ["text/plain", "text/csv", "text/html", "text/xml", "text/rtf"]
    )
    async def test_text_documents_keep_their_media_type(
        self, server: FakeGemini, media_type: str
    ) -> None:
        parts = await _send(server, "complete", document_text("a,b\n1,2\n", media_type))
        assert parts == [{"inlineData": {"mimeType": media_type, "data": _b64(b"a,b\n1,2\n")}}]

    @HOW
    async def test_a_signed_https_pdf_url_is_file_data_with_its_type(
        self, server: FakeGemini, how: str
    ) -> None:
        parts = await _send(server, how, document_url(PDF_URL))
        assert parts == [{"fileData": {"mimeType": "application/pdf", "fileUri": PDF_URL}}]

    async def test_the_filename_is_not_sent(self, server: FakeGemini) -> None:
        # Gemini's parts have no place for a file name: the block's name stays local
        block = document_base64(_b64(REPORT), "application/pdf", filename="Q3 report.pdf")
        parts = await _send(server, "complete", block)
        assert parts == [{"inlineData": {"mimeType": "application/pdf", "data": _b64(REPORT)}}]


class TestAudio:
    @HOW
    async def test_a_wav_file_is_inline_data_byte_for_byte(
        self, server: FakeGemini, how: str
    ) -> None:
        parts = await _send(server, how, audio_file(EXAMPLES / "voice.wav"))
        assert parts == [{"inlineData": {"mimeType": "audio/wav", "data": _b64(VOICE)}}]

    async def test_mp3_goes_under_gemini_s_name(self, server: FakeGemini) -> None:
        parts = await _send(
            server, "complete", audio_base64(_b64(b"ID3\x04" + bytes(60)), "audio/mpeg")
        )
        assert parts[0]["inlineData"]["mimeType"] == "audio/mp3"

    @pytest.mark.parametrize(
        "media_type", ["audio/aiff", "audio/aac", "audio/ogg", "audio/flac", "audio/mp3"]
    )
    async def test_the_other_listed_formats_are_sent_as_given(
        self, server: FakeGemini, media_type: str
    ) -> None:
        parts = await _send(server, "complete", audio_base64(_b64(bytes(64)), media_type))
        assert parts[0]["inlineData"]["mimeType"] == media_type

    @HOW
    async def test_an_https_audio_url_is_file_data(self, server: FakeGemini, how: str) -> None:
        url = "https://cdn.example.com/calls/1234.mp3"
        parts = await _send(server, how, audio_url(url))
        assert parts == [{"fileData": {"mimeType": "audio/mp3", "fileUri": url}}]


class TestRefusals:
    @pytest.mark.parametrize(
        ("block", "block_type", "why"),
        [
            (document_base64(_b64(b"PK\x03\x04" + bytes(40)), DOCX), "document", "not supported"),
            (document_text("a\tb\n", "text/tab-separated-values"), "document", "is not supported"),
            (audio_base64(_b64(bytes(64)), "audio/webm"), "audio", "is not supported"),
            (audio_base64(_b64(bytes(64)), "audio/mp4"), "audio", "is not supported"),
            (document_url("http://example.com/report.pdf"), "document", "HTTPS only"),
            (audio_url("http://example.com/call.wav"), "audio", "HTTPS only"),
            (
                audio_url("https://youtu.be/9hE5-98ZeCg", media_type="audio/mp3"),
                "audio",
                "YouTube link is a video",
            ),
        ],
    )
    async def test_what_gemini_cannot_read_is_refused_and_nothing_is_sent(
        self, server: FakeGemini, block: Any, block_type: str, why: str
    ) -> None:
        result = await _run(server, block)
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError)
        assert error.block_type == block_type and why in str(error)
        assert len(server.requests) == 0

    async def test_a_document_in_an_assistant_turn_is_refused(self, server: FakeGemini) -> None:
        conversation = [
            LLMMessage("user", (TextBlock("hi"),)),
            LLMMessage("assistant", (document_file(EXAMPLES / "memo.md"),)),
            LLMMessage("user", (TextBlock("and?"),)),
        ]
        config = AgentConfig(name="a", provider="gemini", base_url=server.base_url, api_key=API_KEY)
        async with Agent(config) as agent:
            result = await agent.run(conversation)
        assert isinstance(result.status.error, UnsupportedContentBlockError)
        assert result.status.error.block_type == "document"
        assert len(server.requests) == 0

    async def test_the_inline_limit_counts_documents_and_audio_together(
        self, server: FakeGemini
    ) -> None:
        pdf, wav = document_file(EXAMPLES / "report.pdf"), audio_file(EXAMPLES / "voice.wav")
        assert (await _run(server, pdf, wav, inline_limit=len(REPORT) + len(VOICE))).success
        server.reset()
        result = await _run(server, pdf, wav, inline_limit=len(REPORT) + len(VOICE) - 1)
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError) and error.block_type == "audio"
        assert "inline limit" in str(error) and "File API" in str(error)
        assert len(server.requests) == 0


def test_documents_and_audio_are_native_in_user_turns_only() -> None:
    for block_type in ("document", "audio"):
        for source in ("base64", "url"):
            assert CAPABILITIES.mode(block_type, "user", source) is not None
        assert CAPABILITIES.mode(block_type, "assistant") is None
    (limit,) = CAPABILITIES.limits
    assert {"document", "audio"} <= limit.block_types
