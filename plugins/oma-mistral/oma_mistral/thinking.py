"""``AgentConfig.thinking`` as Mistral's ``reasoning_effort``, and its ``thinking`` chunks.

Following Mistral's reasoning documentation (adjustable and native reasoning, read
2026-12-06):

- Mistral Small 4 (``mistral-small-latest``, ``mistral-small-2603``) and Mistral Medium 3.5
  take ``reasoning_effort`` "high" (a full thinking chunk before the answer) or "none"
  (minimal thinking, no chunk): "high" and "off" map to them; "low" and "medium" are refused
  locally, as is a token budget.
- Mistral Large 4 takes ``reasoning_effort`` "low", "medium" or "high", and "none".
- Magistral models (deprecated) always reason, at their own depth: a level sends nothing,
  "off" is refused locally.
- Codestral, Devstral, Pixtral, Ministral, Voxtral and the open models cannot reason.

Mistral takes no token budget: one is refused locally on every model. A model oma has no rule
for gets the level as ``reasoning_effort`` and "off" as "none", for the service to judge.

Reasoning comes back as ``thinking`` chunks (``{"type": "thinking", "thinking": [{"type":
"text", "text"}]}``) in the assistant message's content; they become ``ReasoningBlock``s
marked ``provider="mistral"`` and go back as the same chunks. Mistral signs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from oma_core.capabilities import ModelRules, UnsupportedSettingError

__all__ = ["MODEL_RULES", "add_thinking", "rules_for", "split_content", "thinking_chunk"]

_DOCS = "Mistral reasoning documentation, 2026-12-06"

_HIGH_OR_NONE = ModelRules(
    ("mistral-small-latest", "mistral-small-2603*", "mistral-medium-3-5*", "mistral-medium-3.5*"),
    budget=False,
    source=_DOCS,
)
_LARGE_4 = ModelRules(("mistral-large-4*",), budget=False, source=_DOCS)
_MAGISTRAL = ModelRules("magistral-*", thinking="always", budget=False, source=_DOCS)
#: Mistral's model families, first match wins; a model none matches is sent as asked.
MODEL_RULES = (
    _HIGH_OR_NONE,
    _LARGE_4,
    _MAGISTRAL,
    ModelRules(
        ("codestral*", "devstral*", "pixtral*", "ministral*", "voxtral*", "open-*"),
        thinking="never",
        source=_DOCS,
    ),
)


def rules_for(model: str) -> ModelRules | None:
    """The family ``model`` belongs to, or None."""
    return next((rules for rules in MODEL_RULES if rules.matches(model)), None)


def add_thinking(
    body: dict[str, Any], thinking: str | int | None, model: str, provider: str
) -> None:
    """Put ``thinking`` into ``body`` as ``reasoning_effort``; raise
    ``UnsupportedSettingError`` where the model cannot take it."""
    from . import CAPABILITIES

    if thinking is None:
        return
    CAPABILITIES.check_thinking(thinking, model, provider)
    rules = rules_for(model)
    if isinstance(thinking, int):
        raise UnsupportedSettingError(
            provider,
            "thinking",
            thinking,
            'Mistral takes a level ("low", "medium" or "high"), not a token budget',
            model=model,
        )
    if rules is _MAGISTRAL or (rules is not None and rules.thinking == "never"):
        return  # Magistral thinks at its own depth; "off" on a model that cannot think
    if rules is _HIGH_OR_NONE and thinking in ("low", "medium"):
        raise UnsupportedSettingError(
            provider,
            "thinking",
            thinking,
            'the model takes reasoning_effort "high" or "none": ask for "high" or "off"',
            model=model,
        )
    body["reasoning_effort"] = "none" if thinking == "off" else thinking


def split_content(content: Any) -> tuple[str, str]:
    """A message's or a delta's ``content`` as its thinking text and its answer text."""
    if isinstance(content, str):
        return "", content
    if not isinstance(content, list):
        return "", ""
    thought: list[str] = []
    text: list[str] = []
    for chunk in content:
        if not isinstance(chunk, Mapping):
            continue
        if chunk.get("type") == "text":
            text.append(str(chunk.get("text") or ""))
        elif chunk.get("type") == "thinking":
            thought.extend(_texts(chunk.get("thinking")))
    return "".join(thought), "".join(text)


def _texts(parts: Any) -> Iterable[str]:
    if isinstance(parts, str):
        return [parts]
    if not isinstance(parts, list):
        return []
    return [str(p.get("text") or "") for p in parts if isinstance(p, Mapping)]


def thinking_chunk(text: str) -> dict[str, Any]:
    """Reasoning text as the assistant content chunk Mistral returned it in."""
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}
