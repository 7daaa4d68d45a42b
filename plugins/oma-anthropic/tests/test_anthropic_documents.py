"""Documents reach the Messages API as ``document`` blocks (a PDF by base64 or URL, text as the
plain-text source) on every transport, streamed or not; audio and what the API cannot read are
refused before any request."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic

from oma_core import (
    Agent,
    AgentConfig,
    LLMMessage,
    TextBlock,
    UnsupportedContentBlockError,
    audio_file,
    document_base64,
    document_file,
    document_url,
    image_base64,
)
from oma_core.errors import MediaTooLargeError
from oma_core.media import document_text
from oma_core.testing.conformance import MEDIA_SAMPLES
from oma_core.toolkit import ProviderRequest, ProviderSettings

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
REPORT = EXAMPLES / "report.pdf"
MEMO = EXAMPLES / "memo.md"


def make(server: FakeAnthropic, transport: str) -> Any:
    from oma_anthropic import create_provider

    options = {"transport": transport}
    return create_provider(
        ProviderSettings(base_url=server.url, api_key="test-key", options=options)
    )


def asking(*blocks: Any) -> ProviderRequest:
    message = LLMMessage("user", (*blocks, TextBlock("Summarise it.")))
    return ProviderRequest(model="claude-test", messages=(message,))


async def received(
    server: FakeAnthropic, transport: str, request: ProviderRequest, *, stream: bool
) -> dict[str, Any]:
    """Send ``request`` once (complete or stream) and return the first content block the fake
    received; a non-streaming body is held to render's bytes."""
    provider = make(server, transport)
    try:
        rendered = provider.render(request)
        if stream:
            [event async for event in provider.stream(request)]
        else:
            await provider.complete(request)
    finally:
        await provider.aclose()
    [sent] = server.requests
    if stream:
        assert sent.json == {**rendered, "stream": True}
    else:
        expected = json.dumps(rendered, separators=(",", ":"), ensure_ascii=False).encode()
        assert sent.body == expected
    block: dict[str, Any] = sent.json["messages"][0]["content"][0]
    return block


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
class TestWhatReachesTheWire:
    async def test_a_pdf_file_is_a_base64_document_titled_by_its_filename(
        self, server: FakeAnthropic, transport: str, stream: bool
    ) -> None:
        block = await received(server, transport, asking(document_file(REPORT)), stream=stream)
        assert block == {
            "type": "document",
            "source": {
                "type": "base64",
                "media_type": "application/pdf",
                "data": base64.b64encode(REPORT.read_bytes()).decode(),
            },
            "title": "report.pdf",
        }

    async def test_a_pdf_url_is_a_url_document_the_service_fetches(
        self, server: FakeAnthropic, transport: str, stream: bool
    ) -> None:
        pdf = document_url("https://example.com/files/report.pdf")
        block = await received(server, transport, asking(pdf), stream=stream)
        assert block == {
            "type": "document",
            "source": {"type": "url", "url": "https://example.com/files/report.pdf"},
        }

    async def test_a_markdown_file_is_a_plain_text_source_holding_its_text(
        self, server: FakeAnthropic, transport: str, stream: bool
    ) -> None:
        block = await received(server, transport, asking(document_file(MEMO)), stream=stream)
        assert block == {
            "type": "document",
            "source": {
                "type": "text",
                "media_type": "text/plain",
                "data": MEMO.read_text(encoding="utf-8"),
            },
            "title": "memo.md",
        }

    async def test_a_text_document_keeps_every_character(
        self, server: FakeAnthropic, transport: str, stream: bool
    ) -> None:
        text = 'a,b\n"é",\u2603 </script>\n'
        doc = document_text(text, "text/csv")
        block = await received(server, transport, asking(doc), stream=stream)
        assert block == {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
        }


async def test_agent_run_sends_examples_report_pdf_as_a_base64_document(
    server: FakeAnthropic, transport: str
) -> None:
    config = AgentConfig(
        name="reader",
        provider="anthropic",
        model="claude-test",
        base_url=server.url,
        api_key="test-key",
        provider_options={"transport": transport},
    )
    async with Agent(config) as agent:
        result = await agent.run(
            [{"role": "user", "content": [document_file(REPORT), TextBlock("Summarise it.")]}]
        )
    assert result.success, result.status.error
    [request] = server.requests
    data = base64.b64encode(REPORT.read_bytes()).decode()
    assert request.json["messages"][0]["content"][0]["source"] == {
        "type": "base64",
        "media_type": "application/pdf",
        "data": data,
    }
    assert f'"data":"{data}"'.encode() in request.body  # the file's bytes, as sent


# --------------------------------------------------------------------------- refused locally


async def refused(server: FakeAnthropic, *conversation: Any) -> BaseException | None:
    config = AgentConfig(name="t", provider="anthropic", base_url=server.url, api_key="test-key")
    async with Agent(config) as agent:
        result = await agent.run(list(conversation))
    assert server.requests == []  # nothing was sent
    return result.status.error


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


async def test_audio_is_refused_before_any_request(server: FakeAnthropic) -> None:
    error = await refused(server, user(audio_file(EXAMPLES / "voice.wav"), TextBlock("hi")))
    assert isinstance(error, UnsupportedContentBlockError)
    assert error.block_type == "audio"
    assert str(error).startswith('Anthropic Messages cannot represent the "audio" content block')


async def test_a_document_in_an_assistant_turn_is_refused(server: FakeAnthropic) -> None:
    error = await refused(
        server,
        user(TextBlock("q")),
        {"role": "assistant", "content": [document_file(REPORT)]},
        user(TextBlock("and?")),
    )
    assert isinstance(error, UnsupportedContentBlockError)
    assert error.block_type == "document" and "assistant message" in str(error)


async def test_a_text_document_by_url_is_refused_the_api_fetches_only_pdfs(
    server: FakeAnthropic,
) -> None:
    error = await refused(server, user(document_url("https://example.com/memo.md")))
    assert isinstance(error, UnsupportedContentBlockError)
    assert "media type text/markdown is not supported" in str(error)


async def test_an_office_document_is_refused(server: FakeAnthropic) -> None:
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    zipped = base64.b64encode(b"PK\x03\x04" + bytes(40)).decode()
    error = await refused(server, user(document_base64(zipped, docx, "plan.docx")))
    assert isinstance(error, UnsupportedContentBlockError)
    assert f"media type {docx} is not supported" in str(error)


async def test_a_text_document_that_is_not_utf8_is_refused(server: FakeAnthropic) -> None:
    latin1 = base64.b64encode("café".encode("latin-1")).decode()
    error = await refused(server, user(document_base64(latin1, "text/plain")))
    assert isinstance(error, UnsupportedContentBlockError)
    assert "UTF-8" in str(error)


async def test_documents_count_toward_the_32_mb_request_limit(server: FakeAnthropic) -> None:
    # 23 MB of PDF is 30.7 MB of base64; with a 1.5 MB image beside it the request is past 32 MB
    pdf = base64.b64encode(b"%PDF-1.4\n" + bytes(23_000_000)).decode()
    png = base64.b64encode(MEDIA_SAMPLES["image/png"] + bytes(1_500_000)).decode()
    error = await refused(
        server, user(document_base64(pdf, "application/pdf"), image_base64(png, "image/png"))
    )
    assert isinstance(error, MediaTooLargeError)
    assert error.limit == 32_000_000 and error.scope == "request"
    assert "messages[0].content[1]" in str(error)
