"""``AgentConfig.thinking`` on the Messages API, and the settings each Claude family refuses.

Following Anthropic's thinking, adaptive thinking and effort documentation (read 2026-12-06)
and the SDK's ``ThinkingConfigParam`` and ``OutputConfigParam``:

- Claude Opus 4.7 and later (Opus 4.8, the Claude 5 models) think adaptively only: a level is
  ``thinking: {"type": "adaptive"}`` with ``output_config.effort``; a token budget
  (``"enabled"``) and ``"disabled"`` are refused by the API, so a budget is refused locally and
  "off" leaves ``thinking`` out. They take no ``temperature``, ``top_p`` or ``top_k``: those are
  left out with a note. Claude Mythos always thinks: "off" is refused.
- Claude Opus 4.6 and Sonnet 4.6: a level is adaptive with an effort, a budget is manual
  thinking (``"enabled"``, deprecated there but accepted), "off" is ``"disabled"``.
- Claude 4.5, Opus 4.1, Claude 4 and Claude 3.7 Sonnet: manual thinking only; a level is a
  budget (``LEVEL_BUDGETS``).
- Claude 3.5 and 3 models cannot think.

Manual thinking needs ``budget_tokens`` >= 1024 and below ``max_tokens``: with the default
``max_tokens`` the budget is added to it; a ``max_tokens`` the caller set that is not above
the budget is refused locally. While Claude thinks it takes no ``temperature`` (other than 1)
and no ``top_k``; Claude 4.5, 4.6 and Opus 4.1 take ``temperature`` or ``top_p``, not both.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from oma_core.capabilities import ModelRules, UnsupportedSettingError

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
_SAMPLING = frozenset({"temperature", "top_p", "top_k"})
_WHILE_THINKING = frozenset({"temperature", "top_k"})

_MYTHOS = ModelRules(
    "claude-mythos-*", thinking="always", budget=False, refuses=_SAMPLING, source=_DOCS
)
_ADAPTIVE_ONLY = ModelRules(
    (
        "claude-opus-4-7*",
        "claude-opus-4-8*",
        "claude-opus-5*",
        "claude-sonnet-5*",
        "claude-haiku-5*",
        "claude-fable-5*",
    ),
    budget=False,
    refuses=_SAMPLING,
    source=_DOCS,
)
_ADAPTIVE_OR_BUDGET = ModelRules(
    ("claude-opus-4-6*", "claude-sonnet-4-6*"),
    refuses_while_thinking=_WHILE_THINKING,
    exclusive=("temperature", "top_p"),
    source=_DOCS,
)
#: Claude's model families, newest first; a model none matches is sent as asked.
MODEL_RULES = (
    _MYTHOS,
    _ADAPTIVE_ONLY,
    _ADAPTIVE_OR_BUDGET,
    ModelRules(
        ("claude-opus-4-5*", "claude-sonnet-4-5*", "claude-haiku-4-5*", "claude-opus-4-1*"),
        refuses_while_thinking=_WHILE_THINKING,
        exclusive=("temperature", "top_p"),
        source=_DOCS,
    ),
    ModelRules(
        ("claude-opus-4-2*", "claude-sonnet-4-2*", "claude-opus-4-0*", "claude-sonnet-4-0*"),
        refuses_while_thinking=_WHILE_THINKING,
        source=_DOCS,
    ),
    ModelRules("claude-3-7-sonnet*", refuses_while_thinking=_WHILE_THINKING, source=_DOCS),
    ModelRules("claude-3*", thinking="never", source=_DOCS),
)
#: The smallest ``budget_tokens`` the API takes.
MIN_BUDGET = 1024
#: A level as manual thinking's ``budget_tokens``, for the models that take no effort.
LEVEL_BUDGETS = {"low": 2048, "medium": 8192, "high": 16384}
#: The settings a family may refuse and their keys in the body.
_KEYS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k"}


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
    rules = rules_for(model)
    if thinking == "off":
        if rules is None or rules.thinking == "never" or rules in (_MYTHOS, _ADAPTIVE_ONLY):
            optional.pop("thinking", None)  # off by default; the newest refuse "disabled"
        else:
            optional["thinking"] = {"type": "disabled"}
        return max_tokens
    # a level is an effort on the adaptive families and on a model oma has no rule for
    if isinstance(thinking, str) and rules in (None, _MYTHOS, _ADAPTIVE_ONLY, _ADAPTIVE_OR_BUDGET):
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
