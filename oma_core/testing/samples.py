"""The conformance kit's samples: every block of the message model, in every place it may
appear, each inside the smallest valid conversation that carries it, with media payloads
whose first bytes are what their media type says (``MEDIA_SAMPLES``).

``oma_core.testing.conformance`` iterates them (and re-exports these names);
``oma_core.testing.crowded`` builds its crowded turns from the same payloads.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from ..capabilities import IN_TOOL_RESULT, Capabilities
from ..errors import UnsupportedContentBlockError
from ..validation import load_messages

__all__ = ["MEDIA_SAMPLES", "Sample", "declared", "samples", "schema_bomb"]

# Smallest payloads whose first bytes are what their media type says (fake servers may check).
MEDIA_SAMPLES: Mapping[str, bytes] = {
    "image/png": bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    ),
    "image/jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9",
    "image/gif": b"GIF89a\x01\x00\x01\x00\x00\x00\x00;",
    "image/webp": b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00"
    b"\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00",
    "image/bmp": b"BM\x1e\x00\x00\x00\x00\x00\x00\x00\x1a\x00\x00\x00",
    "video/mp4": b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom",
    "application/pdf": b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n"
    b"trailer\n<< /Root 1 0 R >>\n%%EOF\n",
    "text/plain": "a plain text file: caf\u00e9, na\u00efve\n".encode(),
    "text/markdown": "# Conformance\n\nA *Markdown* file \u2014 with UTF-8.\n".encode(),
    # A RIFF/WAVE header (PCM, mono, 8 kHz, 16 bit) with two silent samples.
    "audio/wav": b"RIFF\x28\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00"
    b"\x40\x1f\x00\x00\x80\x3e\x00\x00\x02\x00\x10\x00data\x04\x00\x00\x00\x00\x00\x00\x00",
    # An ID3v2.4 tag (empty) followed by one MPEG-1 Layer III frame header.
    "audio/mpeg": b"ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb\x90\x64\x00\x00\x00\x00",
}
_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/bmp": "bmp",
    "video/mp4": "mp4",
    "application/pdf": "pdf",
    "text/plain": "txt",
    "text/markdown": "md",
    "audio/wav": "wav",
    "audio/mpeg": "mp3",
}


@attrs.frozen
class Sample:
    """One block in one place, inside the smallest valid conversation that carries it.

    ``where`` is the role, or ``"tool_result"`` for a part inside a tool result; ``locator``
    is ``(message index, block index, part index or None)`` of the block in ``conversation``
    (the section-2 JSON shape), so a plugin can find its counterpart on the wire.
    """

    block_type: str
    where: str
    source: str | None
    media_type: str | None
    conversation: tuple[Mapping[str, Any], ...]
    locator: tuple[int, int, int | None]

    @property
    def id(self) -> str:
        parts = [self.block_type, self.where, self.source or "", self.media_type or ""]
        return "-".join(p for p in parts if p)

    @property
    def block(self) -> Mapping[str, Any]:
        """The sample's block (or tool-result part) in the section-2 JSON shape."""
        message, index, part = self.locator
        block = self.conversation[message]["content"][index]
        return block if part is None else block["content"][part]  # type: ignore[no-any-return]


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user(*blocks: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def _assistant(*blocks: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def _source(kind: str, media_type: str, marker: str) -> dict[str, Any]:
    if kind == "base64":
        data = base64.b64encode(MEDIA_SAMPLES[media_type]).decode()
        return {"type": "base64", "media_type": media_type, "data": data}
    url = f"https://example.com/oma-conformance/{marker}.{_EXTENSIONS[media_type]}"
    return {"type": "url", "media_type": media_type, "url": url}


def _tool_round(*parts: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """A user question, an assistant tool call and the user's tool result carrying ``parts``."""
    call = {"type": "tool_use", "id": "call_conf_1", "name": "lookup", "input": {"q": "x"}}
    content: Any = list(parts) if parts else "the tool's answer"
    result = {"type": "tool_result", "tool_use_id": "call_conf_1", "content": content}
    return (_user(_text("use the tool")), _assistant(call), _user(result))


def samples() -> Iterator[Sample]:
    """Every block the message model has, in every place it may appear, per source kind and
    a range of media types (including ones few providers take)."""
    yield Sample("text", "user", None, None, (_user(_text("conformance text")),), (0, 0, None))
    yield Sample(
        "text",
        "assistant",
        None,
        None,
        (_user(_text("hi")), _assistant(_text("conformance reply")), _user(_text("go on"))),
        (1, 0, None),
    )
    for family, types in (
        ("image", ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp")),
        ("video", ("video/mp4",)),
    ):
        for media_type in types:
            for kind in ("base64", "url"):
                marker = f"{family}-{kind}"
                block = {"type": family, "source": _source(kind, media_type, marker)}
                yield from _in_user_and_assistant_turns(family, kind, media_type, block)
    yield from _document_and_audio_samples()
    yield Sample("tool_use", "assistant", None, None, _tool_round(), (1, 0, None))
    yield Sample("tool_result", "user", None, None, _tool_round(), (2, 0, None))
    reasoning = {"type": "reasoning", "text": "conformance thinking", "signature": "sig-conf"}
    yield Sample(
        "reasoning",
        "assistant",
        None,
        None,
        (_user(_text("think")), _assistant(reasoning, _text("done")), _user(_text("more"))),
        (1, 0, None),
    )
    for media_type in ("image/png", "image/jpeg", "image/bmp"):
        for kind in ("base64", "url"):
            image = {"type": "image", "source": _source(kind, media_type, f"tool-image-{kind}")}
            yield Sample(
                "image",
                IN_TOOL_RESULT,
                kind,
                media_type,
                _tool_round(_text("the chart:"), image),
                (2, 0, 1),
            )
    for media_type in ("application/pdf", "text/plain"):
        for kind in ("base64", "url"):
            file = {
                "type": "file",
                "filename": f"report.{_EXTENSIONS[media_type]}",
                "source": _source(kind, media_type, f"tool-file-{kind}"),
            }
            yield Sample(
                "file",
                IN_TOOL_RESULT,
                kind,
                media_type,
                _tool_round(_text("the file:"), file),
                (2, 0, 1),
            )


def _document_and_audio_samples() -> Iterator[Sample]:
    """Documents (PDF, plain text, Markdown) and audio clips (wav, mp3) in user and assistant
    turns, per source kind; the base64 PDF carries a ``filename``."""
    blocks: list[tuple[str, str, str, dict[str, Any]]] = []
    for media_type in ("application/pdf", "text/plain", "text/markdown"):
        for kind in ("base64", "url"):
            document: dict[str, Any] = {
                "type": "document",
                "source": _source(kind, media_type, f"document-{kind}"),
            }
            if kind == "base64" and media_type == "application/pdf":
                document["filename"] = "report.pdf"
            blocks.append(("document", kind, media_type, document))
    for media_type in ("audio/wav", "audio/mpeg"):
        for kind in ("base64", "url"):
            audio = {"type": "audio", "source": _source(kind, media_type, f"audio-{kind}")}
            blocks.append(("audio", kind, media_type, audio))
    for family, kind, media_type, block in blocks:
        yield from _in_user_and_assistant_turns(family, kind, media_type, block)


def _in_user_and_assistant_turns(
    family: str, kind: str, media_type: str, block: dict[str, Any]
) -> Iterator[Sample]:
    """``block`` asked about in a user turn, then shown in an assistant turn."""
    yield Sample(
        family, "user", kind, media_type, (_user(_text("what is this?"), block),), (0, 1, None)
    )
    yield Sample(
        family,
        "assistant",
        kind,
        media_type,
        (_user(_text("show me")), _assistant(block), _user(_text("thanks"))),
        (1, 0, None),
    )


def declared(capabilities: Capabilities, sample: Sample) -> bool:
    """Whether ``capabilities`` carry the sample's block in the sample's place."""
    messages = load_messages(sample.conversation)
    message, index, part = sample.locator
    block = messages[message].content[index]
    if part is not None:
        block = _only_part(block, part)
    single = (attrs.evolve(messages[message], content=(block,)),)
    try:
        capabilities.check(single, "probe")
    except UnsupportedContentBlockError:
        return False
    return True


def _only_part(block: Any, part: int) -> Any:
    return attrs.evolve(block, content=(block.content[part],))


def schema_bomb(levels: int) -> dict[str, Any]:
    """A tool input schema of a few hundred bytes whose ``$defs`` each refer to the next
    twice: written in place, it holds 2**levels copies of the last one (what a hostile MCP
    server may list; a toolset must refuse it in bounded time and memory)."""
    defs: dict[str, Any] = {
        f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
        for i in range(levels)
    }
    defs[f"d{levels}"] = {"type": "string"}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}
