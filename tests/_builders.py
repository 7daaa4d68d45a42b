"""Builders of the plain-dict message shapes of DESIGN.md section 2, shared by the tests.

``user(...)``/``assistant(...)`` wrap blocks into a message; ``text``, ``image``, ``video``,
``tool_use`` and ``tool_result`` build blocks with small valid defaults; ``refused`` loads data
that must be refused and checks the ``f"{path} {reason}"`` form of the error.
"""

from __future__ import annotations

from typing import Any

import pytest

from oma_core import InvalidMessageError, load_messages

PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


IMG_URL = "https://example.com/cat.png"


VID_URL = "https://example.com/clip.mp4"


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: Any = "hi") -> dict[str, Any]:
    return {"type": "text", "text": value}


def url_source(url: str = IMG_URL, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "url", "media_type": media_type, "url": url}


def b64_source(data: str = PNG_B64, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "base64", "media_type": media_type, "data": data}


def image(source: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "image", "source": source or url_source(), **extra}


def video(source: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "video", "source": source or url_source(VID_URL, "video/mp4")}


def tool_use(input_: Any = None, **over: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "t1", "name": "zoom", "input": input_ or {"q": "x"}}
    block.update(over)
    return block


def tool_result(content: Any = "done", **over: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": "t1", "content": content}
    block.update(over)
    return block


def refused(data: Any, path: str | None = None, phrase: str | None = None) -> InvalidMessageError:
    """Load `data`, expect InvalidMessageError, and check the `f"{path} {reason}"` form."""
    with pytest.raises(InvalidMessageError) as info:
        load_messages(data)
    err = info.value
    assert isinstance(err.path, str) and err.path.startswith("messages")
    assert str(err).startswith(err.path + " "), str(err)
    if path is not None:
        assert err.path == path, (err.path, str(err))
    if phrase is not None:
        assert phrase in str(err), str(err)
    return err


def full_conversation() -> list[dict[str, Any]]:
    return [
        user(
            text("What is shown?"),
            image(url_source()),
            image(b64_source(), detail="low"),
            video(b64_source("AAAA", "video/mp4")),
            video(),
        ),
        assistant(
            {"type": "reasoning", "text": "Look closer.", "signature": "sig"},
            {"type": "reasoning", "text": "", "redacted_data": "opaque"},
            text("Let me zoom."),
            tool_use({"factor": 2, "nested": {"list": [1, 2.5, True, None, "s"]}}),
        ),
        user(
            tool_result(
                [
                    text("zoomed"),
                    {"type": "image", "source": b64_source()},
                    {
                        "type": "file",
                        "filename": "report.pdf",
                        "source": b64_source("JVBERi0=", "application/pdf"),
                    },
                ]
            ),
            tool_result("failed", is_error=True, tool_use_id="t2"),
            text("thanks"),
        ),
    ]


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value
