"""The error tree: two families under ``OmaError``, one status vocabulary, and every error
crossing a process boundary (``pickle``) with its type, message and fields."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import oma_core
from oma_core import errors

EXAMPLES: list[Any] = [
    errors.InvalidMessageError("messages[0].content", "must be a list, got str"),
    errors.UnsupportedContentBlockError("Mistral", "video", "not supported in a user message"),
    errors.UnsupportedContentBlockError("Mistral", "video"),
    errors.PluginError("unknown provider 'x'", name="x"),
    errors.ToolError("two tools are named 'f'", tool="f"),
    errors.PlanError("a cycle"),
    errors.ProviderError(
        "rate limited", status_code=429, provider="Acme", retryable=None, retry_after=2.5
    ),
    errors.ProviderError("dropped", provider="Acme", retryable=True),
    errors.BackendError(
        "exited 3", backend="process", exit_code=3, signal=None, stderr_tail="boom", retryable=True
    ),
    errors.RunTimeoutError("call", 0.2),
    errors.RunTimeoutError("run", 5),
    errors.BudgetExceededError("tokens", 100, 120),
    errors.BudgetExceededError("the shared budget is spent"),
    errors.MaxTurnsExceededError(3),
    errors.HookError("AgentConfig.before_run raised ValueError: no", hook="AgentConfig.before_run"),
    errors.UsageError("called wrong"),
    errors.RunError("the run failed"),
    errors.OmaError("plain"),
]

ALL_CLASSES = {
    cls
    for cls in vars(errors).values()
    if isinstance(cls, type) and issubclass(cls, errors.OmaError)
}


def test_every_error_class_has_an_example_here() -> None:
    assert {type(e) for e in EXAMPLES} == ALL_CLASSES


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: f"{type(e).__name__}")
def test_every_error_round_trips_pickle_with_its_message_and_fields(error: Any) -> None:
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        copy = pickle.loads(pickle.dumps(error, protocol=protocol))
        assert type(copy) is type(error)
        assert str(copy) == str(error)
        assert copy.args == error.args
        assert vars(copy) == vars(error)
        assert copy.code == error.code and copy.retryable == error.retryable


def test_the_two_families_split_called_wrong_from_run_failed() -> None:
    called_wrong = {
        errors.InvalidMessageError,
        errors.UnsupportedContentBlockError,
        errors.PluginError,
        errors.ToolError,
        errors.PlanError,
    }
    run_failed = {
        errors.ProviderError,
        errors.BackendError,
        errors.RunTimeoutError,
        errors.BudgetExceededError,
        errors.MaxTurnsExceededError,
        errors.HookError,
    }
    assert all(issubclass(cls, errors.UsageError) for cls in called_wrong)
    assert all(issubclass(cls, errors.RunError) for cls in run_failed)
    assert not any(issubclass(cls, errors.RunError) for cls in called_wrong)
    bases = {errors.OmaError, errors.UsageError, errors.RunError}
    assert called_wrong | run_failed | bases == ALL_CLASSES


def test_invalid_message_error_is_still_a_value_error() -> None:
    assert issubclass(errors.InvalidMessageError, ValueError)


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: f"{type(e).__name__}")
def test_every_error_names_the_run_status_it_ends_a_run_with(error: Any) -> None:
    expected = {
        errors.RunTimeoutError: "timeout",
        errors.BudgetExceededError: "budget_exhausted",
    }.get(type(error), "error")
    assert error.status == expected


def test_the_families_are_exported() -> None:
    assert oma_core.UsageError is errors.UsageError
    assert oma_core.RunError is errors.RunError


def test_a_retryable_status_follows_the_core_policy() -> None:
    assert [errors.ProviderError("x", status_code=s).retryable for s in (408, 409, 429, 500)] == [
        True
    ] * 4
    assert [errors.ProviderError("x", status_code=s).retryable for s in (400, 401, 404)] == [
        False
    ] * 3
    assert errors.RunTimeoutError("call", 1).retryable
    assert not errors.RunTimeoutError("run", 1).retryable
