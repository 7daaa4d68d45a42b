"""Documents and audio through the bridge, in OpenAI's form: a PDF as a ``file`` part and
wav/mp3 as ``input_audio``, passed on only to a model LiteLLM's model map says takes them;
a text document as a framed text part, to any model. What is refused sends nothing."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions
from oma_litellm.mapping import build_body

from oma_core import (
    Agent,
    AgentConfig,
    TextBlock,
    UnsupportedContentBlockError,
    audio_base64,
    audio_file,
    document_file,
    document_url,
    load_messages,
)
from oma_core.toolkit import ProviderRequest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
REPORT = EXAMPLES / "report.pdf"
MEMO = EXAMPLES / "memo.md"
VOICE = EXAMPLES / "voice.wav"
#: in the model map shipped with LiteLLM: PDF input yes, audio input no
PDF_MODEL = "openai/gpt-4o-mini"
#: in the model map: audio input yes
AUDIO_MODEL = "openai/gpt-audio"


def agent(server: FakeChatCompletions, model: str) -> Agent:
    config = AgentConfig(
        name="bridge",
        provider="litellm",
        model=model,
        base_url=server.base_url,
        api_key="test-key",
        max_retries=0,
    )
    return Agent(config)


async def first_part(server: FakeChatCompletions, model: str, block: Any, *, stream: bool) -> Any:
    """Run one user turn (``block``, then a question) and return the first content part the
    fake received; the wire's messages are the ones ``oma render`` shows."""
    conversation = [{"role": "user", "content": [block, TextBlock("Summarise it.")]}]
    async with agent(server, model) as bridge:
        if stream:
            result = None
            async for event in bridge.stream(conversation):
                if event.type == "done":
                    result = event.data
        else:
            result = await bridge.run(conversation)
    rendered = build_body(ProviderRequest(model=model, messages=load_messages(conversation)))
    assert result is not None and result.success, result and result.status.error
    [sent] = server.requests
    assert sent.json["messages"] == rendered["messages"]
    return sent.json["messages"][0]["content"][0]


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
class TestWhatReachesTheWire:
    async def test_a_pdf_is_a_file_part_for_a_model_that_takes_pdfs(
        self, server: FakeChatCompletions, stream: bool
    ) -> None:
        part = await first_part(server, PDF_MODEL, document_file(REPORT), stream=stream)
        data = base64.b64encode(REPORT.read_bytes()).decode()
        assert part == {
            "type": "file",
            "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{data}"},
        }

    async def test_a_wav_is_an_input_audio_part_for_a_model_that_takes_audio(
        self, server: FakeChatCompletions, stream: bool
    ) -> None:
        part = await first_part(server, AUDIO_MODEL, audio_file(VOICE), stream=stream)
        data = base64.b64encode(VOICE.read_bytes()).decode()
        assert part == {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}

    async def test_a_text_document_is_a_framed_text_part_for_any_model(
        self, server: FakeChatCompletions, stream: bool
    ) -> None:
        part = await first_part(server, "openai/gpt-fake", document_file(MEMO), stream=stream)
        memo = MEMO.read_text(encoding="utf-8")
        assert part == {
            "type": "text",
            "text": (
                f'-----BEGIN FILE id="memo.md" type="text/markdown"-----\n{memo}\n'
                '-----END FILE id="memo.md"-----'
            ),
        }


async def test_an_mp3_goes_with_format_mp3(server: FakeChatCompletions) -> None:
    mp3 = base64.b64encode(b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(32)).decode()
    part = await first_part(server, AUDIO_MODEL, audio_base64(mp3, "audio/mpeg"), stream=False)
    assert part["input_audio"] == {"data": mp3, "format": "mp3"}


# --------------------------------------------------------------------------- refused locally


async def refusal(server: FakeChatCompletions, model: str, block: Any) -> Any:
    async with agent(server, model) as bridge:
        result = await bridge.run([{"role": "user", "content": [block, TextBlock("hi")]}])
    assert server.requests == []  # nothing was sent
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    return error


@pytest.mark.parametrize("model", ["openai/gpt-fake", "groq/llama-3.3-70b-versatile"])
async def test_a_pdf_for_a_model_the_map_does_not_say_takes_pdfs_is_refused(
    server: FakeChatCompletions, model: str
) -> None:
    error = await refusal(server, model, document_file(REPORT))
    assert error.block_type == "document"
    assert f"does not list {model} as taking PDF input (supports_pdf_input)" in str(error)


async def test_audio_for_a_model_the_map_does_not_say_takes_audio_is_refused(
    server: FakeChatCompletions,
) -> None:
    error = await refusal(server, PDF_MODEL, audio_file(VOICE))
    assert error.block_type == "audio" and "supports_audio_input" in str(error)


@pytest.mark.parametrize(
    "block",
    [
        document_url("https://example.com/report.pdf"),
        audio_base64(base64.b64encode(b"OggS" + bytes(40)).decode(), "audio/ogg"),
    ],
    ids=["pdf-url", "ogg"],
)
async def test_what_openais_form_cannot_carry_is_refused_for_any_model(
    server: FakeChatCompletions, block: Any
) -> None:
    await refusal(server, AUDIO_MODEL, block)


async def test_a_registered_model_takes_pdfs(server: FakeChatCompletions) -> None:
    import litellm

    litellm.register_model({"openai/oma-doc-reader": {"supports_pdf_input": True}})
    part = await first_part(server, "openai/oma-doc-reader", document_file(REPORT), stream=False)
    assert part["type"] == "file"
