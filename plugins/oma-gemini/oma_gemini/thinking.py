"""``AgentConfig.thinking`` as Gemini's ``generationConfig.thinkingConfig``, and the thought
signatures Gemini 3 wants on function calls.

Following the Gemini API's thinking and thought-signatures documentation (read 2026-12-06):

- Gemini 3 models take a ``thinkingLevel``; a token budget goes as ``thinkingBudget``, which
  they accept for backward compatibility. The Flash models (``gemini-3*flash*``: 3 Flash,
  3.1 Flash-Lite, 3.5 Flash and later) take "minimal", "low", "medium", "high": oma's levels
  as they are, and "off" as "minimal" (the least they think; the documentation says it does
  not guarantee none), with a one-line note. The other Gemini 3 models (Pro) take "low",
  "medium" (3.1 Pro and later) and "high", not "minimal": they cannot stop thinking, so "off"
  is refused locally; Gemini 3 Pro (3.0) takes no "medium", sent as "high" with a note.
- Gemini 2.5 models take a ``thinkingBudget`` only; a level is a budget (``LEVEL_BUDGETS``).
  2.5 Pro thinks always (128 to 32768 tokens); 2.5 Flash takes 0 (off) to 24576, 2.5
  Flash-Lite 512 to 24576 or 0 (off). A budget outside a model's range is refused locally.
- Gemini 2.0 and 1.x models cannot think.

Whenever thinking is asked for, ``includeThoughts`` is set, so thought summaries stream as
``reasoning`` events and come back as ``ReasoningBlock``s. A model oma has no rule for takes
a level as ``thinkingLevel``, a budget as ``thinkingBudget`` and "off" as a budget of 0.

Gemini 3 validates the thought signature on the first function call of each step of the
current turn (a 400 without it). A call with none (a conversation begun on another provider,
or a call written by hand) gets the value the documentation gives for that case,
``DUMMY_SIGNATURE``.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from oma_core.capabilities import ModelRules, UnsupportedSettingError

__all__ = [
    "BUDGET_RANGES",
    "DUMMY_SIGNATURE",
    "LEVEL_BUDGETS",
    "MODEL_RULES",
    "add_thinking",
    "needs_signatures",
    "rules_for",
]

_DOCS = "Gemini API thinking and thought signatures documentation, 2026-12-06"
_LOG = logging.getLogger("oma_gemini")

_FLASH_3 = ModelRules("gemini-3*flash*", source=_DOCS)
_GEMINI_3 = ModelRules("gemini-3*", thinking="always", source=_DOCS)
_PRO_25 = ModelRules("gemini-2.5-pro*", thinking="always", source=_DOCS)
_LITE_25 = ModelRules("gemini-2.5-flash-lite*", source=_DOCS)
_FLASH_25 = ModelRules("gemini-2.5-flash*", source=_DOCS)
#: Gemini's model families, newest first; a model none matches is sent as asked.
MODEL_RULES = (
    _FLASH_3,
    _GEMINI_3,
    _PRO_25,
    _LITE_25,
    _FLASH_25,
    ModelRules(("gemini-2.0*", "gemini-1.*"), thinking="never", source=_DOCS),
)
#: The ``thinkingBudget`` each 2.5 family takes, smallest to largest (0, off, aside).
BUDGET_RANGES = {
    _PRO_25.models: (128, 32768),
    _LITE_25.models: (512, 24576),
    _FLASH_25.models: (1, 24576),
}
#: A level as ``thinkingBudget``, for the 2.5 models (within every 2.5 range).
LEVEL_BUDGETS = {"low": 1024, "medium": 8192, "high": 24576}
#: The signature the documentation gives for a function call that has none.
DUMMY_SIGNATURE = "skip_thought_signature_validator"


def rules_for(model: str) -> ModelRules | None:
    """The family ``model`` belongs to, or None."""
    return next((rules for rules in MODEL_RULES if rules.matches(model)), None)


def needs_signatures(model: str) -> bool:
    """Whether ``model`` refuses a function call without a thought signature (Gemini 3)."""
    return rules_for(model) in (_FLASH_3, _GEMINI_3)


def _level(thinking: str, rules: ModelRules | None, model: str, provider: str) -> str:
    """The ``thinkingLevel`` for oma's level ``thinking`` on a Gemini 3 (or unknown) model."""
    if thinking == "off":  # only a Flash model gets here: the others refuse it first
        _LOG.warning(
            '%s: %s cannot switch thinking off; thinking="off" is sent as thinkingLevel "minimal"',
            provider,
            model,
        )
        return "minimal"
    if thinking == "medium" and rules is _GEMINI_3 and model.startswith("gemini-3-pro"):
        _LOG.warning(
            '%s: %s takes no thinkingLevel "medium"; thinking="medium" is sent as "high"',
            provider,
            model,
        )
        return "high"
    return thinking


def add_thinking(
    config: MutableMapping[str, Any], thinking: str | int | None, model: str, provider: str
) -> None:
    """Put ``thinking`` into ``config`` (the body's ``generationConfig``) as its
    ``thinkingConfig``, over any the options gave; raise ``UnsupportedSettingError`` where the
    model cannot take it."""
    from .capabilities import CAPABILITIES

    if thinking is None:
        return
    CAPABILITIES.check_thinking(thinking, model, provider)
    rules = rules_for(model)
    if rules is not None and rules.thinking == "never":
        return  # "off" on a model that cannot think: nothing to send
    thinking_config = dict(config.get("thinkingConfig") or {})
    for key in ("thinkingLevel", "thinkingBudget", "includeThoughts"):
        thinking_config.pop(key, None)  # the API takes a level or a budget, not both
    if thinking == "off" and rules is _FLASH_3:
        thinking_config["thinkingLevel"] = _level(thinking, rules, model, provider)
    elif thinking == "off":
        thinking_config["thinkingBudget"] = 0
    elif isinstance(thinking, str) and rules in (None, _FLASH_3, _GEMINI_3):
        thinking_config["thinkingLevel"] = _level(thinking, rules, model, provider)
        thinking_config["includeThoughts"] = True
    else:
        budget = LEVEL_BUDGETS[thinking] if isinstance(thinking, str) else thinking
        _check_budget(budget, thinking, rules, model, provider)
        thinking_config["thinkingBudget"] = budget
        thinking_config["includeThoughts"] = True
    config["thinkingConfig"] = thinking_config


def _check_budget(
    budget: int, thinking: str | int, rules: ModelRules | None, model: str, provider: str
) -> None:
    if rules is None or rules.models not in BUDGET_RANGES:
        return
    low, high = BUDGET_RANGES[rules.models]
    if not low <= budget <= high:
        raise UnsupportedSettingError(
            provider,
            "thinking",
            thinking,
            f"the model takes a thinking budget of {low} to {high} tokens",
            model=model,
        )
