"""Documents and audio on Chat Completions: a PDF as a ``file`` part, a text document as a text
part naming the file, audio as ``input_audio``; on every transport, streamed or not, for the
presets that declare them. The others refuse them before any request."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import API_KEY, FakeChatCompletions
from openai_builders import provider_for

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
from oma_core.toolkit import ProviderRequest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
REPORT = EXAMPLES / "report.pdf"
MEMO = EXAMPLES / "memo.md"
VOICE = EXAMPLES / "voice.wav"
REPORT_DATA_URL = "data:application/pdf;base64," + base64.b64encode(REPORT.read_bytes()).decode()


def asking(*blocks: Any) -> ProviderRequest:
    message = LLMMessage("user", (*blocks, TextBlock("Summarise it.")))
    return ProviderRequest(model="gpt-test", messages=(message,))


async def first_part(
    server: FakeChatCompletions,
    request: ProviderRequest,
    *,
    preset: str = "openai",
    transport: str = "httpx",
    stream: bool = False,
) -> Any:
    """Send ``request`` once and return the first content part the fake received; the
    non-streaming body is held to render's bytes, the streamed one to render's value."""
    provider = provider_for(server, preset, transport=transport)
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
        streamed = {"stream": True, "stream_options": {"include_usage": True}}
        assert sent.json == {**rendered, **streamed}
    else:
        expected = json.dumps(rendered, ensure_ascii=False, separators=(",", ":")).encode()
        assert sent.body == expected
    return sent.json["messages"][0]["content"][0]


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
class TestOpenAIWire:
    async def test_a_pdf_file_is_a_file_part_with_its_filename_and_a_data_url(
        self, server: FakeChatCompletions, transport: str, stream: bool
    ) -> None:
        part = await first_part(
            server, asking(document_file(REPORT)), transport=transport, stream=stream
        )
        assert part == {
            "type": "file",
            "file": {"filename": "report.pdf", "file_data": REPORT_DATA_URL},
        }

    async def test_a_text_document_is_a_text_part_framed_with_its_name_and_type(
        self, server: FakeChatCompletions, transport: str, stream: bool
    ) -> None:
        part = await first_part(
            server, asking(document_file(MEMO)), transport=transport, stream=stream
        )
        memo = MEMO.read_text(encoding="utf-8")
        assert part == {
            "type": "text",
            "text": (
                f'-----BEGIN FILE id="memo.md" type="text/markdown"-----\n{memo}\n'
                '-----END FILE id="memo.md"-----'
            ),
        }

    async def test_a_wav_file_is_an_input_audio_part_of_raw_base64(
        self, server: FakeChatCompletions, transport: str, stream: bool
    ) -> None:
        part = await first_part(
            server, asking(audio_file(VOICE)), transport=transport, stream=stream
        )
        data = base64.b64encode(VOICE.read_bytes()).decode()
        assert part == {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}


async def test_a_pdf_without_a_filename_is_sent_as_document_pdf(
    server: FakeChatCompletions,
) -> None:
    pdf = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()
    part = await first_part(server, asking(document_base64(pdf, "application/pdf")))
    assert part["file"]["filename"] == "document.pdf"


async def test_an_mp3_is_sent_with_format_mp3(server: FakeChatCompletions) -> None:
    mp3 = base64.b64encode(b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(32)).decode()
    part = await first_part(server, asking(audio_base64(mp3, "audio/mpeg")))
    assert part == {"type": "input_audio", "input_audio": {"data": mp3, "format": "mp3"}}


async def test_a_text_document_without_a_filename_names_only_its_type(
    server: FakeChatCompletions,
) -> None:
    part = await first_part(server, asking(document_text('a,b\n"é",\u2603\n', "text/csv")))
    assert part == {
        "type": "text",
        "text": '-----BEGIN FILE type="text/csv"-----\na,b\n"é",\u2603\n\n-----END FILE-----',
    }


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_openrouter_takes_a_pdf_by_url_in_file_data(
    compatible_server: FakeChatCompletions, stream: bool
) -> None:
    pdf = document_url("https://example.com/files/report.pdf")
    part = await first_part(compatible_server, asking(pdf), preset="openrouter", stream=stream)
    assert part == {
        "type": "file",
        "file": {"filename": "document.pdf", "file_data": "https://example.com/files/report.pdf"},
    }


@pytest.mark.parametrize("preset", ["deepseek", "groq", "ollama"])
async def test_every_preset_carries_a_text_document(
    compatible_server: FakeChatCompletions, preset: str
) -> None:
    part = await first_part(compatible_server, asking(document_text("Ship it.")), preset=preset)
    assert part["type"] == "text" and "Ship it." in part["text"]


# --------------------------------------------------------------------------- refused locally


async def refusal(server: FakeChatCompletions, preset: str, *blocks: Any) -> BaseException:
    config = AgentConfig(
        name="t", provider=preset, model="m", base_url=server.base_url, api_key=API_KEY
    )
    async with Agent(config) as agent:
        result = await agent.run([{"role": "user", "content": [*blocks, TextBlock("hi")]}])
    assert server.requests == []  # nothing was sent
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    return error


@pytest.mark.parametrize("preset", ["deepseek", "groq"])
async def test_presets_without_file_parts_refuse_a_pdf(
    compatible_server: FakeChatCompletions, preset: str
) -> None:
    error = await refusal(compatible_server, preset, document_file(REPORT))
    assert error.block_type == "document"
    assert "media type application/pdf is not supported" in str(error)


@pytest.mark.parametrize(
    "preset", ["deepseek", "groq", "minimax", "together", "ollama", "lmstudio"]
)
async def test_presets_without_input_audio_refuse_audio(
    compatible_server: FakeChatCompletions, preset: str
) -> None:
    error = await refusal(compatible_server, preset, audio_file(VOICE))
    assert error.block_type == "audio" and 'cannot represent the "audio" content block' in str(
        error
    )


async def test_openai_refuses_a_pdf_by_url(server: FakeChatCompletions) -> None:
    error = await refusal(server, "openai", document_url("https://example.com/report.pdf"))
    assert "a PDF by URL takes the Responses API, not Chat" in str(error)


@pytest.mark.parametrize(
    "block",
    [
        audio_base64(base64.b64encode(b"OggS" + bytes(40)).decode(), "audio/ogg"),
        audio_url("https://example.com/voice.mp3"),
    ],
    ids=["ogg", "url"],
)
async def test_openai_refuses_audio_input_audio_cannot_carry(
    server: FakeChatCompletions, block: Any
) -> None:
    error = await refusal(server, "openai", block)
    assert error.block_type == "audio"


async def test_a_text_document_by_url_is_refused(server: FakeChatCompletions) -> None:
    error = await refusal(server, "openai", document_url("https://example.com/memo.md"))
    assert error.block_type == "document"


async def test_an_office_document_is_refused(server: FakeChatCompletions) -> None:
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    zipped = base64.b64encode(b"PK\x03\x04" + bytes(40)).decode()
    error = await refusal(server, "openai", document_base64(zipped, docx, "plan.docx"))
    assert f"media type {docx} is not supported" in str(error)


async def test_a_text_document_that_is_not_utf8_is_refused(server: FakeChatCompletions) -> None:
    latin1 = base64.b64encode("café".encode("latin-1")).decode()
    error = await refusal(server, "openai", document_base64(latin1, "text/plain"))
    assert "UTF-8" in str(error)


async def test_a_document_in_an_assistant_turn_is_refused(server: FakeChatCompletions) -> None:
    config = AgentConfig(
        name="t", provider="openai", model="m", base_url=server.base_url, api_key=API_KEY
    )
    conversation = [
        {"role": "user", "content": [TextBlock("q")]},
        {"role": "assistant", "content": [document_text("notes")]},
        {"role": "user", "content": [TextBlock("and?")]},
    ]
    async with Agent(config) as agent:
        result = await agent.run(conversation)
    assert server.requests == []
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError) and "assistant" in str(error)
