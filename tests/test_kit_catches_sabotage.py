"""The conformance kit can fail: each of the six mistakes of issue 22, the two of structured
output of issue 23 (a declared native mode that drops the schema; an output tool sent without
forcing the choice), a wire reader blind to the output schema, and the two of issue 30 (the
second image of a turn dropped; a turn's images reordered; a failure said in the stream's
final event read as an answer), switched on in the reference
Kitchat provider (``tests/kit_reference.py``), makes the kit's checks fail.

One subprocess runs the kit's checks once per sabotage (``tests/kit_sabotaged.py``: the same
kit class with ``OMA_KIT_SABOTAGE`` set per test); each test below reads which checks failed
for its sabotage. The kit passing the unsabotaged provider is ``tests/test_kit_reference.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from kit_reference import SABOTAGES

HERE = Path(__file__).resolve().parent

#: Which of the kit's checks must fail for each sabotage.
CAUGHT_BY = {
    "stream-status-as-malformed": "test_http_errors_map_to_provider_error",
    "404-retryable": "test_http_errors_map_to_provider_error",
    "tool-results-dropped": "test_requests_reach_the_service_as_sent",
    "sampling-ignored": "test_requests_reach_the_service_as_sent",
    "usage-swapped": "test_usage_is_mapped_as_the_service_counts_it",
    "error-events-ignored": "test_an_error_event_keeps_the_service_message",
    "native-schema-dropped": "test_native_output_schema_reaches_the_service",
    "output-tool-not-forced": "test_tool_output_is_a_forced_tool",
    # the reader is held to render: a reader blind to the schema cannot pass a correct provider
    "reader-ignores-format": "test_native_output_schema_reaches_the_service",
    # issue 30: only a turn with several images shows either
    "second-image-dropped": "test_several_blocks_of_a_type_arrive_all_and_in_order",
    "images-reordered": "test_several_blocks_of_a_type_arrive_all_and_in_order",
    # issue 30: a failure said in the final event, read as a (short) answer
    "final-event-error-ignored": "test_an_error_in_the_final_event_fails_the_stream",
}
#: The sabotages no one-block check catches: the kit passed them before it sent several
#: blocks of a type in one turn.
ONLY_CAUGHT_IN_CROWDS = ("second-image-dropped", "images-reordered")
#: The kit's mapping and error checks; the rest of the kit (faults, bounds, concurrency)
#: takes minutes per run and is proven on the unsabotaged provider.
CHECKS = (
    "http_errors_map or requests_reach or reader_reads or results_of_streamed or usage "
    "or stop_reasons or tool_choice or error_event or output_schema_reaches "
    "or output_is_a_forced_tool or output_is_instructions or several_blocks or final_event"
)
#: The one-block checks of each declared block, run on the sabotages only crowds should catch.
ONE_BLOCK_CHECKS = "declared_blocks or render_is_what"


def _failed_checks(checks: str, sabotages: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """Per sabotage, the names of the ``checks`` (a ``-k`` expression) that failed."""
    env = {k: v for k, v in os.environ.items() if k != "OMA_KIT_SABOTAGE"}
    env["OMA_KIT_SABOTAGES"] = ",".join(sabotages)
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
        "-p", "no:xdist", "-rf", "--tb=no", "-k", checks, str(HERE / "kit_sabotaged.py"),
    ]  # fmt: skip
    # a generous bound: minutes on a loaded machine, never approached by a passing run
    out = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=HERE, timeout=1800, check=False
    )
    found: dict[str, set[str]] = defaultdict(set)
    for check, params in re.findall(r"^FAILED \S+::(test_\w+)\[([^\]]*)\]", out.stdout, re.M):
        sabotage = next((s for s in SABOTAGES if s in params), None)
        assert sabotage is not None, params
        found[sabotage].add(check)
    assert re.search(r"\d+ passed", out.stdout), out.stdout[-3000:] + out.stderr[-2000:]
    return found


@pytest.fixture(scope="module")
def failures() -> dict[str, set[str]]:
    """Per sabotage, the names of the kit's checks that failed."""
    return _failed_checks(CHECKS)


@pytest.fixture(scope="module")
def one_block_failures() -> dict[str, set[str]]:
    """The one-block checks of every declared block, on the sabotages only crowds catch."""
    return _failed_checks(ONE_BLOCK_CHECKS, ONLY_CAUGHT_IN_CROWDS)


def test_every_sabotage_of_the_issue_is_tried() -> None:
    assert set(CAUGHT_BY) == set(SABOTAGES) and len(SABOTAGES) == 12


@pytest.mark.parametrize("sabotage", SABOTAGES)
def test_the_kit_fails_a_sabotaged_provider(failures: dict[str, set[str]], sabotage: str) -> None:
    assert CAUGHT_BY[sabotage] in failures[sabotage], sorted(failures[sabotage])


@pytest.mark.parametrize("sabotage", ONLY_CAUGHT_IN_CROWDS)
def test_only_the_crowded_turns_catch_a_lost_or_reordered_image(
    failures: dict[str, set[str]], one_block_failures: dict[str, set[str]], sabotage: str
) -> None:
    """Every one-block check (each declared block on the wire, render, the request mapping)
    passes these sabotages: the crowded turns are what fail them."""
    crowded = "test_several_blocks_of_a_type_arrive_all_and_in_order"
    assert failures[sabotage] == {crowded}, sorted(failures[sabotage])
    assert one_block_failures[sabotage] == set(), sorted(one_block_failures[sabotage])
