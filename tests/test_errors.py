"""The error classes: the tree, their fields and messages, and pickling."""

from __future__ import annotations

import pytest
from _builders import text, user

from oma_core import (
    BudgetExceededError,
    InvalidMessageError,
    OmaError,
    ProviderError,
    UnsupportedContentBlockError,
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
