"""The exception tree: one class per failure a caller may want to catch.

```
OmaError                                   code, retryable, status
├── UsageError: oma was called wrong; nothing was sent
│   ├── InvalidMessageError (ValueError)   path, reason: the first offending place in the input
│   ├── UnsupportedContentBlockError       provider, block_type, detail: refused before any request
│   │   └── MediaTooLargeError             path, size, limit, scope: past a documented size limit
│   ├── PluginError                        name: an unknown provider or backend, a plugin failed
│   │   ├── NotRegisteredError             kind, suggestions, distribution: no such provider/backend
│   │   ├── UnknownOptionError             options, accepted, suggestions: a provider_options typo
│   │   └── OptionTypeError                option, expected, got: a provider_options value's type
│   ├── MissingKeyError                    provider, variables, host: a needed key is missing
│   ├── MissingProviderError               model, suggestion: a bare model names no provider
│   ├── ToolError                          tool: a tool was misdefined (bad calls become results)
│   ├── OutputTypeError (TypeError)        output_type, reason: an output type with no JSON schema
│   ├── PlanError                          reason: a team task plan cannot run
│   ├── UnknownRunError                    run_id: no durable run is stored under that id
│   ├── CheckpointError                    run_id, reason: a checkpoint fails its checks
│   ├── ResumeMissingError                 run_id, missing: what resume must be given again
│   ├── UnknownApprovalError               run_id, call_id: a decision for no pending call
│   ├── ApprovalMismatchError              run_id, call_id: the call changed since review
│   └── ApprovalUnavailableError           tool, call_id: an approval needs a run store
└── RunError: the run started and failed
    ├── ProviderError                      status_code, provider, retry_after: a model call failed
    ├── BackendError                       backend, exit_code, signal: an external agent failed
    ├── RunTimeoutError                    scope, timeout: oma's own run or call limit ran out
    ├── BudgetExceededError                kind, limit, used: a token or cost cap was reached
    ├── MaxTurnsExceededError              max_turns: the tool loop did not finish in time
    ├── HookError                          hook: a before_run hook raised or returned garbage
    ├── OutputValidationError              errors, text: the reply never became the output type
    ├── WorkerLostError                    executor, worker: the process running a task died
    └── LeaseHeldError                     run_id, owner: another worker is resuming the run
```

Constructors take one of two shapes, by where the message comes from: free text is
``(message, *, fields)`` (``PluginError``, ``ToolError``, ``ProviderError``, ``BackendError``,
``HookError``); a message made from the fields takes the fields alone, positional in the order
above (``InvalidMessageError(path, reason)``, ``RunTimeoutError("call", 0.2)``, ...). Every
error keeps its fields as attributes and survives ``pickle`` (also across processes)
with its type, message and fields. ``status`` is the ``RunStatus.code`` a run that ends with
the error gets: "timeout", "budget_exhausted", or "error" for everything else, so there is one
status vocabulary. Messages never carry base64 payloads or credentials: they name places, not
contents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

__all__ = [
    "ApprovalMismatchError",
    "ApprovalUnavailableError",
    "BackendError",
    "BudgetExceededError",
    "CheckpointError",
    "HookError",
    "InvalidMessageError",
    "LeaseHeldError",
    "MaxTurnsExceededError",
    "MediaTooLargeError",
    "MissingKeyError",
    "MissingProviderError",
    "NotRegisteredError",
    "OmaError",
    "OptionTypeError",
    "OutputTypeError",
    "OutputValidationError",
    "PlanError",
    "PluginError",
    "ProviderError",
    "ResumeMissingError",
    "RunError",
    "RunTimeoutError",
    "ToolError",
    "UnknownApprovalError",
    "UnknownOptionError",
    "UnknownRunError",
    "UnsupportedContentBlockError",
    "UsageError",
    "WorkerLostError",
]


def _restore(cls: type[OmaError], args: tuple[Any, ...], state: dict[str, Any]) -> OmaError:
    """Rebuild a pickled error without calling its constructor (whose shape varies)."""
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class OmaError(Exception):
    """Base of every error oma raises on purpose.

    ``code`` is a stable machine-readable name; ``retryable`` says whether the core's retry
    ladder may try the failed model call again; ``status`` is the run status it ends a run
    with.
    """

    code: ClassVar[str] = "OMA_ERROR"
    status: ClassVar[str] = "error"
    retryable: bool = False

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.args, dict(self.__dict__)))


class UsageError(OmaError):
    """oma was called wrong (bad input, configuration, plugin, tool or plan): fix the call.

    Raised before anything is sent; retrying the same call fails the same way.
    """

    code = "USAGE_ERROR"


class RunError(OmaError):
    """A run started and failed: a provider, backend, limit or hook ended it."""

    code = "RUN_ERROR"


# -- called wrong ------------------------------------------------------------------------------


class InvalidMessageError(UsageError, ValueError):
    """Structured input broke a rule; ``path`` names the first offending place.

    The message is ``f"{path} {reason}"``, e.g.
    ``messages[2].content[1].source.url must use HTTP or HTTPS``.
    """

    code = "INVALID_MESSAGE"

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path} {reason}" if path else reason)


class UnsupportedContentBlockError(UsageError):
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


class PluginError(UsageError):
    """A provider or backend is unknown, or the plugin that supplies it failed to load."""

    code = "PLUGIN_ERROR"

    def __init__(self, message: str, *, name: str | None = None) -> None:
        self.name = name
        super().__init__(message)


class MediaTooLargeError(UnsupportedContentBlockError):
    """A media block, or a request's media together, is past a size limit the provider
    documents; refused locally, before any upload.

    ``path`` names the block (``messages[1].content[0]``); ``size`` and ``limit`` are bytes,
    counted as ``measure`` says ("decoded": the file's bytes, "base64": the characters sent);
    ``scope`` is "block" (one block's limit) or "request" (the sum crossed it at ``path``).
    """

    code = "MEDIA_TOO_LARGE"

    def __init__(
        self,
        provider: str,
        block_type: str,
        detail: str,
        path: str,
        size: int,
        limit: int,
        scope: str,
        measure: str = "decoded",
    ) -> None:
        self.path = path
        self.size = size
        self.limit = limit
        self.scope = scope
        self.measure = measure
        super().__init__(provider, block_type, detail)


class NotRegisteredError(PluginError):
    """No provider (or backend kind) of that name is registered.

    ``kind`` is "provider" or "backend"; ``available`` the registered names; ``suggestions``
    the close ones (did you mean); ``distribution`` the package that provides the name when
    oma knows one (``oma-anthropic``), so the message can say what to install.
    """

    code = "NOT_REGISTERED"

    def __init__(
        self,
        message: str,
        *,
        name: str,
        kind: str = "provider",
        available: Sequence[str] = (),
        suggestions: Sequence[str] = (),
        distribution: str | None = None,
    ) -> None:
        self.kind = kind
        self.available = tuple(available)
        self.suggestions = tuple(suggestions)
        self.distribution = distribution
        super().__init__(message, name=name)


class UnknownOptionError(PluginError):
    """``provider_options`` holds names the provider does not accept (declared in its
    ``ProviderSpec.provider_options``); ``name`` is the provider."""

    code = "UNKNOWN_OPTION"

    def __init__(
        self,
        message: str,
        *,
        name: str,
        options: Sequence[str],
        accepted: Sequence[str] = (),
        suggestions: Sequence[str] = (),
    ) -> None:
        self.options = tuple(options)
        self.accepted = tuple(accepted)
        self.suggestions = tuple(suggestions)
        super().__init__(message, name=name)


class OptionTypeError(PluginError):
    """A ``provider_options`` value is not of the type the provider declares for it
    (``ProviderSpec.provider_options``); ``name`` is the provider, ``option`` the option,
    ``expected`` the declared type's name and ``got`` the given value's type name."""

    code = "OPTION_TYPE"

    def __init__(self, message: str, *, name: str, option: str, expected: str, got: str) -> None:
        self.option = option
        self.expected = expected
        self.got = got
        super().__init__(message, name=name)


class MissingKeyError(UsageError):
    """A provider that needs an API key has none: not in ``AgentConfig.api_key`` nor in any
    of ``variables`` (the environment variables it reads). Raised when the run starts, before
    any request; the message says where a key comes from and never holds one. ``host`` is
    the origin (``scheme://host[:port]``) of a base URL other than the provider's own: a key
    for it is stored with ``oma keys set PROVIDER --base-url HOST``."""

    code = "MISSING_API_KEY"

    def __init__(
        self,
        provider: str,
        variables: Sequence[str] = (),
        display_name: str | None = None,
        host: str | None = None,
    ) -> None:
        self.provider = provider
        self.variables = tuple(variables)
        self.display_name = display_name
        self.host = host
        shown = display_name or provider
        where = " or ".join(self.variables)
        env = f"set {where} in the environment, " if where else ""
        super().__init__(
            f"{shown} needs an API key and has none: {env}store one with "
            f"`{self.store_command}`, or pass AgentConfig.api_key"
        )

    @property
    def store_command(self) -> str:
        """The ``oma keys set`` command that stores a key this run would use."""
        at = f" --base-url {self.host}" if self.host else ""
        return f"oma keys set {self.provider}{at}"


class MissingProviderError(UsageError):
    """A model was given without a provider (no ``provider:`` prefix, no provider named);
    ``suggestion`` is the ``provider:model`` spelling to use when oma can guess it."""

    code = "MISSING_PROVIDER"

    def __init__(self, model: str, suggestion: str | None = None) -> None:
        self.model = model
        self.suggestion = suggestion
        example = suggestion or f"PROVIDER:{model}"
        super().__init__(
            f"the model {model!r} names no provider: write it as {example!r} or name the "
            "provider (-p PROVIDER, AgentConfig.provider); `oma plugins` lists the providers"
        )


class ToolError(UsageError):
    """A tool is misdefined (a bad signature, a duplicate name)."""

    code = "TOOL_ERROR"

    def __init__(self, message: str, *, tool: str | None = None) -> None:
        self.tool = tool
        super().__init__(message)


class OutputTypeError(UsageError, TypeError):
    """An ``output_type`` that cannot become a JSON schema (a function, an open
    ``dict[str, Any]``, a JSON Schema dict using an unsupported keyword), refused when the
    ``AgentConfig`` (or ``RunSettings``) is built. ``output_type`` names the type (a string,
    so the error pickles whatever the type was); ``reason`` says why."""

    code = "INVALID_OUTPUT_TYPE"

    def __init__(self, output_type: str, reason: str) -> None:
        self.output_type = output_type
        self.reason = reason
        super().__init__(f"output_type {output_type} cannot be used: {reason}")


class PlanError(UsageError):
    """A team's coordinator, or a caller, gave a task plan that cannot run.

    ``reason`` says what is wrong: invalid JSON, an unknown assignee or dependency, a cycle.
    """

    code = "INVALID_PLAN"

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"invalid task plan: {reason}")


# -- durable runs ------------------------------------------------------------------------------


class UnknownRunError(UsageError):
    """``resume`` (or a decision) names a run the store does not hold."""

    code = "UNKNOWN_RUN"

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no durable run {run_id!r} in the run store")


class CheckpointError(UsageError):
    """A stored checkpoint fails its checks: written by another checkpoint version, or changed
    since it was written (its digest does not match). Nothing of the run is resumed."""

    code = "BAD_CHECKPOINT"

    def __init__(self, run_id: str, reason: str) -> None:
        self.run_id = run_id
        self.reason = reason
        super().__init__(f"the checkpoint of run {run_id!r} cannot be resumed: {reason}")


class ResumeMissingError(UsageError):
    """A resume lacks what a checkpoint cannot hold (a tool, a provider object, an output type,
    a team): ``missing`` names it; pass it again to ``resume`` (``config=``/``team=``)."""

    code = "RESUME_MISSING"

    def __init__(self, run_id: str, missing: str) -> None:
        self.run_id = run_id
        self.missing = missing
        super().__init__(
            f"run {run_id!r} cannot be resumed without {missing}: pass it again to resume()"
        )


class UnknownApprovalError(UsageError):
    """A decision names a call that no pending approval request of the run has."""

    code = "UNKNOWN_APPROVAL"

    def __init__(self, run_id: str, call_id: str) -> None:
        self.run_id = run_id
        self.call_id = call_id
        super().__init__(f"run {run_id!r} waits for no approval of call {call_id!r}")


class ApprovalMismatchError(UsageError):
    """The call a decision was made for is not the call about to run (its tool, arguments or
    ids changed since it was reviewed): the run fails closed, nothing runs."""

    code = "APPROVAL_MISMATCH"

    def __init__(self, run_id: str, call_id: str) -> None:
        self.run_id = run_id
        self.call_id = call_id
        super().__init__(
            f"the decision on call {call_id!r} of run {run_id!r} was made for another call "
            "(its tool or arguments changed since it was reviewed); nothing was run"
        )


class ApprovalUnavailableError(UsageError):
    """A tool call needs approval but the run has no run store to wait in: nothing ran. Run it
    through ``OpenMultiAgent(store=...)`` (``"memory"`` keeps it in this process)."""

    code = "APPROVAL_UNAVAILABLE"

    def __init__(self, tool: str, call_id: str) -> None:
        self.tool = tool
        self.call_id = call_id
        super().__init__(
            f"tool {tool!r} (call {call_id!r}) needs approval, and approvals need a run store "
            "to wait in: run it with OpenMultiAgent(store=...)"
        )


# -- the run failed ----------------------------------------------------------------------------


def _retryable_status(status_code: int | None) -> bool:
    if status_code is None:
        return False
    return status_code in (408, 409, 429) or 500 <= status_code <= 599


class ProviderError(RunError):
    """A model call failed at the provider (HTTP status, connection, malformed response).

    When ``retryable`` is None it follows from ``status_code``: 408, 409, 429 and 5xx are
    retryable, anything else is not. Plugins set it explicitly for failures without a status:
    connection faults, timeouts and replies that cannot be decoded are retryable.
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


class BackendError(RunError):
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


class RunTimeoutError(RunError):
    """oma's own limit ran out: ``scope`` is "run" (``timeout``) or "call" (``call_timeout``).

    A call that timed out may be retried (a transient fault); a run that timed out is over.
    """

    code = "TIMEOUT"
    status = "timeout"

    def __init__(self, scope: str, timeout: float) -> None:
        self.scope = scope
        self.timeout = timeout
        self.retryable = scope == "call"
        super().__init__(f"{scope} timed out after {timeout:g} s")


class BudgetExceededError(RunError):
    """A token or cost budget ran out; ``kind`` is "tokens" or "cost".

    ``BudgetExceededError("tokens", limit, used)`` says how far; ``BudgetExceededError("a
    message")`` is accepted too, like any other exception.
    """

    code = "BUDGET_EXCEEDED"
    status = "budget_exhausted"

    def __init__(self, kind: str, limit: float | None = None, used: float | None = None) -> None:
        self.kind = kind
        self.limit = limit
        self.used = used
        if limit is None or used is None:
            super().__init__(kind)
        else:
            super().__init__(f"{kind} budget exceeded: used {used:g} of {limit:g}")


class MaxTurnsExceededError(RunError):
    """The tool loop reached ``max_turns`` model calls without a final answer."""

    code = "MAX_TURNS_EXCEEDED"

    def __init__(self, max_turns: int) -> None:
        self.max_turns = max_turns
        super().__init__(f"the agent reached max_turns={max_turns} without a final answer")


class HookError(RunError):
    """A ``before_run`` hook raised, or returned something that is not a valid rewrite."""

    code = "HOOK_ERROR"

    def __init__(self, message: str, *, hook: str | None = None) -> None:
        self.hook = hook
        super().__init__(message)


class OutputValidationError(RunError):
    """The model's reply did not validate against the run's ``output_type`` after the
    ``output_retries`` corrective turns (or was cut at ``max_tokens`` or refused).

    ``errors``: what was wrong with the last reply, a tuple of lines (places and reasons);
    ``text``: that reply's raw text. The message names the first error only: never the prompt
    or its media.
    """

    code = "OUTPUT_VALIDATION_FAILED"

    def __init__(self, errors: Sequence[str], text: str) -> None:
        self.errors = tuple(errors)
        self.text = text
        first = self.errors[0] if self.errors else "no output"
        if len(first) > 200:
            first = first[:197] + "..."
        more = len(self.errors) - 1
        extra = f" (and {more} more)" if more > 0 else ""
        super().__init__(f"the reply is not valid structured output: {first}{extra}")


class WorkerLostError(RunError):
    """The process running a task's agent run died (killed, out of memory) before it finished.

    Retryable: a task retried under ``TaskSpec.max_retries`` runs again on another worker.
    ``executor`` names the executor; ``worker`` identifies the lost worker where known.
    """

    code = "WORKER_LOST"
    retryable = True

    def __init__(self, message: str, *, executor: str, worker: str | None = None) -> None:
        super().__init__(message)
        self.executor = executor
        self.worker = worker


class LeaseHeldError(RunError):
    """Another worker holds the lease on a durable run: it is resuming that run now.

    ``run_id`` names the run; ``owner`` the worker holding it (as the store recorded it).
    """

    code = "LEASE_HELD"

    def __init__(self, run_id: str, owner: str) -> None:
        super().__init__(f"run {run_id!r} is being resumed by another worker ({owner})")
        self.run_id = run_id
        self.owner = owner
