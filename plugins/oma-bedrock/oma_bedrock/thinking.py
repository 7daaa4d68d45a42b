"""``AgentConfig.thinking`` for Claude on Bedrock, through Converse's
``additionalModelRequestFields``, and the sampling settings each Claude family refuses.

Following Amazon Bedrock's "Extended thinking" and "Adaptive thinking" pages for Claude (read
2026-12-06), which take Anthropic's own fields:

- Claude Opus 4.7 and later (Opus 5, Mythos, Fable 5): adaptive thinking only; a level is
  ``{"thinking": {"type": "adaptive"}, "output_config": {"effort": level}}``, a budget and
  ``"disabled"`` are refused by the service (so a budget is refused locally and "off" sends
  nothing); they take no ``temperature`` or ``topP``, which are left out with a note. Mythos
  always thinks: "off" is refused.
- Claude Opus 4.6 and Sonnet 4.6: a level is adaptive with an effort, a budget is manual
  thinking (``{"type": "enabled", "budget_tokens": N}``, deprecated there), "off" is
  ``{"type": "disabled"}``.
- Claude 4.5, Opus 4.1, Claude 4 and Claude 3.7 Sonnet: manual thinking only; a level is a
  budget (``LEVEL_BUDGETS``). Claude 3.5 and 3 cannot think.

A budget is at least 1024 tokens and below ``maxTokens``: with no ``maxTokens`` given,
``DEFAULT_MAX_TOKENS`` plus the budget is sent; a ``maxTokens`` the caller set that is not above
the budget is refused locally. While Claude thinks it takes no ``temperature`` (left out).

oma maps thinking only for Claude on Bedrock: another model (Nova, DeepSeek, Llama...) takes
its own fields, which ``provider_options["additional_model_request_fields"]`` carries; asking
it for thinking is refused locally, "off" sends nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from oma_core.capabilities import ModelRules, UnsupportedSettingError

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "LEVEL_BUDGETS",
    "MIN_BUDGET",
    "MODEL_RULES",
    "add_thinking",
    "is_claude",
    "leave_out_refused",
    "rules_for",
]

_LOG = logging.getLogger("oma_bedrock")
_DOCS = "Amazon Bedrock extended and adaptive thinking documentation, 2026-12-06"
_SAMPLING = frozenset({"temperature", "top_p"})

# Bedrock's model ids carry a vendor prefix and often a geography ("us.", "global.") or an ARN:
# the patterns match the id anywhere after them.
_MYTHOS = ModelRules(
    "*anthropic.claude-mythos-*", thinking="always", budget=False, refuses=_SAMPLING, source=_DOCS
)
_ADAPTIVE_ONLY = ModelRules(
    (
        "*anthropic.claude-opus-4-7*",
        "*anthropic.claude-opus-4-8*",
        "*anthropic.claude-opus-5*",
        "*anthropic.claude-sonnet-5*",
        "*anthropic.claude-haiku-5*",
        "*anthropic.claude-fable-5*",
    ),
    budget=False,
    refuses=_SAMPLING,
    source=_DOCS,
)
_ADAPTIVE_OR_BUDGET = ModelRules(
    ("*anthropic.claude-opus-4-6*", "*anthropic.claude-sonnet-4-6*"),
    refuses_while_thinking="temperature",
    exclusive=("temperature", "top_p"),
    source=_DOCS,
)
#: Claude's families on Bedrock, newest first; a model none matches is sent as asked.
MODEL_RULES = (
    _MYTHOS,
    _ADAPTIVE_ONLY,
    _ADAPTIVE_OR_BUDGET,
    ModelRules(
        (
            "*anthropic.claude-opus-4-5*",
            "*anthropic.claude-sonnet-4-5*",
            "*anthropic.claude-haiku-4-5*",
            "*anthropic.claude-opus-4-1*",
        ),
        refuses_while_thinking="temperature",
        exclusive=("temperature", "top_p"),
        source=_DOCS,
    ),
    ModelRules(
        ("*anthropic.claude-opus-4-2*", "*anthropic.claude-sonnet-4-2*"),
        refuses_while_thinking="temperature",
        source=_DOCS,
    ),
    ModelRules("*anthropic.claude-3-7-sonnet*", refuses_while_thinking="temperature", source=_DOCS),
    ModelRules("*anthropic.claude-3*", thinking="never", source=_DOCS),
)
#: The smallest ``budget_tokens`` Claude takes.
MIN_BUDGET = 1024
#: A level as manual thinking's ``budget_tokens``, for the families that take no effort.
LEVEL_BUDGETS = {"low": 2048, "medium": 8192, "high": 16384}
#: ``maxTokens`` sent beside a budget when the caller gave none (the budget is added to it).
DEFAULT_MAX_TOKENS = 4096
_KEYS = {"temperature": "temperature", "top_p": "topP"}


def rules_for(model: str) -> ModelRules | None:
    """The Claude family ``model`` belongs to, or None."""
    return next((rules for rules in MODEL_RULES if rules.matches(model)), None)


def is_claude(model: str) -> bool:
    """Whether ``model`` is a Claude model (the ones oma maps thinking for on Bedrock)."""
    return "anthropic.claude" in model


def add_thinking(
    fields: dict[str, Any],
    inference: dict[str, Any],
    thinking: str | int | None,
    model: str,
    provider: str,
) -> None:
    """Put ``thinking`` into ``fields`` (``additionalModelRequestFields``) and, for a budget,
    ``maxTokens`` into ``inference``; raise ``UnsupportedSettingError`` where the model cannot
    take it."""
    from .capabilities import CAPABILITIES

    if thinking is None:
        return
    CAPABILITIES.check_thinking(thinking, model, provider)
    rules = rules_for(model)
    if thinking == "off":
        if is_claude(model) and rules not in (None, _MYTHOS, _ADAPTIVE_ONLY, MODEL_RULES[-1]):
            fields["thinking"] = {"type": "disabled"}
        return
    if not is_claude(model):
        raise UnsupportedSettingError(
            provider,
            "thinking",
            thinking,
            "oma maps thinking on Bedrock for Claude models only; give this model's own "
            'fields in provider_options["additional_model_request_fields"]',
            model=model,
        )
    if isinstance(thinking, str) and rules in (None, _MYTHOS, _ADAPTIVE_ONLY, _ADAPTIVE_OR_BUDGET):
        fields["thinking"] = {"type": "adaptive"}
        fields["output_config"] = {**(fields.get("output_config") or {}), "effort": thinking}
        return
    budget = LEVEL_BUDGETS[thinking] if isinstance(thinking, str) else thinking
    if budget < MIN_BUDGET:
        raise UnsupportedSettingError(
            provider, "thinking", thinking, f"a budget is at least {MIN_BUDGET} tokens", model=model
        )
    max_tokens = inference.get("maxTokens")
    if max_tokens is None:
        inference["maxTokens"] = DEFAULT_MAX_TOKENS + budget
    elif max_tokens <= budget:
        raise UnsupportedSettingError(
            provider,
            "max_tokens",
            max_tokens,
            f"it must be above the thinking budget of {budget} tokens",
            model=model,
        )
    fields["thinking"] = {"type": "enabled", "budget_tokens": budget}


def leave_out_refused(inference: dict[str, Any], fields: dict[str, Any], model: str) -> list[str]:
    """Remove from ``inference`` the sampling settings ``model`` refuses, a note each."""
    rules = rules_for(model)
    if rules is None:
        return []
    thinking = rules.thinking == "always" or (fields.get("thinking") or {}).get("type") not in (
        None,
        "disabled",
    )
    return rules.leave_out(inference, _KEYS, thinking=thinking, model=model, logger=_LOG)
