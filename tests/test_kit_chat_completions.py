"""The kit's Chat Completions forms (``oma_core.testing.chat_completions``), which the kits of
OpenAI-shaped plugins use in ``assert_on_wire``: each as OpenAI's API reference gives it."""

from __future__ import annotations

import base64

import pytest

from oma_core.testing.chat_completions import chat_media_part, chat_wire_items


def _base64(media_type: str, data: bytes) -> dict[str, str]:
    return {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode()}


def test_a_base64_text_document_is_a_text_part_framed_with_its_name_and_type() -> None:
    block = {"type": "document", "filename": "a.md", "source": _base64("text/markdown", b"# Hi")}
    assert chat_media_part(block) == {
        "type": "text",
        "text": '-----BEGIN FILE id="a.md" type="text/markdown"-----\n# Hi\n'
        '-----END FILE id="a.md"-----',
    }


def test_a_pdf_without_a_filename_is_a_file_part_named_document_pdf() -> None:
    source = _base64("application/pdf", b"%PDF-1.4")
    part = chat_media_part({"type": "document", "source": source})
    assert part == {
        "type": "file",
        "file": {
            "filename": "document.pdf",
            "file_data": f"data:application/pdf;base64,{source['data']}",
        },
    }


def test_audio_is_input_audio_with_its_format() -> None:
    source = _base64("audio/mpeg", b"ID3")
    part = chat_media_part({"type": "audio", "source": source})
    assert part == {"type": "input_audio", "input_audio": {"data": source["data"], "format": "mp3"}}


def test_a_block_without_a_media_form_is_refused() -> None:
    with pytest.raises(ValueError, match="no Chat Completions media part for a 'video' block"):
        chat_media_part({"type": "video", "source": {"type": "url", "url": "https://x/v.mp4"}})


def test_wire_items_hold_messages_parts_and_tool_calls() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    part = {"type": "text", "text": "hi"}
    body = {
        "messages": [
            {"role": "user", "content": [part]},
            {"role": "assistant", "content": None, "tool_calls": [call]},
        ]
    }
    items = chat_wire_items(body)
    assert part in items and call in items and body["messages"][1] in items
