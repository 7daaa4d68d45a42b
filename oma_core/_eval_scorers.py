"""The built-in scorers of offline evaluation, and the case they score (``OfflineCase``).

Each compares a run with its case's ``expected`` and gives a ``Score`` in [0, 1] with a
reason when it is below 1; with nothing expected it gives None (the case is not scored by
it, and not counted in its figures):

- ``exact``: the output text, stripped, equals the expected text (a JSON value expected:
  as ``json_equal``);
- ``contains``: the output holds the expected text (a list of texts: the share it holds);
- ``regex``: the expected pattern (or list of them) is found in the output (the share found);
- ``json_equal``: the structured output (else the JSON in the reply) equals the expected value;
- ``schema_valid``: that value is valid against the expected JSON Schema.

Any online-evaluation scorer (an ``EvalCase`` in, a float or ``Score`` out, sync or async)
works unchanged: an ``OfflineCase`` is an ``EvalCase`` with the offline fields added.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from ._eval_types import EvalCase, Score

__all__ = [
    "BUILT_IN_SCORERS",
    "OfflineCase",
    "contains",
    "exact",
    "json_equal",
    "regex",
    "same_json",
    "schema_valid",
]


@attrs.frozen
class OfflineCase(EvalCase):
    """What a scorer sees of one run of a dataset case: the ``EvalCase`` fields (``input``
    as text: the prompt, or the messages' JSON) plus the case's ``name``, what it
    ``expected``, the run's ``structured`` output as JSON data and the ``config`` that ran."""

    name: str = attrs.field(default="", kw_only=True)
    expected: Any = attrs.field(default=None, kw_only=True)
    structured: Any = attrs.field(default=None, kw_only=True)
    config: str = attrs.field(default="", kw_only=True)


def _expected(case: EvalCase) -> Any:
    return getattr(case, "expected", None)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def exact(case: EvalCase) -> Score | None:
    """1 when the output (stripped) is the expected text, else 0."""
    expected = _expected(case)
    if expected is None:
        return None
    if not isinstance(expected, str):
        return json_equal(case)
    if case.output.strip() == expected.strip():
        return Score(1.0)
    return Score(0.0, f"expected {_short(expected.strip())}, got {_short(case.output.strip())}")


def _texts(expected: Any, scorer: str) -> list[str]:
    texts = expected if isinstance(expected, list) else [expected]
    if not texts or not all(isinstance(text, str) for text in texts):
        raise TypeError(f"{scorer} needs the expected value to be text or a list of texts")
    return texts


def contains(case: EvalCase) -> Score | None:
    """The share of the expected texts found in the output (1 or 0 for one text)."""
    expected = _expected(case)
    if expected is None:
        return None
    texts = _texts(expected, "contains")
    missing = [text for text in texts if text not in case.output]
    return _share(len(texts), missing, "missing")


def regex(case: EvalCase) -> Score | None:
    """The share of the expected patterns (Python ``re``) found in the output."""
    expected = _expected(case)
    if expected is None:
        return None
    patterns = _texts(expected, "regex")
    missing = [pattern for pattern in patterns if re.search(pattern, case.output) is None]
    return _share(len(patterns), missing, "no match for")


def _share(total: int, missing: list[str], word: str) -> Score:
    if not missing:
        return Score(1.0)
    shown = ", ".join(_short(text) for text in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return Score((total - len(missing)) / total, f"{word} {shown}{more}")


def _value(case: EvalCase) -> tuple[Any, str | None]:
    """The run's JSON value: its structured output, else the JSON in its reply."""
    structured = getattr(case, "structured", None)
    if structured is not None:
        return structured, None
    from ._output import extract_json

    try:
        return extract_json(case.output), None
    except ValueError as error:
        return None, str(error)


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0``, but ``true`` is not ``1`` and key order does not count."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def json_equal(case: EvalCase) -> Score | None:
    """1 when the run's JSON value equals the expected value, else 0."""
    expected = _expected(case)
    if expected is None:
        return None
    value, problem = _value(case)
    if problem is not None:
        return Score(0.0, problem)
    if same_json(value, expected):
        return Score(1.0)
    return Score(0.0, f"expected {_short(expected)}, got {_short(value)}")


def schema_valid(case: EvalCase) -> Score | None:
    """1 when the run's JSON value is valid against the expected JSON Schema, else 0 (the
    schema subset tools and output types use)."""
    expected = _expected(case)
    if expected is None:
        return None
    from ._tool_types import check, schema_problem

    if not isinstance(expected, dict | bool):
        raise TypeError("schema_valid needs the expected value to be a JSON Schema object")
    problem = schema_problem(expected)
    if problem is not None:
        raise ValueError(f"the expected schema cannot be checked: {problem}")
    value, not_json = _value(case)
    if not_json is not None:
        return Score(0.0, not_json)
    violation = check(expected, value, "$")
    return Score(1.0) if violation is None else Score(0.0, violation)


#: The built-in scorers by name (``oma eval run --scorer NAME``).
BUILT_IN_SCORERS = {
    "exact": exact,
    "contains": contains,
    "regex": regex,
    "json_equal": json_equal,
    "schema_valid": schema_valid,
}
