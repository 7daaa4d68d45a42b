"""Which messages from an agent count as JSON-RPC 2.0: the check before the acp package sees one."""

from __future__ import annotations

from typing import Any

import pytest
from acp_agent import MALFORMED
from hypothesis import given
from hypothesis import strategies as st
from oma_acp._transport import envelope_problem

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_IDS = st.none() | st.integers() | st.text()
_PARAMS = st.none() | st.dictionaries(st.text(), _JSON, max_size=3) | st.lists(_JSON, max_size=3)
_ERRORS = st.fixed_dictionaries(
    {"code": st.integers(), "message": st.text()}, optional={"data": _JSON}
)


@st.composite
def _valid(draw: st.DrawFn) -> dict[str, Any]:
    """A request, a notification, a result or an error response."""
    kind = draw(st.sampled_from(["request", "notification", "result", "error"]))
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind in ("request", "notification"):
        message["method"] = draw(st.text())
        if draw(st.booleans()):
            message["params"] = draw(_PARAMS)
        if kind == "request":
            message["id"] = draw(_IDS)
    elif kind == "result":
        message["id"] = draw(st.integers() | st.text())
        message["result"] = draw(_JSON)
    else:
        message["id"] = draw(_IDS)
        message["error"] = draw(_ERRORS)
    return message


@given(_valid())
def test_every_valid_request_notification_and_response_is_handed_on(
    message: dict[str, Any],
) -> None:
    assert envelope_problem(message) is None


@given(_valid(), st.booleans() | st.floats() | st.lists(st.integers(), min_size=1) | st.just({}))
def test_an_id_that_is_not_a_string_an_integer_or_null_is_refused(
    message: dict[str, Any], bad_id: Any
) -> None:
    message["id"] = bad_id
    assert envelope_problem(message) == "an id that is not a string, an integer or null"


@given(_valid(), _JSON.filter(lambda value: value != "2.0"))
def test_a_message_without_jsonrpc_2_0_is_refused(message: dict[str, Any], version: Any) -> None:
    message["jsonrpc"] = version
    assert envelope_problem(message) is not None
    del message["jsonrpc"]
    assert envelope_problem(message) is not None


@given(st.integers() | st.text(), _JSON, _ERRORS)
def test_a_response_needs_exactly_one_of_result_and_error(
    request_id: Any, result: Any, error: dict[str, Any]
) -> None:
    both = {"jsonrpc": "2.0", "id": request_id, "result": result, "error": error}
    neither = {"jsonrpc": "2.0", "id": request_id}
    for message in (both, neither):
        assert envelope_problem(message) == "a response without exactly one of result and error"


@given(_JSON.filter(lambda value: not isinstance(value, str)))
def test_a_method_that_is_not_a_string_is_refused(method: Any) -> None:
    for message in (
        {"jsonrpc": "2.0", "method": method},
        {"jsonrpc": "2.0", "id": 1, "method": method},
    ):
        assert envelope_problem(message) == "a method that is not a string"


@pytest.mark.parametrize("message", MALFORMED, ids=[str(m) for m in MALFORMED])
def test_each_message_the_test_agent_sends_as_malformed_is_refused(message: dict[str, Any]) -> None:
    assert envelope_problem(message) is not None
