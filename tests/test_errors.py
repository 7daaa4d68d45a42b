"""The error classes: the tree (two families under ``OmaError``), their fields and messages,
one status vocabulary, and pickling of every class."""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import pytest
from _builders import text, user

import oma_core
from oma_core import (
    BudgetExceededError,
    InvalidMessageError,
    OmaError,
    ProviderError,
    UnsupportedContentBlockError,
    errors,
    load_messages,
)


def test_error_tree() -> None:
    for cls in (
        InvalidMessageError,
        UnsupportedContentBlockError,
        ProviderError,
        BudgetExceededError,
    ):
        assert issubclass(cls, OmaError)
    assert issubclass(OmaError, Exception)
    assert issubclass(InvalidMessageError, ValueError)


def test_invalid_message_error_is_a_value_error_with_code_and_path() -> None:
    with pytest.raises(ValueError) as info:
        load_messages([user(text(1))])
    err = info.value
    assert isinstance(err, InvalidMessageError)
    assert err.code == "INVALID_MESSAGE"
    assert err.retryable is False
    assert err.path.startswith("messages[0].content[0]")


def test_unsupported_content_block_error_message() -> None:
    err = UnsupportedContentBlockError(
        provider="Anthropic Messages", block_type="video", detail="no video mapping"
    )
    assert (
        str(err)
        == 'Anthropic Messages cannot represent the "video" content block: no video mapping'
    )
    assert err.code == "UNSUPPORTED_CONTENT_BLOCK"
    assert err.retryable is False
    assert (err.provider, err.block_type, err.detail) == (
        "Anthropic Messages",
        "video",
        "no video mapping",
    )


def test_unsupported_content_block_error_without_detail() -> None:
    err = UnsupportedContentBlockError(provider="Mistral", block_type="image")
    assert str(err) == 'Mistral cannot represent the "image" content block'
    assert err.detail is None


def test_unsupported_content_block_error_positional() -> None:
    err = UnsupportedContentBlockError("Google Gemini", "video")
    assert str(err) == 'Google Gemini cannot represent the "video" content block'


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529, 599])
def test_provider_error_statuses_that_are_retryable(status: int) -> None:
    err = ProviderError("boom", status_code=status, provider="openai")
    assert err.retryable is True
    assert err.status_code == status
    assert err.provider == "openai"
    assert err.code == "PROVIDER_ERROR"
    assert "boom" in str(err)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422, 499, 600, 200])
def test_provider_error_statuses_that_are_not_retryable(status: int) -> None:
    assert ProviderError("boom", status_code=status).retryable is False


def test_provider_error_defaults() -> None:
    err = ProviderError("boom")
    assert err.status_code is None
    assert err.provider is None
    assert err.retryable is False
    assert str(err) == "boom"


def test_explicit_retryable_wins_over_the_status() -> None:
    assert ProviderError("reset", retryable=True).retryable is True
    assert ProviderError("x", status_code=503, retryable=False).retryable is False
    assert ProviderError("x", status_code=400, retryable=True).retryable is True


def test_provider_error_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        ProviderError("boom", 500)  # type: ignore[misc]


def test_budget_exceeded_error() -> None:
    err = BudgetExceededError("token budget exhausted")
    assert err.code == "BUDGET_EXCEEDED"
    assert err.retryable is False
    assert isinstance(err, OmaError)
    assert str(err) == "token budget exhausted"


def test_budget_exceeded_error_with_figures_survives_pickling() -> None:
    import pickle

    err = pickle.loads(pickle.dumps(BudgetExceededError("tokens", 100, 120)))
    assert (err.kind, err.limit, err.used) == ("tokens", 100, 120)
    assert "120" in str(err) and "100" in str(err)


def test_errors_survive_pickling() -> None:
    import pickle

    with pytest.raises(InvalidMessageError) as info:
        load_messages([user(text(1))])
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.path, str(copy)) == (info.value.path, str(info.value))
    unsupported = pickle.loads(pickle.dumps(UnsupportedContentBlockError("Mistral", "video", "x")))
    assert str(unsupported) == 'Mistral cannot represent the "video" content block: x'
    provider = pickle.loads(pickle.dumps(ProviderError("boom", status_code=429, provider="p")))
    assert (provider.status_code, provider.provider, provider.retryable) == (429, "p", True)


def test_unsupported_content_block_error_empty_detail_has_no_colon() -> None:
    err = UnsupportedContentBlockError("LiteLLM bridge", "video", None)
    assert str(err).endswith("content block")


# -- the two families, every class pickled, one status vocabulary -------------------------------

EXAMPLES: list[Any] = [
    errors.InvalidMessageError("messages[0].content", "must be a list, got str"),
    errors.UnsupportedContentBlockError("Mistral", "video", "not supported in a user message"),
    errors.UnsupportedContentBlockError("Mistral", "video"),
    errors.PluginError("unknown provider 'x'", name="x"),
    errors.NotRegisteredError(
        "unknown provider 'antropic'",
        name="antropic",
        kind="provider",
        available=("echo",),
        suggestions=("anthropic",),
        distribution="oma-anthropic",
    ),
    errors.UnknownOptionError(
        "unknown provider_options", name="p", options=("timeot",), accepted=("timeout",)
    ),
    errors.OptionTypeError(
        "timeout must be float, not str", name="p", option="timeout", expected="float", got="str"
    ),
    errors.MissingKeyError("anthropic", ("ANTHROPIC_API_KEY",), display_name="Anthropic"),
    errors.MissingProviderError("claude-sonnet-4-6", "anthropic:claude-sonnet-4-6"),
    errors.MediaTooLargeError(
        "Anthropic Messages",
        "image",
        "messages[0].content[1] is too large",
        path="messages[0].content[1]",
        size=6,
        limit=5,
        scope="block",
        measure="base64",
    ),
    errors.ToolError("two tools are named 'f'", tool="f"),
    errors.PlanError("a cycle"),
    errors.OutputTypeError("<lambda>", "a function is not a type"),
    errors.OutputValidationError(["$.age must be integer, got string"], '{"age": "x"}'),
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
    errors.WorkerLostError("worker 3 died", executor="ray", worker="3"),
    errors.LeaseHeldError("run-1", "worker-2"),
    errors.UnknownRunError("run-1"),
    errors.CheckpointError("run-1", "its digest does not match"),
    errors.ResumeMissingError("run-1", "tool 'pay'"),
    errors.UnknownApprovalError("run-1", "call-1"),
    errors.ApprovalMismatchError("run-1", "call-1"),
    errors.ApprovalUnavailableError("pay", "call-1"),
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
        errors.NotRegisteredError,
        errors.UnknownOptionError,
        errors.OptionTypeError,
        errors.MissingKeyError,
        errors.MissingProviderError,
        errors.MediaTooLargeError,
        errors.ToolError,
        errors.PlanError,
        errors.OutputTypeError,
        errors.UnknownRunError,
        errors.CheckpointError,
        errors.ResumeMissingError,
        errors.UnknownApprovalError,
        errors.ApprovalMismatchError,
        errors.ApprovalUnavailableError,
    }
    run_failed = {
        errors.ProviderError,
        errors.BackendError,
        errors.RunTimeoutError,
        errors.BudgetExceededError,
        errors.MaxTurnsExceededError,
        errors.HookError,
        errors.WorkerLostError,
        errors.LeaseHeldError,
        errors.OutputValidationError,
    }
    assert all(issubclass(cls, errors.UsageError) for cls in called_wrong)
    assert all(issubclass(cls, errors.RunError) for cls in run_failed)
    assert not any(issubclass(cls, errors.RunError) for cls in called_wrong)
    bases = {errors.OmaError, errors.UsageError, errors.RunError}
    assert called_wrong | run_failed | bases == ALL_CLASSES


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: f"{type(e).__name__}")
def test_every_error_names_the_run_status_it_ends_a_run_with(error: Any) -> None:
    expected = {
        errors.RunTimeoutError: "timeout",
        errors.BudgetExceededError: "budget_exhausted",
    }.get(type(error), "error")
    assert error.status == expected


def test_the_families_are_exported() -> None:
    assert oma_core.errors.UsageError is errors.UsageError
    assert oma_core.errors.RunError is errors.RunError


def test_a_call_timeout_may_be_retried_and_a_run_timeout_may_not() -> None:
    assert errors.RunTimeoutError("call", 1).retryable
    assert not errors.RunTimeoutError("run", 1).retryable


def test_configuration_errors_are_caught_as_the_classes_they_refine() -> None:
    assert issubclass(errors.NotRegisteredError, errors.PluginError)
    assert issubclass(errors.UnknownOptionError, errors.PluginError)
    assert issubclass(errors.MediaTooLargeError, errors.UnsupportedContentBlockError)
    missing = errors.MissingKeyError("mistral", ("MISTRAL_API_KEY",))
    assert "MISTRAL_API_KEY" in str(missing) and missing.code == "MISSING_API_KEY"


# -- two constructor shapes, by where the message comes from -------------------------------------


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: f"{type(e).__name__}")
def test_every_error_takes_one_of_two_constructor_shapes(error: Any) -> None:
    """Free text: ``(message, *, fields)``; a message made from the fields: ``(fields...)``,
    positional in their documented order. Either way every field is kept as an attribute."""
    cls = type(error)
    if cls in (errors.OmaError, errors.UsageError, errors.RunError):
        return  # the bases take what Exception takes
    params = list(inspect.signature(cls).parameters.values())
    kinds = [p.kind for p in params]
    if params[0].name == "message":
        assert kinds[0] is inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert all(kind is inspect.Parameter.KEYWORD_ONLY for kind in kinds[1:]), cls
        fields = [p.name for p in params[1:] if p.name != "retryable"]
    else:
        assert all(kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for kind in kinds), cls
        fields = [p.name for p in params]
    assert all(hasattr(error, name) for name in fields), cls
