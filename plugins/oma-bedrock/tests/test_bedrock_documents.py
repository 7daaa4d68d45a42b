"""Documents and audio on the Converse wire: ``document`` and ``audio`` blocks of bytes, through
``complete`` and ``stream``, each body checked against botocore's service model; document names
by Converse's rules; what is refused locally, before anything is signed or sent."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from botocore_model import MODEL, assert_botocore_takes
from fake_bedrock import DOCUMENT_NAME, FakeBedrock
from hypothesis import given
from hypothesis import strategies as st
from oma_bedrock import CAPABILITIES, create_provider
from oma_bedrock.mapping import DocumentNames, document_name

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
from oma_core.errors import MediaTooLargeError
from oma_core.media import document_text
from oma_core.toolkit import ProviderRequest, ProviderSettings

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
REPORT = (EXAMPLES / "report.pdf").read_bytes()
MEMO = (EXAMPLES / "memo.md").read_bytes()
VOICE = (EXAMPLES / "voice.wav").read_bytes()
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
OPERATION = {"complete": "Converse", "stream": "ConverseStream"}
HOW = pytest.mark.parametrize("how", ["complete", "stream"])


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _user(*blocks: Any) -> LLMMessage:
    return LLMMessage("user", (TextBlock("what is in it?"), *blocks))


async def _send(server: FakeBedrock, how: str, *messages: LLMMessage) -> dict[str, Any]:
    """The body the fake received for ``messages``, sent by ``complete`` or ``stream``."""
    provider = create_provider(ProviderSettings(base_url=server.url))
    request = ProviderRequest(model=MODEL, messages=messages)
    try:
        if how == "complete":
            await provider.complete(request)
        else:
            [_ async for _ in provider.stream(request)]
    finally:
        await provider.aclose()
    (received,) = server.requests
    assert_botocore_takes(received.json, OPERATION[how])
    return received.json  # type: ignore[no-any-return]


async def _blocks(server: FakeBedrock, how: str, *blocks: Any) -> list[dict[str, Any]]:
    """The blocks after the text of the one user turn the fake received."""
    (message,) = (await _send(server, how, _user(*blocks)))["messages"]
    assert message["content"][0] == {"text": "what is in it?"}
    return message["content"][1:]  # type: ignore[no-any-return]


async def _run(server: FakeBedrock, *messages: LLMMessage, **options: Any) -> Any:
    config = AgentConfig(
        name="b", provider="bedrock", base_url=server.url, max_retries=0,
        provider_options=options,
    )  # fmt: skip
    async with Agent(config) as agent:
        return await agent.run(list(messages))


class TestDocuments:
    @HOW
    async def test_a_pdf_is_a_document_block_of_its_bytes(
        self, server: FakeBedrock, how: str
    ) -> None:
        (block,) = await _blocks(server, how, document_file(EXAMPLES / "report.pdf"))
        assert block == {
            "document": {"format": "pdf", "source": {"bytes": _b64(REPORT)}, "name": "report"}
        }
        assert base64.b64decode(block["document"]["source"]["bytes"]) == REPORT

    @HOW
    async def test_a_markdown_file_is_an_md_document_of_its_utf8_bytes(
        self, server: FakeBedrock, how: str
    ) -> None:
        (block,) = await _blocks(server, how, document_file(EXAMPLES / "memo.md"))
        assert block == {
            "document": {"format": "md", "source": {"bytes": _b64(MEMO)}, "name": "memo"}
        }

    @pytest.mark.parametrize(
        ("media_type", "format_"),
        [
            ("text/plain", "txt"),
            ("text/csv", "csv"),
            ("text/html", "html"),
            ("application/msword", "doc"),
            (DOCX, "docx"),
            ("application/vnd.ms-excel", "xls"),
            ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"),
        ],
    )
    async def test_each_media_type_is_its_converse_format(
        self, server: FakeBedrock, media_type: str, format_: str
    ) -> None:
        block = document_base64(_b64(b"a,b\n1,2\n"), media_type, filename="data.bin")
        (sent,) = await _blocks(server, "complete", block)
        assert sent["document"]["format"] == format_

    async def test_a_text_document_without_a_file_name_is_named_document(
        self, server: FakeBedrock
    ) -> None:
        (sent,) = await _blocks(server, "complete", document_text("hello"))
        assert sent["document"]["name"] == "document"

    async def test_documents_of_one_name_get_numbered_across_the_conversation(
        self, server: FakeBedrock
    ) -> None:
        report = document_file(EXAMPLES / "report.pdf")
        conversation = (
            _user(report, document_text("x", filename="REPORT.txt")),
            LLMMessage("assistant", (TextBlock("read them"),)),
            _user(report, document_text("y")),
        )
        body = await _send(server, "complete", *conversation)
        names = [
            block["document"]["name"]
            for message in body["messages"]
            for block in message["content"]
            if "document" in block
        ]
        assert names == ["report", "REPORT-2", "report-3", "document"]


class TestDocumentNames:
    @pytest.mark.parametrize(
        ("filename", "name"),
        [
            ("Q3 report (final).pdf", "Q3 report (final)"),
            ("john's_notes.md", "john-s-notes"),
            ("a  \t b [v2].csv", "a b [v2]"),
            ("分析.pdf", "document"),
            (".env", "env"),  # a dot file is its own stem
            (None, "document"),
            ("x" * 300 + ".pdf", "x" * 200),
        ],
    )
    def test_a_name_is_the_file_name_s_stem_in_converse_s_characters(
        self, filename: str | None, name: str
    ) -> None:
        assert document_name(filename) == name

    @given(st.lists(st.one_of(st.none(), st.text(max_size=260)), min_size=1, max_size=8))
    def test_every_name_is_valid_and_unique_within_a_request(
        self, filenames: list[str | None]
    ) -> None:
        names = DocumentNames()
        taken = [names.take(filename) for filename in filenames]
        assert all(DOCUMENT_NAME.match(name) for name in taken), taken
        assert len({name.casefold() for name in taken}) == len(taken)


class TestAudio:
    @HOW
    async def test_a_wav_file_is_an_audio_block_of_its_bytes(
        self, server: FakeBedrock, how: str
    ) -> None:
        (block,) = await _blocks(server, how, audio_file(EXAMPLES / "voice.wav"))
        assert block == {"audio": {"format": "wav", "source": {"bytes": _b64(VOICE)}}}
        assert base64.b64decode(block["audio"]["source"]["bytes"]) == VOICE

    @pytest.mark.parametrize(
        ("media_type", "format_"),
        [
            ("audio/mpeg", "mp3"),
            ("audio/flac", "flac"),
            ("audio/ogg", "ogg"),
            ("audio/aac", "aac"),
            ("audio/mp4", "m4a"),
            ("audio/webm", "webm"),
        ],
    )
    async def test_each_media_type_is_its_converse_format(
        self, server: FakeBedrock, media_type: str, format_: str
    ) -> None:
        (sent,) = await _blocks(server, "complete", audio_base64(_b64(bytes(64)), media_type))
        assert sent == {"audio": {"format": format_, "source": {"bytes": _b64(bytes(64))}}}


class TestRefusals:
    @pytest.mark.parametrize(
        ("block", "block_type", "why"),
        [
            (document_url("https://example.com/report.pdf"), "document", "url sources"),
            (audio_url("https://example.com/call.wav"), "audio", "url sources"),
            (document_text("<a/>", "text/xml"), "document", "text/xml is not supported"),
            (audio_base64(_b64(bytes(64)), "audio/aiff"), "audio", "audio/aiff is not supported"),
        ],
    )
    async def test_what_converse_cannot_take_is_refused_and_nothing_is_sent(
        self, server: FakeBedrock, block: Any, block_type: str, why: str
    ) -> None:
        result = await _run(server, _user(block))
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError)
        assert error.block_type == block_type and why in str(error)
        assert len(server.requests) == 0

    async def test_audio_in_an_assistant_turn_is_refused(self, server: FakeBedrock) -> None:
        voice = audio_file(EXAMPLES / "voice.wav")
        conversation = (_user(), LLMMessage("assistant", (voice,)), _user())
        result = await _run(server, *conversation)
        assert isinstance(result.status.error, UnsupportedContentBlockError)
        assert result.status.error.block_type == "audio"
        assert len(server.requests) == 0

    async def test_a_sixth_document_in_a_message_is_refused(self, server: FakeBedrock) -> None:
        five = [document_text(f"part {i}", filename=f"part{i}.txt") for i in range(5)]
        assert (await _run(server, _user(*five))).success
        server.reset()
        result = await _run(server, _user(*five, document_text("six")))
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError) and error.block_type == "document"
        assert "6 documents" in str(error) and "at most 5" in str(error)
        assert len(server.requests) == 0

    async def test_a_document_without_text_beside_it_is_refused(self, server: FakeBedrock) -> None:
        result = await _run(server, LLMMessage("user", (document_file(EXAMPLES / "memo.md"),)))
        error = result.status.error
        assert isinstance(error, UnsupportedContentBlockError) and error.block_type == "document"
        assert "no text block" in str(error)
        assert len(server.requests) == 0

    async def test_a_document_past_4_5_mb_is_refused_naming_the_option(
        self, server: FakeBedrock
    ) -> None:
        big = document_base64(_b64(b"%PDF-1.7\n" + bytes(4_500_000)), "application/pdf")
        result = await _run(server, _user(big))
        error = result.status.error
        assert isinstance(error, MediaTooLargeError) and error.block_type == "document"
        assert error.limit == 4_500_000 and "max_document_bytes" in str(error)
        assert len(server.requests) == 0

    async def test_max_document_bytes_lowers_or_raises_the_document_limit(
        self, server: FakeBedrock
    ) -> None:
        pdf = document_file(EXAMPLES / "report.pdf")
        result = await _run(server, _user(pdf), max_document_bytes=len(REPORT) - 1)
        assert isinstance(result.status.error, MediaTooLargeError)
        assert len(server.requests) == 0
        assert (await _run(server, _user(pdf), max_document_bytes=len(REPORT))).success


def test_documents_and_audio_are_native_as_bytes_in_user_turns_only() -> None:
    for block_type in ("document", "audio"):
        assert CAPABILITIES.mode(block_type, "user", "base64") is not None
        assert CAPABILITIES.mode(block_type, "user", "url") is None
        assert CAPABILITIES.mode(block_type, "assistant") is None
