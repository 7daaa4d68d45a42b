"""Claude's model families and what each takes, in one table that every plugin serving Claude
reads (``oma-anthropic`` on the Messages API, ``oma-bedrock`` on Converse).

Following Anthropic's models, thinking, adaptive thinking and effort documentation and Amazon
Bedrock's extended and adaptive thinking pages for Claude (both read 2026-12-06), which agree:

- Claude Mythos always thinks, adaptively; the Claude Opus 4.7 and later models (Opus 4.8,
  the Claude 5 models) think adaptively only. A token budget and ``"disabled"`` are refused
  by the service; so are ``temperature``, ``top_p`` and ``top_k``.
- Claude Opus 4.6 and Sonnet 4.6 think adaptively (a level is an effort) or by a budget.
- Claude 4.5, Opus 4.1, Claude 4 and Claude 3.7 Sonnet think by a budget only.
- Claude 3.5 and 3 cannot think.
- While Claude thinks it takes no ``temperature`` (other than 1) and no ``top_k``; Claude 4.5,
  4.6 and Opus 4.1 take ``temperature`` or ``top_p``, not both.

A family names its models by their id stems (``claude-opus-4-7``); each service writes its ids
its own way, so ``ClaudeFamily.rules`` turns a family into that service's ``ModelRules`` with
the service's pattern prefix and the sampling settings its wire has. Nothing here imports an
SDK.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

import attrs

from .capabilities import THINKING_KINDS, ModelRules

__all__ = ["CLAUDE_FAMILIES", "ClaudeFamily", "claude_family"]

_SAMPLING = frozenset({"temperature", "top_p", "top_k"})
_WHILE_THINKING = frozenset({"temperature", "top_k"})


def _stems(value: str | Iterable[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen
class ClaudeFamily:
    """One family of Claude models and what it takes, whichever service serves it.

    ``stems`` are the model ids' stems (``claude-opus-4-7``): a model belongs to the family
    when its id holds a stem after the service's prefix. ``thinking`` is how it thinks
    (``THINKING_KINDS``); ``adaptive``: a level is adaptive thinking with an effort;
    ``budget``: it takes manual thinking with a token budget. ``refuses``,
    ``refuses_while_thinking`` and ``exclusive`` are the sampling settings it does not take
    (as ``ModelRules`` has them), by their portable names.
    """

    name: str
    stems: tuple[str, ...] = attrs.field(converter=_stems)
    thinking: str = attrs.field(default="optional", validator=attrs.validators.in_(THINKING_KINDS))
    adaptive: bool = False
    budget: bool = True
    refuses: frozenset[str] = frozenset()
    refuses_while_thinking: frozenset[str] = frozenset()
    exclusive: tuple[str, ...] = ()

    @property
    def takes_disabled(self) -> bool:
        """Whether "off" may be sent as ``{"type": "disabled"}``: the families that may think
        and still take manual thinking (the adaptive-only ones refuse "disabled")."""
        return self.thinking == "optional" and self.budget

    def patterns(self, prefix: str = "") -> tuple[str, ...]:
        """The ``fnmatch`` patterns of the family's ids on a service whose ids start with
        ``prefix`` (``"*anthropic."`` on Bedrock)."""
        return tuple(f"{prefix}{stem}*" for stem in self.stems)

    def matches(self, model: str, prefix: str = "") -> bool:
        """Whether ``model`` belongs to the family on a service whose ids start with
        ``prefix``."""
        return any(fnmatch.fnmatchcase(model, p) for p in self.patterns(prefix))

    def rules(self, *, prefix: str = "", settings: Iterable[str], source: str) -> ModelRules:
        """The family as a provider's ``ModelRules``: its patterns under ``prefix``, and of the
        settings it refuses only those the provider's wire has (``settings``)."""
        wire = frozenset(settings)
        return ModelRules(
            self.patterns(prefix),
            thinking=self.thinking,
            budget=self.budget,
            refuses=self.refuses & wire,
            refuses_while_thinking=self.refuses_while_thinking & wire,
            exclusive=tuple(name for name in self.exclusive if name in wire),
            source=source,
        )


#: Claude's families, newest first; the first that matches a model applies, and a model none
#: matches is sent as asked.
CLAUDE_FAMILIES = (
    ClaudeFamily(
        "Claude Mythos",
        "claude-mythos-",
        thinking="always",
        adaptive=True,
        budget=False,
        refuses=_SAMPLING,
    ),
    ClaudeFamily(
        "Claude Opus 4.7 and later",
        (
            "claude-opus-4-7",
            "claude-opus-4-8",
            "claude-opus-5",
            "claude-sonnet-5",
            "claude-haiku-5",
            "claude-fable-5",
        ),
        adaptive=True,
        budget=False,
        refuses=_SAMPLING,
    ),
    ClaudeFamily(
        "Claude Opus 4.6 and Sonnet 4.6",
        ("claude-opus-4-6", "claude-sonnet-4-6"),
        adaptive=True,
        refuses_while_thinking=_WHILE_THINKING,
        exclusive=("temperature", "top_p"),
    ),
    ClaudeFamily(
        "Claude 4.5 and Opus 4.1",
        ("claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1"),
        refuses_while_thinking=_WHILE_THINKING,
        exclusive=("temperature", "top_p"),
    ),
    ClaudeFamily(
        "Claude 4",
        ("claude-opus-4-2", "claude-sonnet-4-2", "claude-opus-4-0", "claude-sonnet-4-0"),
        refuses_while_thinking=_WHILE_THINKING,
    ),
    ClaudeFamily("Claude 3.7 Sonnet", "claude-3-7-sonnet", refuses_while_thinking=_WHILE_THINKING),
    ClaudeFamily("Claude 3 and 3.5", "claude-3", thinking="never"),
)


def claude_family(model: str, prefix: str = "") -> ClaudeFamily | None:
    """The family ``model`` belongs to on a service whose ids start with ``prefix``, or
    None (not Claude, or a Claude model oma has no rule for)."""
    return next((f for f in CLAUDE_FAMILIES if f.matches(model, prefix)), None)
