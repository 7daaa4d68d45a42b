"""The kit's shared suites (``oma_core.testing.suites``) leave out, never skip, the checks a
plugin's attributes say cannot apply, and importing the kit does not import pytest."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from oma_core.testing import FaultSuite, SpecSuite


def test_a_spec_without_a_required_key_leaves_out_the_missing_key_check() -> None:
    class Keyless(SpecSuite):
        requires_api_key = False

    class Keyed(SpecSuite):
        key_variables = ("SOME_API_KEY",)

    name = "test_a_missing_key_raises_when_the_run_starts_before_any_request"
    assert getattr(Keyless, name) is None
    assert callable(getattr(Keyed, name))


def test_a_provider_without_error_events_leaves_out_that_check_only() -> None:
    class NoErrorEvents(FaultSuite):
        stream_errors = ()

    assert (
        NoErrorEvents.test_an_error_event_mid_stream_keeps_its_status_and_the_text_before_it is None
    )
    assert callable(NoErrorEvents.test_a_stream_cut_mid_body_is_retryable_without_status)


def test_a_provider_without_a_cuttable_stream_leaves_out_every_stream_check() -> None:
    class NoStream(FaultSuite):
        server_sent_events = False
        stream_errors = (("overloaded", 529, True),)

    left_out = [
        "test_a_stream_cut_mid_body_is_retryable_without_status",
        "test_a_stream_ended_before_its_end_is_retryable",
        "test_an_error_event_mid_stream_keeps_its_status_and_the_text_before_it",
        "test_a_slow_stream_still_arrives_whole",
    ]
    assert all(getattr(NoStream, name) is None for name in left_out)
    assert callable(NoStream.test_a_redirect_is_refused_and_the_other_host_gets_nothing)


def test_importing_the_kit_imports_no_pytest_until_a_suite_is_used() -> None:
    code = (
        "import sys, oma_core.testing as t; before = 'pytest' in sys.modules; "
        "t.SpecSuite; print(before, 'pytest' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["False", "True"]


def test_the_output_checks_of_an_undeclared_mode_are_left_out() -> None:
    from oma_core.testing.conformance import ProviderConformance

    class WithHooks(ProviderConformance):  # a reader and scripted replies: nothing else missing
        def read_request(self, body: Any) -> Any:
            raise AssertionError("not run")

        def script_reply(self, server: Any, reply: Any) -> None:
            raise AssertionError("not run")

    class PromptedOnly(WithHooks):
        pass

    class ToolToo(WithHooks):
        output_modes = frozenset({"tool", "prompted"})

    for kit in (PromptedOnly, ToolToo):
        assert callable(kit.test_prompted_output_gets_one_corrective_turn)
        assert kit.test_native_output_comes_back_typed is None
        assert kit.test_native_output_schema_reaches_the_service is None
    assert PromptedOnly.test_tool_output_is_a_forced_tool is None
    assert callable(ToolToo.test_tool_output_is_a_forced_tool)
    assert callable(ToolToo.test_tool_output_fails_when_its_retries_are_spent)
