"""The conformance kit can fail: each of six mistakes a provider author makes, switched on in
the reference Kitchat provider (``tests/kit_reference.py``), makes the kit fail, alone.

Each run is the whole kit in a fresh interpreter (``OMA_KIT_SABOTAGE`` names the mistake),
and the test names the checks that must catch it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kit_reference import SABOTAGES

HERE = Path(__file__).resolve().parent

#: Which of the kit's checks must fail for each sabotage (others may fail too).
CAUGHT_BY = {
    "stream-status-as-malformed": "test_http_errors_map_to_provider_error",
    "404-retryable": "test_http_errors_map_to_provider_error",
    "tool-results-dropped": "test_requests_reach_the_service_as_sent",
    "sampling-ignored": "test_requests_reach_the_service_as_sent",
    "usage-swapped": "test_usage_is_mapped_as_the_service_counts_it",
    "error-events-ignored": "test_an_error_event_keeps_the_service_message",
}


def _run_kit(sabotage: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OMA_KIT_SABOTAGE"}
    if sabotage is not None:
        env["OMA_KIT_SABOTAGE"] = sabotage
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
        "-p", "no:xdist", "-rf", "--rootdir", str(HERE.parent), "-c", str(HERE.parent / "pyproject.toml"),
        # the slowest checks catch none of the six; leaving them out keeps each run short
        "-k", "not many_concurrent and not compression_bomb and not endless_event",
        str(HERE / "test_kit_reference.py"),
    ]  # fmt: skip
    return subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=HERE, timeout=600, check=False
    )


def _failed(out: str) -> set[str]:
    """The kit's checks that failed, by name (parameters dropped)."""
    return set(re.findall(r"^FAILED \S+::(test_\w+)", out, re.MULTILINE))


def test_every_sabotage_of_the_issue_is_listed() -> None:
    assert set(CAUGHT_BY) == set(SABOTAGES)


@pytest.mark.parametrize("sabotage", SABOTAGES)
def test_the_kit_alone_fails_a_sabotaged_provider(sabotage: str) -> None:
    out = _run_kit(sabotage)
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr
    assert out.returncode == 1, summary
    assert re.search(r"\d+ failed", summary), summary
    assert CAUGHT_BY[sabotage] in _failed(out.stdout), (summary, sorted(_failed(out.stdout)))


def test_the_kit_passes_the_reference_provider_unsabotaged() -> None:
    out = _run_kit(None)
    summary = out.stdout.strip().splitlines()[-1]
    assert out.returncode == 0, out.stdout[-3000:]
    assert "failed" not in summary and "skipped" not in summary, summary
