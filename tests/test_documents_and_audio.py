"""Document and audio blocks: the same guarantees as images and video.

Validated at every entry (dicts and constructors alike), typed by content when built from
bytes or files, copied without copying their media, refused locally by a provider that does
not declare them, and described by the echo provider.
"""

from __future__ import annotations

import base64
import copy
import warnings
from pathlib import Path
from typing import Any

import pytest
from _builders import SETTINGS, b64_source, refused, user
from hypothesis import given
from hypothesis import strategies as st

from oma_core import (
    Agent,
    AgentConfig,
    AudioBlock,
    Base64Source,
    DocumentBlock,
    InvalidMessageError,
    LLMMessage,
    UnsupportedContentBlockError,
    UrlSource,
    audio_base64,
    audio_file,
    audio_url,
    document_base64,
    document_file,
    document_url,
    dump_messages,
    estimate_tokens,
    load_messages,
)
from oma_core.capabilities import BlockSupport, Capabilities, MediaLimit
from oma_core.errors import MediaTooLargeError
from oma_core.media import (
    DOCUMENT_TYPES,
    MediaTypeMismatchError,
    MediaTypeWarning,
    audio_bytes,
    document_bytes,
    document_text,
    media_bytes,
    media_file,
)
from oma_core.testing import ScriptedProvider

PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + bytes(64)
AUDIO = {
    "audio/wav": (b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00", "wav"),
    "audio/mpeg": (b"ID3\x03\x00\x00\x00\x00\x00\x00", "mp3"),
    "audio/ogg": (b"OggS\x00\x02" + bytes(20) + b"\x01\x1eOpusHead", "opus"),
    "audio/flac": (b"fLaC\x00\x00\x00\x22", "flac"),
    "audio/mp4": (b"\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00M4A mp42isom", "m4a"),
    "audio/aac": (b"\xff\xf1\x50\x80\x02\x1f\xfc", "aac"),
    "audio/webm": (
        bytes.fromhex("1a45dfa3")
        + b"\x9f\x42\x86\x81\x01\x42\xf7\x81\x01\x42\xf2\x81\x04\x42\xf3\x81\x08\x42\x82\x84webm",
        "weba",
    ),
}
PDF_B64 = base64.b64encode(PDF).decode()


def document(source: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "document", "source": source, **extra}


def audio(source: dict[str, Any]) -> dict[str, Any]:
    return {"type": "audio", "source": source}


# -- the wire shape ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "block",
    [
        document(b64_source(PDF_B64, "application/pdf"), filename="report.pdf"),
        document(b64_source(base64.b64encode(b"a,b\n1,2\n").decode(), "text/csv")),
        document({"type": "url", "media_type": "text/markdown", "url": "https://x.test/a.md"}),
        audio(b64_source(base64.b64encode(AUDIO["audio/wav"][0]).decode(), "audio/wav")),
        audio({"type": "url", "media_type": "audio/mpeg", "url": "https://x.test/a.mp3"}),
    ],
)
def test_document_and_audio_blocks_load_and_dump_unchanged(block: dict[str, Any]) -> None:
    (message,) = load_messages([user(block)])
    assert dump_messages([message]) == [user(block)]
    assert isinstance(message.content[0], DocumentBlock | AudioBlock)


def test_their_media_strings_are_shared_by_copies_never_copied() -> None:
    data = base64.b64encode(PDF * 1000).decode()
    (message,) = load_messages([user(document(b64_source(data, "application/pdf")))])
    block = message.content[0]
    assert isinstance(block, DocumentBlock) and isinstance(block.source, Base64Source)
    assert block.source.data is data
    assert copy.deepcopy(message) is message
    (again,) = load_messages([message])
    assert again.content[0].source.data is data  # type: ignore[union-attr]


def test_constructors_check_what_dicts_are_checked_for() -> None:
    assert DocumentBlock(Base64Source("application/pdf", PDF_B64), "r.pdf").filename == "r.pdf"
    assert AudioBlock(UrlSource("audio/ogg", "https://x.test/a.ogg")).type == "audio"
    with pytest.raises(InvalidMessageError, match="must be a document MIME type"):
        DocumentBlock(Base64Source("image/png", PDF_B64))
    with pytest.raises(InvalidMessageError, match="must be an audio MIME type"):
        AudioBlock(Base64Source("video/mp4", PDF_B64))
    with pytest.raises(InvalidMessageError, match="filename"):
        DocumentBlock(Base64Source("application/pdf", PDF_B64), 3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("block", "path", "phrase"),
    [
        (
            document(b64_source(PDF_B64, "image/png")),
            "messages[0].content[0].source.media_type",
            "must be a document MIME type (application/pdf, text/... or an office type) in a "
            "document block, got image/png",
        ),
        (
            document(b64_source(PDF_B64, "application/zip")),
            "messages[0].content[0].source.media_type",
            "got application/zip",
        ),
        (
            audio(b64_source(PDF_B64, "video/mp4")),
            "messages[0].content[0].source.media_type",
            "must be an audio MIME type (audio/...) in an audio block",
        ),
        (
            document(b64_source(PDF_B64, "application/pdf"), title="x"),
            "messages[0].content[0].title",
            'is not allowed in a "document" block',
        ),
        (
            document(b64_source(PDF_B64, "application/pdf"), filename=7),
            "messages[0].content[0].filename",
            "got int",
        ),
        (audio({"type": "url", "media_type": "audio/wav", "url": "ftp://x/a.wav"}), "", "HTTP"),
        (document(b64_source("QR==", "application/pdf")), "", "stray bits"),
        ({"type": "audio"}, "messages[0].content[0].source", "is missing"),
    ],
)
def test_a_malformed_document_or_audio_block_is_refused_at_its_place(
    block: dict[str, Any], path: str, phrase: str
) -> None:
    error = refused([user(block)], path or None, phrase)
    assert "QR==" not in str(error) and PDF_B64[:20] not in str(error)


def test_documents_and_audio_may_stand_in_either_role() -> None:
    block = document(b64_source(PDF_B64, "application/pdf"))
    (message,) = load_messages([{"role": "assistant", "content": [block]}])
    assert message.role == "assistant"


# -- helpers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "media_type"),
    [
        ("https://x.test/report.PDF?sig=1", "application/pdf"),
        ("https://x.test/memo.md", "text/markdown"),
        ("https://x.test/table.csv#top", "text/csv"),
        ("https://x.test/page.html", "text/html"),
        ("https://x.test/sheet.xlsx", next(t for t in DOCUMENT_TYPES if "spreadsheetml" in t)),
    ],
)
def test_document_url_takes_its_type_from_the_extension(url: str, media_type: str) -> None:
    block = document_url(url, filename="named")
    assert block.source == UrlSource(media_type, url) and block.filename == "named"


def test_a_url_without_a_known_extension_needs_a_stated_type() -> None:
    with pytest.raises(InvalidMessageError, match='pass media_type="application/pdf"'):
        document_url("https://x.test/download?id=3")
    with pytest.raises(InvalidMessageError, match=r'pass media_type="audio/\.\.\."'):
        audio_url("https://x.test/stream")
    assert audio_url("https://x.test/a.flac").source.media_type == "audio/flac"
    assert audio_url("https://x.test/stream", "audio/ogg").source.media_type == "audio/ogg"


def test_base64_helpers_hold_their_family() -> None:
    assert document_base64(PDF_B64, "application/pdf", "r.pdf").filename == "r.pdf"
    assert audio_base64(PDF_B64, "audio/wav").source.media_type == "audio/wav"
    with pytest.raises(InvalidMessageError, match="must be a document MIME type"):
        document_base64(PDF_B64, "image/png")
    with pytest.raises(InvalidMessageError, match="must be an audio MIME type"):
        audio_base64(PDF_B64, "video/webm")


@SETTINGS
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1), st.booleans())
def test_document_text_carries_the_text_exactly(text: str, markdown: bool) -> None:
    media_type = "text/markdown" if markdown else "text/plain"
    block = document_text(text, media_type, "memo")
    assert isinstance(block.source, Base64Source) and block.source.media_type == media_type
    assert base64.b64decode(block.source.data).decode("utf-8") == text
    assert load_messages([user(block)])[0].content[0] == block


def test_document_text_takes_only_text_types_and_whole_text() -> None:
    with pytest.raises(InvalidMessageError, match="must be a text MIME type"):
        document_text("x", "application/pdf")
    with pytest.raises(InvalidMessageError, match="lone surrogates"):
        document_text("a\ud800")
    with pytest.raises(InvalidMessageError, match="text must not be empty"):
        document_text("")


# -- bytes and files: typed by their content -------------------------------------------------


def test_a_pdf_is_typed_by_its_content() -> None:
    assert document_bytes(PDF).source.media_type == "application/pdf"
    assert isinstance(media_bytes(PDF), DocumentBlock)
    with pytest.raises(MediaTypeMismatchError, match="its content is application/pdf, not audio"):
        audio_bytes(PDF)


@pytest.mark.parametrize("media_type", sorted(AUDIO))
def test_each_common_audio_container_is_typed_by_its_content(
    media_type: str, tmp_path: Path
) -> None:
    head, extension = AUDIO[media_type]
    assert audio_bytes(head + bytes(64)).source.media_type == media_type
    path = tmp_path / f"voice.{extension}"
    path.write_bytes(head + bytes(64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert audio_file(path).source.media_type == media_type


def test_text_is_a_document_of_the_type_its_extension_names(tmp_path: Path) -> None:
    memo = tmp_path / "memo.md"
    memo.write_text("# Notes\n\nShip it.\n", encoding="utf-8")
    block = document_file(memo)
    assert (block.source.media_type, block.filename) == ("text/markdown", "memo.md")
    assert isinstance(block.source, Base64Source)
    assert base64.b64decode(block.source.data) == memo.read_bytes()
    assert media_file(memo) == block  # the -a path: a .md file is a document
    assert document_bytes(b"plain words").source.media_type == "text/plain"
    assert document_bytes(b"a,b\n", "text/csv").source.media_type == "text/csv"


def test_text_that_names_no_document_type_is_not_taken_for_one(tmp_path: Path) -> None:
    conversation = tmp_path / "conversation.json"
    conversation.write_text('[{"role": "user"}]', encoding="utf-8")
    with pytest.raises(MediaTypeMismatchError, match="it holds text, not an image, a video"):
        media_file(conversation)
    assert document_file(conversation).source.media_type == "text/plain"  # asked for: text


def test_a_text_document_named_pdf_is_sent_as_text_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    path.write_text("not really a pdf", encoding="utf-8")
    with pytest.warns(MediaTypeWarning, match="its extension says application/pdf"):
        assert document_file(path).source.media_type == "text/plain"


def test_text_that_is_not_utf8_is_refused_not_garbled(tmp_path: Path) -> None:
    with pytest.raises(MediaTypeMismatchError, match="not UTF-8 text"):
        document_bytes("café".encode("latin-1"))


def test_pdf_and_audio_files_become_their_blocks_through_media_file(tmp_path: Path) -> None:
    report = tmp_path / "report.pdf"
    report.write_bytes(PDF)
    voice = tmp_path / "voice.mp3"
    voice.write_bytes(AUDIO["audio/mpeg"][0] + bytes(64))
    doc = media_file(report)
    assert isinstance(doc, DocumentBlock) and doc.filename == "report.pdf"
    assert isinstance(media_file(voice), AudioBlock)


# -- providers: declared, or refused before any request ---------------------------------------


def _message() -> LLMMessage:
    return LLMMessage(
        "user",
        [
            {"type": "text", "text": "summarise"},
            document_base64(PDF_B64, "application/pdf", "r.pdf"),
            audio_base64(PDF_B64, "audio/wav"),
        ],
    )


@pytest.mark.parametrize("missing", ["document", "audio"])
async def test_a_provider_that_does_not_declare_them_refuses_before_any_request(
    missing: str,
) -> None:
    kinds = {"text", "document", "audio"} - {missing}
    provider = ScriptedProvider(
        ["never"], capabilities=Capabilities(tuple(BlockSupport(kind) for kind in sorted(kinds)))
    )
    result = await Agent(AgentConfig("a", provider=provider)).run([_message()])
    assert not result.success and isinstance(result.status.error, UnsupportedContentBlockError)
    assert result.status.error.block_type == missing
    assert provider.requests == []


async def test_declared_media_types_and_limits_apply_to_them() -> None:
    only_pdf = Capabilities(
        (BlockSupport("text"), BlockSupport("document", media_types=frozenset({"application/pdf"})))
    )
    provider = ScriptedProvider(["never"], capabilities=only_pdf)
    text = document_text("hello", "text/markdown")
    result = await Agent(AgentConfig("a", provider=provider)).run([user(text)])
    assert isinstance(result.status.error, UnsupportedContentBlockError)
    assert "media type text/markdown is not supported" in str(result.status.error)
    limited = Capabilities(
        (BlockSupport("text"), BlockSupport("document")), limits=(MediaLimit(32),)
    )
    provider = ScriptedProvider(["never"], capabilities=limited)
    result = await Agent(AgentConfig("a", provider=provider)).run([user(document_bytes(PDF))])
    assert isinstance(result.status.error, MediaTooLargeError) and provider.requests == []


async def test_echo_describes_them() -> None:
    result = await Agent(AgentConfig("a")).run([_message()])
    assert result.success
    assert f'document "r.pdf" application/pdf base64 {len(PDF)} bytes' in result.output
    assert f"audio audio/wav base64 {len(PDF)} bytes" in result.output


# -- estimates and tools -----------------------------------------------------------------------


def test_history_estimates_count_them_by_kind() -> None:
    text = document_text("x" * 400)
    pdf = document_bytes(PDF * 100)  # 8,000-odd bytes: one token per 40
    clip = audio_bytes(AUDIO["audio/wav"][0] + bytes(50_000))
    by_url = document_url("https://x.test/a.pdf")
    assert estimate_tokens([user(text)]) == 100
    assert estimate_tokens([user(pdf)]) == -(-len(PDF * 100) // 40)
    assert estimate_tokens([user(clip)]) == -(-(len(AUDIO["audio/wav"][0]) + 50_000) // 500)
    assert estimate_tokens([user(by_url)], image_tokens=321) == 321


async def test_a_tool_cannot_return_a_document_block_as_text() -> None:
    from oma_core.tools import tool_result_content

    with pytest.raises(TypeError, match="cannot carry a document block"):
        tool_result_content([document_bytes(PDF)])
