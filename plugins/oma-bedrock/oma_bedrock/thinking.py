"""``AgentConfig.thinking`` for Claude on Bedrock, through Converse's
``additionalModelRequestFields``, and the sampling settings each Claude family refuses.

Following Amazon Bedrock's "Extended thinking" and "Adaptive thinking" pages for Claude (read
2026-12-06), which take Anthropic's own fields. Which family thinks how, and which sampling
settings it refuses, is the shared table ``oma_core.model_families`` (the Messages API serves
the same families); Bedrock's ids carry a vendor prefix and often a geography (``us.``,
``global.``) or an ARN, so the families match ``*anthropic.`` and a stem:

- a level on an adaptive family is
  ``{"thinking": {"type": "adaptive"}, "output_config": {"effort": level}}``; on the others a
  budget (``LEVEL_BUDGETS``), as ``{"type": "enabled", "budget_tokens": N}``;
- a budget on a family that takes none (Opus 4.7 and later, Mythos) is refused locally;
- "off" is ``{"type": "disabled"}`` where the family takes it, else nothing is sent (Mythos
  always thinks: "off" is refused);
- a refused ``temperature`` or ``topP`` is left out with a note (Converse has no ``top_k``).

A budget is at least 1024 tokens and below ``maxTokens``: with no ``maxTokens`` given,
``DEFAULT_MAX_TOKENS`` plus the budget is sent; a ``maxTokens`` the caller set that is not above
the budget is refused locally.

oma maps thinking only for Claude on Bedrock: another model (Nova, DeepSeek, Llama...) takes
its own fields, which ``provider_options["additional_model_request_fields"]`` carries; asking
it for thinking is refused locally, "off" sends nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from oma_core.capabilities import ModelRules, UnsupportedSettingError
from oma_core.model_families import CLAUDE_FAMILIES, claude_family

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
_KEYS = {"temperature": "temperature", "top_p": "topP"}
#: Where a Claude id's stem starts on Bedrock: after a geography or ARN and the vendor.
_PREFIX = "*anthropic."
#: Claude's families on Bedrock (``oma_core.model_families``), newest first; a model none
#: matches is sent as asked.
MODEL_RULES = tuple(f.rules(prefix=_PREFIX, settings=_KEYS, source=_DOCS) for f in CLAUDE_FAMILIES)
#: The smallest ``budget_tokens`` Claude takes.
MIN_BUDGET = 1024
#: A level as manual thinking's ``budget_tokens``, for the families that take no effort.
LEVEL_BUDGETS = {"low": 2048, "medium": 8192, "high": 16384}
#: ``maxTokens`` sent beside a budget when the caller gave none (the budget is added to it).
DEFAULT_MAX_TOKENS = 4096


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
    family = claude_family(model, _PREFIX)
    if thinking == "off":
        if family is not None and family.takes_disabled:
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
    if isinstance(thinking, str) and (family is None or family.adaptive):
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
