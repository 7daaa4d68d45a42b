"""What OpenAI's model families take: ``AgentConfig.thinking`` as a reasoning effort, and the
sampling settings reasoning models refuse.

Families are told apart by the model's name (a fine-tune, ``ft:gpt-4o:acme::id``, by the name
it was made from), as OpenAI's reasoning guide and models pages (read on 2026-12-06) give them:

- *reasoning*: the o-series (``o1``, ``o3``, ``o4-mini``, ...) and GPT-5 (``gpt-5``,
  ``gpt-5-mini``, ``gpt-5-nano``, ``gpt-5.1``, ``gpt-5.2``, ...; not the ``-chat`` models).
  They refuse ``temperature`` and ``top_p``, except GPT-5.1 and later at effort ``none``;
- *plain*: ``gpt-4*``, ``gpt-3.5*``, ``chatgpt-4o*``: they do not reason;
- anything else (a new name, another service's model): sent as asked, for the service to judge.

A setting a model refuses is left out with a one-line warning (sampling is a preference, not
the request's meaning); a thinking level a model cannot honour (reasoning asked of a plain
model, ``"off"`` of an o-series model, which always reasons) is refused locally, before any
request, with a non-retryable ``ProviderError`` naming the provider and the model.
"""

from __future__ import annotations

import logging
import re
from collections.abc import MutableMapping
from typing import Any

from oma_core import ProviderError
from oma_core.capabilities import ModelRules

__all__ = ["MODEL_RULES", "SAMPLING_FIELDS", "effort_for", "family", "leave_out_sampling"]

_log = logging.getLogger("oma.openai")

#: The body fields reasoning models refuse.
SAMPLING_FIELDS = ("temperature", "top_p")
#: A token budget is mapped to the effort whose range holds it (OpenAI takes no budget).
BUDGET_EFFORTS = ((4_096, "low"), (16_384, "medium"))

_SOURCE = "platform.openai.com/docs/guides/reasoning (2026-12-06)"
#: The families above as the core's ``ModelRules`` (``Capabilities.models``): what ``oma
#: plugins`` shows and what a run checks ``AgentConfig.thinking`` against before any request.
#: A token budget is taken (mapped to an effort); sampling is left out by ``leave_out_sampling``.
MODEL_RULES = (
    ModelRules(("gpt-5*-chat*", "ft:gpt-5*-chat*"), thinking="never", source=_SOURCE),
    ModelRules(("o[0-9]*", "ft:o[0-9]*"), thinking="always", refuses=SAMPLING_FIELDS,
               source=_SOURCE),
    ModelRules(("gpt-5.[0-9]*", "ft:gpt-5.[0-9]*"), refuses_while_thinking=SAMPLING_FIELDS,
               source=_SOURCE),
    ModelRules(("gpt-5", "gpt-5-*", "ft:gpt-5:*", "ft:gpt-5-*"), refuses=SAMPLING_FIELDS,
               source=_SOURCE),
    ModelRules(("gpt-4*", "gpt-3.5*", "chatgpt-4o*", "ft:gpt-4*", "ft:gpt-3.5*"),
               thinking="never", source=_SOURCE),
)  # fmt: skip

_O_SERIES = re.compile(r"o\d+(?:-|$)")
_GPT5_ORIGINAL = re.compile(r"gpt-5(?:-(?!chat)|$)")
_GPT5_LATER = re.compile(r"gpt-5\.\d+(?:-(?!chat)|$)")
_PLAIN = re.compile(r"(?:gpt-4|gpt-3\.5|chatgpt-4o)")


def family(model: str | None) -> str:
    """``"o-series"``, ``"gpt-5"`` (no effort ``none``), ``"gpt-5.x"`` (5.1 and later),
    ``"plain"`` or ``"unknown"``."""
    name = (model or "").lower()
    if name.startswith("ft:"):
        name = name[3:].split(":", 1)[0]
    if _O_SERIES.match(name):
        return "o-series"
    if _GPT5_LATER.match(name):
        return "gpt-5.x"
    if _GPT5_ORIGINAL.match(name):
        return "gpt-5"
    if _PLAIN.match(name):
        return "plain"
    return "unknown"


def reasons(model: str | None) -> bool:
    """Whether ``model`` is a reasoning model, or may be one (an unknown name)."""
    return family(model) != "plain"


def effort_for(thinking: str | int | None, model: str | None, display_name: str) -> str | None:
    """The ``reasoning.effort`` (``reasoning_effort`` on Chat Completions) for ``thinking``,
    or None to send none. An int budget maps to the effort whose range holds it: below
    4,096 tokens ``low``, below 16,384 ``medium``, else ``high``."""
    if thinking is None:
        return None
    kind = family(model)
    if isinstance(thinking, int):
        thinking = next((e for limit, e in BUDGET_EFFORTS if thinking < limit), "high")
    if thinking == "off":
        if kind == "plain":
            return None
        if kind == "o-series":
            raise _refused(display_name, model, 'always reasons: thinking="off" cannot be kept')
        if kind == "gpt-5":
            _log.warning(
                '%s: %s cannot switch reasoning off; thinking="off" is sent as effort "minimal"',
                display_name,
                model,
            )
            return "minimal"
        return "none"
    if kind == "plain":
        raise _refused(
            display_name, model, f"does not reason: thinking={thinking!r} cannot be kept"
        )
    return str(thinking)


def leave_out_sampling(
    body: MutableMapping[str, Any], model: str | None, effort: str | None, display_name: str
) -> None:
    """Remove from ``body`` the sampling fields ``model`` refuses at ``effort`` (None: the
    model's default, which is ``none`` on GPT-5.1 and later), each with a warning."""
    kind = family(model)
    if kind not in ("o-series", "gpt-5", "gpt-5.x"):
        return
    if kind == "gpt-5.x" and effort in (None, "none"):
        return
    for field in SAMPLING_FIELDS:
        if field in body:
            del body[field]
            _log.warning(
                "%s: %s refuses %s at reasoning effort %s; left out of the request",
                display_name,
                model,
                field,
                effort or "(default)",
            )


def _refused(display_name: str, model: str | None, why: str) -> ProviderError:
    return ProviderError(f"{display_name}: {model} {why}", provider=display_name, retryable=False)
