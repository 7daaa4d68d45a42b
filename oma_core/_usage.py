"""What one model call cost: the one place that reads a provider's usage counts.

``reported_usage`` is what a run's ``RunResult.usage`` adds up (bad counts as 0);
``charged_usage`` is what budgets charge (bad or missing counts replaced by an estimate, so bad
reporting never switches a budget off; a call refused before any work, or answered with an HTTP
error status before any output — 4xx or 5xx, which providers do not bill — costs nothing,
which is also what the run reports for it).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .errors import BudgetExceededError, UsageError
from .providers import Usage

if TYPE_CHECKING:
    from .providers import ProviderRequest

__all__ = ["charged_usage", "estimate_request_tokens", "reported_usage"]


def estimate_request_tokens(request: ProviderRequest) -> int:
    """A rough input-token count of ``request``: ``estimate_tokens`` of its messages plus
    characters / 4 of its system prompt; at least 1."""
    from ._tokens import estimate_tokens

    system = request.system_prompt or ""
    return max(1, estimate_tokens(request.messages) + math.ceil(len(system) / 4))


def _refused(error: BaseException) -> bool:
    """Whether ``error`` proves the call was not billed: it never left oma, or the service
    answered it with an HTTP error status — a client error (400, 401, 413, 429, ...) or a
    server error (500, 503, 529, ...). Providers bill a call that answers; an error status is
    not an answer (Anthropic and OpenAI bill neither), so it costs nothing, as the run
    reports. A call whose outcome is unknown (a timeout, a dropped connection) is not proven
    unbilled."""
    if isinstance(error, UsageError | BudgetExceededError):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and not isinstance(status, bool) and 400 <= status < 600


def _count(value: object) -> int | None:
    if type(value) is int:  # the common case, first
        return value if value >= 0 else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return int(value)


def reported_usage(usage: object) -> Usage:
    """The usage a provider reported, with missing, negative or non-numeric counts as 0.

    What a run's ``RunResult.usage`` adds up; budgets charge ``charged_usage`` instead.
    """
    input_tokens = _count(getattr(usage, "input_tokens", None)) or 0
    output_tokens = _count(getattr(usage, "output_tokens", None)) or 0
    parts = _parts(usage)
    if type(usage) is Usage and (input_tokens, output_tokens, *parts) == (
        usage.input_tokens,
        usage.output_tokens,
        *(getattr(usage, name, None) for name in _PARTS),
    ):
        return usage  # sane already: no new object
    return Usage(input_tokens, output_tokens, *parts)


#: The counts that are parts of the input or the output (0 when not reported).
_PARTS = ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


def _parts(usage: object) -> tuple[int, int, int]:
    """The cache-read, cache-write and reasoning counts of ``usage``, bad ones as 0."""
    read, write, reasoning = (_count(getattr(usage, name, 0)) or 0 for name in _PARTS)
    return read, write, reasoning


def charged_usage(
    request: ProviderRequest,
    usage: object,
    *,
    arrived: int = 0,
    error: BaseException | None = None,
) -> Usage:
    """What one call is charged: the reported counts where they are sane, an estimate where
    they are not (the request's input; a quarter of the ``arrived`` characters of output).

    A call that failed is charged that estimate unless ``error`` proves it did no work.
    """
    input_tokens = _count(getattr(usage, "input_tokens", None))
    output_tokens = _count(getattr(usage, "output_tokens", None))
    if error is not None and not arrived and _refused(error):
        return Usage(0, 0)  # refused before any work (e.g. a 429): nothing to charge
    if not input_tokens and not output_tokens:
        input_tokens = output_tokens = None  # nothing reported for work that was (maybe) done
    if input_tokens is None:
        input_tokens = estimate_request_tokens(request)
    estimate = math.ceil(arrived / 4)
    if output_tokens is None or output_tokens < estimate:
        output_tokens = estimate
    return Usage(input_tokens, output_tokens, *_parts(usage))
