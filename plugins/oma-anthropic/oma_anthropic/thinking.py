"""``AgentConfig.thinking`` on the Messages API, and the settings each Claude family refuses.

Following Anthropic's thinking, adaptive thinking and effort documentation (read 2026-12-06)
and the SDK's ``ThinkingConfigParam`` and ``OutputConfigParam``. Which family thinks how, and
which sampling settings it refuses, is the shared table ``oma_core.model_families`` (Bedrock
serves the same families); here it becomes the Messages API's fields:

- a level on an adaptive family (and on a model oma has no rule for) is
  ``thinking: {"type": "adaptive"}`` with ``output_config.effort``; on the others a budget
  (``LEVEL_BUDGETS``), as manual thinking (``{"type": "enabled", "budget_tokens": N}``);
- a budget on a family that takes none (Opus 4.7 and later, Mythos) is refused locally;
- "off" is ``{"type": "disabled"}`` where the family takes it, else ``thinking`` is left out
  (Mythos always thinks: "off" is refused);
- a refused sampling setting (``temperature``, ``top_p``, ``top_k``) is left out with a note.

Manual thinking needs ``budget_tokens`` >= 1024 and below ``max_tokens``: with the default
``max_tokens`` the budget is added to it; a ``max_tokens`` the caller set that is not above
the budget is refused locally.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from oma_core.capabilities import ModelRules, UnsupportedSettingError
from oma_core.model_families import CLAUDE_FAMILIES, claude_family

__all__ = [
    "LEVEL_BUDGETS",
    "MIN_BUDGET",
    "MODEL_RULES",
    "add_thinking",
    "leave_out_refused",
    "rules_for",
    "thinks",
]

_LOG = logging.getLogger("oma_anthropic")
_DOCS = "Anthropic thinking and models documentation, 2026-12-06"
#: The settings a family may refuse and their keys in the body.
_KEYS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k"}
#: Claude's model families (``oma_core.model_families``), newest first; a model none matches
#: is sent as asked.
MODEL_RULES = tuple(f.rules(settings=_KEYS, source=_DOCS) for f in CLAUDE_FAMILIES)
#: The smallest ``budget_tokens`` the API takes.
MIN_BUDGET = 1024
#: A level as manual thinking's ``budget_tokens``, for the models that take no effort.
LEVEL_BUDGETS = {"low": 2048, "medium": 8192, "high": 16384}


def rules_for(model: str) -> ModelRules | None:
    """The family ``model`` belongs to, or None."""
    return next((rules for rules in MODEL_RULES if rules.matches(model)), None)


def add_thinking(
    optional: dict[str, Any],
    thinking: str | int | None,
    model: str,
    max_tokens: int,
    *,
    max_tokens_given: bool,
    provider: str,
) -> int:
    """Put ``thinking`` into ``optional`` (the body's keys after ``model``) and return the
    ``max_tokens`` to send; raise ``UnsupportedSettingError`` where the model cannot take it."""
    from .capabilities import CAPABILITIES

    if thinking is None:
        return max_tokens
    CAPABILITIES.check_thinking(thinking, model, provider)
    family = claude_family(model)
    if thinking == "off":
        if family is None or not family.takes_disabled:
            optional.pop("thinking", None)  # off by default; the newest refuse "disabled"
        else:
            optional["thinking"] = {"type": "disabled"}
        return max_tokens
    # a level is an effort on the adaptive families and on a model oma has no rule for
    if isinstance(thinking, str) and (family is None or family.adaptive):
        optional["thinking"] = {"type": "adaptive"}
        config = dict(optional.get("output_config") or {})
        config["effort"] = thinking
        optional["output_config"] = config
        return max_tokens
    budget = LEVEL_BUDGETS[thinking] if isinstance(thinking, str) else thinking
    if budget < MIN_BUDGET:
        raise UnsupportedSettingError(
            provider, "thinking", thinking, f"a budget is at least {MIN_BUDGET} tokens", model=model
        )
    if budget >= max_tokens:
        if max_tokens_given:
            raise UnsupportedSettingError(
                provider,
                "max_tokens",
                max_tokens,
                f"it must be above the thinking budget of {budget} tokens",
                model=model,
            )
        max_tokens += budget
    optional["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return max_tokens


def thinks(optional: Mapping[str, Any], model: str) -> bool:
    """Whether the request asks the model to think (or the model always does)."""
    rules = rules_for(model)
    if rules is not None and rules.thinking == "always":
        return True
    thinking = optional.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled")


def leave_out_refused(optional: dict[str, Any], model: str) -> list[str]:
    """Remove from ``optional`` the sampling settings ``model`` refuses, a note each."""
    rules = rules_for(model)
    if rules is None:
        return []
    return rules.leave_out(
        optional, _KEYS, thinking=thinks(optional, model), model=model, logger=_LOG
    )
