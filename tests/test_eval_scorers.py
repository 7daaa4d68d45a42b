"""The built-in scorers: exact, contains, regex, json_equal and schema_valid, each against a
case's ``expected``; nothing expected is no score."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oma_core.evaluation import (
    OfflineCase,
    Score,
    contains,
    exact,
    json_equal,
    regex,
    schema_valid,
)


def case(output: str, expected: Any, structured: Any = None) -> OfflineCase:
    return OfflineCase("q", output, None, expected=expected, structured=structured)


@pytest.mark.parametrize("scorer", [exact, contains, regex, json_equal, schema_valid])
def test_nothing_expected_is_no_score(scorer: Any) -> None:
    assert scorer(case("anything", None)) is None


def test_exact_compares_stripped_text() -> None:
    assert exact(case("  Paris\n", "Paris")) == Score(1.0)
    score = exact(case("paris", "Paris"))
    assert score is not None and score.value == 0.0 and "'Paris'" in (score.reason or "")


def test_exact_with_a_json_value_expected_compares_json() -> None:
    assert exact(case('{"a": 1}', {"a": 1})) == Score(1.0)


def test_contains_gives_the_share_of_texts_found() -> None:
    assert contains(case("red and blue", "blue")) == Score(1.0)
    assert contains(case("red and blue", ["red", "green"])) == Score(0.5, "missing 'green'")


def test_contains_needs_text() -> None:
    with pytest.raises(TypeError):
        contains(case("x", 3))


def test_regex_gives_the_share_of_patterns_found() -> None:
    assert regex(case("order #1234 shipped", r"#\d{4}")) == Score(1.0)
    assert regex(case("order shipped", [r"#\d+", "shipped"])) == Score(0.5, r"no match for '#\\d+'")


def test_json_equal_prefers_the_structured_output() -> None:
    assert json_equal(case("not json", {"n": 1}, structured={"n": 1.0})) == Score(1.0)
    assert json_equal(case('```json\n{"n": 1}\n```', {"n": 1})) == Score(1.0)
    wrong = json_equal(case('{"n": true}', {"n": 1}))
    assert wrong is not None and wrong.value == 0.0
    unreadable = json_equal(case("no json here", {"n": 1}))
    assert unreadable is not None and unreadable.value == 0.0 and unreadable.reason


def test_schema_valid_checks_the_value_against_the_expected_schema() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert schema_valid(case('{"n": 3}', schema)) == Score(1.0)
    missing = schema_valid(case("{}", schema))
    assert missing is not None and missing.value == 0.0 and "'n'" in (missing.reason or "")
    with pytest.raises(TypeError):
        schema_valid(case("{}", "an object"))


@given(output=st.text(), expected=st.text())
def test_contains_and_exact_agree_with_python(output: str, expected: str) -> None:
    found = contains(case(output, expected))
    assert found is not None and found.value == float(expected in output)
    same = exact(case(output, expected))
    assert same is not None and same.value == float(output.strip() == expected.strip())
