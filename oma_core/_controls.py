"""What the orchestrator plugs into one agent run (private; used by ``orchestrator``).

The entry points, on ``Agent``:

``agent._check_input(input) -> str | tuple[LLMMessage, ...]``
    Validates and copies ``input`` exactly as ``Agent.run`` does at its call site (a ``str``
    stays a ``str``; anything else goes through ``load_messages``, at least one message; a
    text-only backend refuses structured input with "accepts string prompts only"). Raises
    ``InvalidMessageError``; call it when ``run_agent`` is *called*.

``agent._start(checked_input, *, controls: RunControls, mode: "run" | "stream" = "run")``
    Takes what ``_check_input`` returned (no second validation or copy) and returns, without
    starting anything: for "run" a coroutine of ``RunResult``; for "stream" an ``AgentStream``
    (async iterator of ``StreamEvent`` and async context manager). Fresh run: no history read
    or written. ``controls.retry`` is used as given; ``Agent.run`` passes
    ``agent._retry_policy()`` (defaults overridden by the ``AgentConfig`` settings), so layer
    settings with ``RetryPolicy.override``: orchestrator defaults, then the config's
    (``agent._retry_policy(base)``), then the call's.

``agent._retry_policy(base: RetryPolicy | None = None) -> RetryPolicy``
    ``base`` (the defaults if None) overridden by the agent's ``max_retries``,
    ``retry_delay`` and ``retry_backoff`` where they are set.

Observer calls, in order, for a run: ``before_call`` / ``after_call`` around every attempt
(``on_retry`` before each wait), ``before_tool`` / ``after_tool`` around every tool call,
``on_run_end`` last. ``after_call`` gets ``partial_text=""`` on success.

How a run ends: a ``BudgetExceededError`` raised by an observer -> ``status.code``
"budget_exhausted" (usage so far kept); ``RunTimeoutError("run")`` (``controls.timeout``) or a
``RunTimeoutError("call")`` left after the retries -> "timeout"; any other failure -> "error".
``on_run_end`` is called once for every run that ends with a ``RunResult`` (not on outside
cancellation, which propagates ``CancelledError`` after the provider stream is closed);
an exception from ``on_run_end`` is swallowed. Other observer methods that raise something
other than ``BudgetExceededError`` fail the run (code "error").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from .retry import RetryPolicy

if TYPE_CHECKING:
    from .agent import RunResult
    from .messages import ToolResultBlock, ToolUseBlock
    from .providers import ProviderRequest, ProviderResponse, Usage

__all__ = ["RunControls", "RunObserver"]


class RunObserver:
    """No-op base; the orchestrator subclasses it for budgets, tracing and progress."""

    def before_call(self, request: ProviderRequest) -> ProviderRequest:
        """Before every attempt of a model call; may clamp ``max_tokens`` (``attrs.evolve``)
        or raise ``BudgetExceededError``."""
        return request

    def after_call(
        self,
        request: ProviderRequest,
        usage: Usage,
        *,
        error: BaseException | None,
        partial_text: str,
    ) -> None:
        """After every attempt, also failed or cut-short ones (``usage`` is then an estimate
        from ``partial_text``, zero when nothing arrived); may raise ``BudgetExceededError``."""

    def on_response(self, request: ProviderRequest, response: ProviderResponse) -> None:
        """After a successful attempt, just before ``after_call``, with the provider's response
        (tracing reads its ``stop_reason``)."""

    def on_retry(self, attempt: int, delay: float, error: BaseException) -> None:
        """Before waiting ``delay`` seconds for retry number ``attempt`` (1-based)."""

    def before_tool(self, call: ToolUseBlock) -> None:
        """Before a tool runs (also for unknown tools and invalid arguments)."""

    def after_tool(self, call: ToolUseBlock, result: ToolResultBlock) -> None:
        """After a tool ran, with the result the model will see."""

    def on_run_end(self, result: RunResult) -> None:
        """Once, with the final result of the run."""


@attrs.define
class RunControls:
    """What the orchestrator plugs into one run; Agent.run uses RunControls() defaults."""

    retry: RetryPolicy = attrs.field(factory=RetryPolicy)
    timeout: float | None = None
    call_timeout: float | None = None
    observers: tuple[RunObserver, ...] = ()
    run_id: str | None = None
