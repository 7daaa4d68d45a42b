"""Documents and audio on Mistral's chat completions wire: a PDF by URL as ``document_url``,
audio as base64 ``input_audio``, through ``complete`` and ``stream``; what Mistral's chat wire
does not document (base64 documents, text documents, audio URLs) is refused locally."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from fake_mistral import API_KEY, FakeMistral
from oma_mistral import CAPABILITIES, MistralProvider

from oma_core import (
    Agent,
    AgentConfig,
    LLMMessage,
    TextBlock,
    UnsupportedContentBlockError,
    audio_base64,
    audio_file,
    audio_url,
    document_file,
    document_url,
)
from oma_core.media import document_text
from oma_core.toolkit import ProviderRequest, ProviderSettings

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
VOICE = (EXAMPLES / "voice.wav").read_bytes()
PDF_URL = "https://arxiv.org/pdf/1805.04770"
HOW = pytest.mark.parametrize("how", ["complete", "stream"])


def _user(*blocks: Any) -> LLMMessage:
    return LLMMessage("user", (TextBlock("what is in it?"), *blocks))


async def _chunks(server: FakeMistral, how: str, *blocks: Any) -> list[dict[str, Any]]:
    """The content chunks after the text of the one user message the fake received."""
    provider = MistralProvider(ProviderSettings(base_url=server.base_url, api_key=API_KEY))
    request = ProviderRequest(model="voxtral-small-latest", messages=(_user(*blocks),))
    try:
        if how == "complete":
            await provider.complete(request)
        else:
            [_ async for _ in provider.stream(request)]
    finally:
        await provider.aclose()
    (received,) = server.requests
    (message,) = received.json["messages"]
    assert message["role"] == "user"
    assert message["content"][0] == {"type": "text", "text": "what is in it?"}
    return message["content"][1:]  # type: ignore[no-any-return]


async def _run(server: FakeMistral, *messages: LLMMessage) -> Any:
    config = AgentConfig(name="m", provider="mistral", base_url=server.base_url, api_key=API_KEY)
    async with Agent(config) as agent:
        return await agent.run(list(messages))


class TestDocuments:
    @HOW
    async def test_a_pdf_url_is_a_document_url_chunk(self, server: FakeMistral, how: str) -> None:
        chunks = await _chunks(server, how, document_url(PDF_URL, media_type="application/pdf"))
        assert chunks == [{"type": "document_url", "document_url": PDF_URL}]

    async def test_the_file_name_goes_as_document_name(self, server: FakeMistral) -> None:
        url = "https://example.com/files/q3.pdf"
        chunks = await _chunks(server, "complete", document_url(url, filename="Q3 report.pdf"))
        assert chunks == [
            {"type": "document_url", "document_url": url, "document_name": "Q3 report.pdf"}
        ]


class TestAudio:
    @HOW
    async def test_a_wav_file_is_input_audio_of_its_base64(
        self, server: FakeMistral, how: str
    ) -> None:
        chunks = await _chunks(server, how, audio_file(EXAMPLES / "voice.wav"))
        assert chunks == [{"type": "input_audio", "input_audio": base64.b64encode(VOICE).decode()}]
        assert base64.b64decode(chunks[0]["input_audio"]) == VOICE

    async def test_mp3_goes_the_same_way(self, server: FakeMistral) -> None:
        data = base64.b64encode(b"ID3\x04" + bytes(60)).decode()
        chunks = await _chunks(server, "complete", audio_base64(data, "audio/mpeg"))
        assert chunks == [{"type": "input_audio", "input_audio": data}]


class TestRefusals:
    @pytest.mark.parametrize(
        ("block", "block_type", "why"),
        [
            (document_file(EXAMPLES / "report.pdf"), "document", "base64 sources"),
            (document_text("a memo"), "document", "base64 sources"),
            (
                document_url("https://example.com/memo.md"),
                "document",
                "text/markdown is not supported",
            ),
            (audio_url("https://example.com/call.mp3"), "audio", "url sources"),
        ],
    )
    async def test_what_the_chat_wire_does_not_take_is_refused_and_nothing_is_sent(
        self, server: FakeMistral, block: Any, block_type: str, why: str
    ) -> None:
        result = await _run(server, _user(block))
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError)
        assert error.block_type == block_type and why in str(error)
        assert len(server.requests) == 0

    async def test_a_document_in_an_assistant_turn_is_refused(self, server: FakeMistral) -> None:
        conversation = (
            _user(),
            LLMMessage("assistant", (document_url(PDF_URL, media_type="application/pdf"),)),
            _user(),
        )
        result = await _run(server, *conversation)
        assert isinstance(result.status.error, UnsupportedContentBlockError)
        assert result.status.error.block_type == "document"
        assert len(server.requests) == 0


def test_pdf_by_url_and_audio_as_base64_in_user_turns_only() -> None:
    assert CAPABILITIES.mode("document", "user", "url") is not None
    assert CAPABILITIES.mode("document", "user", "base64") is None
    assert CAPABILITIES.mode("audio", "user", "base64") is not None
    assert CAPABILITIES.mode("audio", "user", "url") is None
    assert CAPABILITIES.mode("document", "assistant") is None
    assert CAPABILITIES.mode("audio", "assistant") is None
