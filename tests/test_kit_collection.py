"""What the conformance kit says at collection about the checks a kit class leaves out: a
check left out silently would look like a pass nobody ran."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import pytest

from oma_core.testing import NeutralRequest, ScriptedReply
from oma_core.testing.conformance import ProviderConformance


class _WithEveryHook(ProviderConformance):
    """A kit base with the mapping hooks (their absence warns on its own)."""

    def read_request(self, body: Mapping[str, Any]) -> NeutralRequest:
        raise NotImplementedError

    def script_reply(self, server: Any, reply: ScriptedReply) -> None:
        raise NotImplementedError


def test_tool_call_ids_never_says_which_check_it_leaves_out() -> None:
    with pytest.warns(UserWarning) as caught:

        class TestNoIds(_WithEveryHook):
            tool_call_ids = "never"

    [warning] = caught
    message = str(warning.message)
    assert "TestNoIds sets tool_call_ids = 'never'" in message
    assert "test_streaming_and_complete_give_the_same_tool_call" in message
    assert "left out" in message and "docs/testing-plugins.md" in message
    assert TestNoIds.test_streaming_and_complete_give_the_same_tool_call is None


@pytest.mark.parametrize("ids", ["always", "sometimes"])
def test_ids_the_wire_gives_leave_the_check_in_without_a_warning(ids: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        class TestIds(_WithEveryHook):
            tool_call_ids = ids

    assert TestIds.test_streaming_and_complete_give_the_same_tool_call is not None


def test_a_misspelt_tool_call_ids_is_refused_at_collection() -> None:
    with pytest.raises(ValueError, match=r"tool_call_ids = 'nevre': use 'always', 'sometimes'"):

        class TestMisspelt(_WithEveryHook):
            tool_call_ids = "nevre"
