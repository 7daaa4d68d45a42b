"""``AgentConfig.thinking`` as LiteLLM's ``reasoning_effort`` / ``thinking``, and the reasoning
LiteLLM hands back (``reasoning_content``, ``thinking_blocks``) as ``ReasoningBlock``s.

Following LiteLLM's "Reasoning content" documentation and its 1.110 sources (read 2026-12-06):
a level goes as ``reasoning_effort`` ("low", "medium", "high"; "off" as "none"), which LiteLLM
maps per route (OpenAI's ``reasoning_effort``, Anthropic's thinking, Gemini's thinkingConfig,
...); a token budget goes as ``thinking={"type": "enabled", "budget_tokens": N}``, LiteLLM's
documented form for Anthropic-style routes. Thinking other than "off" is refused locally for a
model LiteLLM's model map does not list as reasoning (``litellm.supports_reasoning``;
``litellm.register_model`` adds one).

A reply's ``thinking_blocks`` (Anthropic-style routes: text with a signature, or redacted data)
become ``ReasoningBlock``s marked ``provider="litellm"`` and go back in the assistant message's
``thinking_blocks``, unchanged, as LiteLLM documents for tool calling with thinking, on the
routes to Claude only (``THINKING_ROUTES``: LiteLLM hands them to any other route's wire as
they are); a reply
with only ``reasoning_content`` (unsigned text: DeepSeek, OpenAI-compatible servers) becomes one
unsigned block, which is not sent back (those services do not want it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from oma_core import ReasoningBlock
from oma_core.capabilities import UnsupportedSettingError

__all__ = [
    "PROVIDER",
    "THINKING_ROUTES",
    "ReasoningStream",
    "add_thinking",
    "reasoning_of",
    "thinking_blocks",
]

#: The provider's registered name: what its reasoning blocks' ``provider`` says.
PROVIDER = "litellm"
#: LiteLLM's routes to Claude, whose thinking LiteLLM carries as ``thinking_blocks``; to any
#: other route LiteLLM would pass them on as an unknown message field, so they stay out.
THINKING_ROUTES = frozenset({"anthropic", "bedrock", "vertex_ai"})


def add_thinking(
    kwargs: dict[str, Any], thinking: str | int | None, model: str, supports: Any, provider: str
) -> None:
    """Put ``thinking`` into ``kwargs`` (the ``acompletion`` arguments); ``supports`` is
    ``litellm.supports_reasoning``. Raise ``UnsupportedSettingError`` for a model LiteLLM's
    model map does not list as reasoning."""
    if thinking is None:
        return
    if thinking == "off":
        kwargs["reasoning_effort"] = "none"
        return
    if not supports(model=model):
        raise UnsupportedSettingError(
            provider,
            "thinking",
            thinking,
            "LiteLLM's model map does not list the model as reasoning (supports_reasoning); "
            "register it with litellm.register_model if it does",
            model=model,
        )
    if isinstance(thinking, int):
        kwargs["thinking"] = {"type": "enabled", "budget_tokens": thinking}
    else:
        kwargs["reasoning_effort"] = thinking


def reasoning_of(message: Any) -> list[ReasoningBlock]:
    """A reply message's reasoning: its ``thinking_blocks``, else its ``reasoning_content``."""
    blocks = [_block(b) for b in getattr(message, "thinking_blocks", None) or ()]
    if blocks:
        return blocks
    text = getattr(message, "reasoning_content", None)
    return [ReasoningBlock(str(text), provider=PROVIDER)] if text else []


def _field(block: Any, name: str) -> Any:
    return block.get(name) if isinstance(block, dict) else getattr(block, name, None)


def _block(block: Any) -> ReasoningBlock:
    if _field(block, "type") == "redacted_thinking":
        return ReasoningBlock("", redacted_data=str(_field(block, "data")), provider=PROVIDER)
    signature = _field(block, "signature")
    return ReasoningBlock(
        str(_field(block, "thinking") or ""), signature=signature or None, provider=PROVIDER
    )


def thinking_blocks(blocks: Iterable[Any]) -> list[dict[str, Any]]:
    """The ``thinking_blocks`` of an assistant turn: its signed and redacted reasoning, as
    LiteLLM gave it (unsigned reasoning text is not sent back; another provider's is left
    out)."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, ReasoningBlock) or block.provider not in (None, PROVIDER):
            continue
        if block.redacted_data is not None:
            out.append({"type": "redacted_thinking", "data": block.redacted_data})
        elif block.signature is not None:
            out.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
    return out


class ReasoningStream:
    """A stream's reasoning deltas (``reasoning_content`` text, ``thinking_blocks`` pieces)
    assembled into ``ReasoningBlock``s: a signature closes the thinking block it signs."""

    def __init__(self) -> None:
        self._blocks: list[ReasoningBlock] = []
        self._text: list[str] = []
        self._signed = False

    def feed(self, delta: Any) -> str:
        """Take a delta's reasoning; return its new reasoning text (for a ``reasoning``
        event)."""
        pieces = getattr(delta, "thinking_blocks", None) or ()
        if pieces:
            self._signed = True
        text = ""
        for piece in pieces:
            if _field(piece, "type") == "redacted_thinking":
                self._blocks.append(_block(piece))
                continue
            text += str(_field(piece, "thinking") or "")
            self._text.append(str(_field(piece, "thinking") or ""))
            if signature := _field(piece, "signature"):
                self._close(signature)
        if not pieces and (content := getattr(delta, "reasoning_content", None)):
            text = str(content)
            self._text.append(text)
        return text

    def _close(self, signature: str | None) -> None:
        self._blocks.append(
            ReasoningBlock("".join(self._text), signature=signature, provider=PROVIDER)
        )
        self._text = []

    def finish(self) -> list[ReasoningBlock]:
        if self._text and "".join(self._text):
            if self._signed:  # thinking with no signature: it could not go back
                raise ValueError("a thinking block ended without its signature")
            self._close(None)
        return self._blocks
