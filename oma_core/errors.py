"""The exception tree: one class per failure a caller may want to catch.

```
OmaError                               code, retryable
├── InvalidMessageError (ValueError)   path: the first offending place in the input
├── UnsupportedContentBlockError       provider, block_type, detail: refused before any request
├── ProviderError                      status_code, provider, retry_after: a model call failed
├── BackendError                       backend, exit_code, signal: an external agent failed
├── BudgetExceededError                kind, limit, used: a token or cost cap was reached
├── RunTimeoutError                    timeout: oma's own run or call limit ran out
├── MaxTurnsExceededError              max_turns: the tool loop did not finish in time
├── HookError                          hook: a before_run hook raised or returned garbage
├── ToolError                          tool: a tool was misdefined (bad calls become tool results)
├── PluginError                        name: an unknown provider or backend, a plugin failed
└── PlanError                          reason: a team task plan cannot run
```

Messages never carry base64 payloads or credentials: they name places, not contents.
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "BudgetExceededError",
    "HookError",
    "InvalidMessageError",
    "MaxTurnsExceededError",
    "OmaError",
    "PlanError",
    "PluginError",
    "ProviderError",
    "RunTimeoutError",
    "ToolError",
    "UnsupportedContentBlockError",
]


class OmaError(Exception):
    """Base of every error oma raises on purpose.

    ``code`` is a stable machine-readable name; ``retryable`` says whether the core's retry
    ladder may try the failed model call again.
    """

    code: str = "OMA_ERROR"
    retryable: bool = False


class InvalidMessageError(OmaError, ValueError):
    """Structured input broke a rule; ``path`` names the first offending place.

    The message is ``f"{path} {reason}"``, e.g.
    ``messages[2].content[1].source.url must use HTTP or HTTPS``.
    """

    code = "INVALID_MESSAGE"

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path} {reason}" if path else reason)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.path, self.reason))


class UnsupportedContentBlockError(OmaError):
    """A provider cannot carry a block; raised locally, before any request is sent."""

    code = "UNSUPPORTED_CONTENT_BLOCK"

    def __init__(self, provider: str, block_type: str, detail: str | None = None) -> None:
        self.provider = provider
        self.block_type = block_type
        self.detail = detail
        message = f'{provider} cannot represent the "{block_type}" content block'
        if detail:
            message += f": {detail}"
        super().__init__(message)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.provider, self.block_type, self.detail))


def _retryable_status(status_code: int | None) -> bool:
    if status_code is None:
        return False
    return status_code in (408, 409, 429) or 500 <= status_code <= 599


class ProviderError(OmaError):
    """A model call failed at the provider (HTTP status, connection, malformed response).

    When ``retryable`` is None it follows from ``status_code``: 408, 409, 429 and 5xx are
    retryable, anything else is not. Plugins set it explicitly for failures without a status:
    connection faults and timeouts are retryable, a malformed response is not.
    ``retry_after`` is the server's requested delay in seconds, when it sent a sane one.
    """

    code = "PROVIDER_ERROR"

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        provider: str | None = None,
        retryable: bool | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.message = message
        self.status_code = status_code
        self.provider = provider
        self.retryable = _retryable_status(status_code) if retryable is None else retryable
        self.retry_after = retry_after
        super().__init__(message)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_provider_error, (self.message, self.__dict__.copy()))


def _rebuild_provider_error(message: str, state: dict[str, object]) -> ProviderError:
    err = ProviderError(message)
    err.__dict__.update(state)
    return err


class BackendError(OmaError):
    """An external agent backend (a subprocess, an ACP agent) failed.

    ``exit_code`` or ``signal`` say how a process ended; ``stderr_tail`` is a bounded,
    redacted tail of what it wrote to stderr.
    """

    code = "BACKEND_ERROR"

    def __init__(
        self,
        message: str,
        *,
        backend: str | None = None,
        exit_code: int | None = None,
        signal: int | None = None,
        stderr_tail: str | None = None,
        retryable: bool = False,
    ) -> None:
        self.backend = backend
        self.exit_code = exit_code
        self.signal = signal
        self.stderr_tail = stderr_tail
        self.retryable = retryable
        super().__init__(message)


class BudgetExceededError(OmaError):
    """A token or cost budget ran out; ``kind`` is "tokens" or "cost"."""

    code = "BUDGET_EXCEEDED"

    def __init__(self, kind: str, limit: float | None = None, used: float | None = None) -> None:
        self.kind = kind
        self.limit = limit
        self.used = used
        if limit is None or used is None:
            # BudgetExceededError("a message"), like any other exception.
            super().__init__(kind)
        else:
            super().__init__(f"{kind} budget exceeded: used {used:g} of {limit:g}")

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.kind, self.limit, self.used))


class RunTimeoutError(OmaError):
    """oma's own limit ran out: ``scope`` is "run" (``timeout``) or "call" (``call_timeout``)."""

    code = "TIMEOUT"

    def __init__(self, scope: str, timeout: float) -> None:
        self.scope = scope
        self.timeout = timeout
        # A per-call timeout is a transient fault the retry ladder may try again.
        self.retryable = scope == "call"
        super().__init__(f"{scope} timed out after {timeout:g} s")


class MaxTurnsExceededError(OmaError):
    """The tool loop reached ``max_turns`` model calls without a final answer."""

    code = "MAX_TURNS_EXCEEDED"

    def __init__(self, max_turns: int) -> None:
        self.max_turns = max_turns
        super().__init__(f"the agent reached max_turns={max_turns} without a final answer")


class HookError(OmaError):
    """A ``before_run`` hook raised, or returned something that is not a valid rewrite."""

    code = "HOOK_ERROR"

    def __init__(self, message: str, *, hook: str | None = None) -> None:
        self.hook = hook
        super().__init__(message)


class ToolError(OmaError):
    """A tool is misdefined (a bad signature, a duplicate name)."""

    code = "TOOL_ERROR"

    def __init__(self, message: str, *, tool: str | None = None) -> None:
        self.tool = tool
        super().__init__(message)


class PluginError(OmaError):
    """A provider or backend is unknown, or the plugin that supplies it failed to load."""

    code = "PLUGIN_ERROR"

    def __init__(self, message: str, *, name: str | None = None) -> None:
        self.name = name
        super().__init__(message)


class PlanError(OmaError):
    """A team's coordinator, or a caller, gave a task plan that cannot run.

    ``reason`` says what is wrong: invalid JSON, an unknown assignee or dependency, a cycle.
    """

    code = "INVALID_PLAN"

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"invalid task plan: {reason}")
