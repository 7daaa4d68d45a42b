"""``EvalReport``: its summary, its JSON (stable, versioned, read back equal), its JUnit XML
(read by the standard library) and its HTML page (self-contained: checked with an HTML
parser)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any
from xml.etree import ElementTree

import pytest
from _builders import PNG_B64

from oma_core.evaluation import (
    CaseResult,
    EvalReport,
    InvalidReportError,
    Score,
    report_html,
)
from oma_core.providers import Usage

PDF = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}
IMAGE_INPUT = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
            },
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {"type": "document", "source": PDF, "filename": "r.pdf"},
        ],
    }
]


def result(case: str, config: str, value: float | None, **fields: Any) -> CaseResult:
    scores = {} if value is None else {"contains": Score(value, None if value == 1 else "no")}
    fields.setdefault("latency", 0.5)
    return CaseResult(case, config, fields.pop("input", "q"), "a", scores=scores, **fields)


def sample() -> EvalReport:
    return EvalReport(
        dataset="qa",
        configs=["fast", "smart"],
        scorers=["contains"],
        cases=[
            result("a", "fast", 1.0, cost=0.25, usage=Usage(10, 2, 3, 1, 1), input=IMAGE_INPUT),
            result("a", "smart", 1.0, cost=1.0, input=IMAGE_INPUT, output="<b>a</b>"),
            result("b", "fast", 0.0, cost=0.25, latency=1.5, output="x\x01y"),
            result("b", "smart", None, status="error", error="ProviderError: down", cost=0.5),
            result("c", "fast", None, status="not_run", latency=None),
            result("c", "smart", None, status="not_run", latency=None),
        ],
        pass_marks={"contains": 0.8},
        spent=2.0,
        max_cost=2.0,
        stopped=True,
    )


def test_the_summary_has_a_row_per_config_and_scorer() -> None:
    rows = sample().summary()
    assert rows == [
        {
            "config": "fast",
            "scorer": "contains",
            "n": 2,
            "mean": 0.5,
            "p50": 0.5,
            "p95": 0.95,
            "pass_rate": 0.5,
            "cost": 0.5,
            "latency_p50": 1.0,
            "latency_p95": 1.45,
        },
        {
            "config": "smart",
            "scorer": "contains",
            "n": 1,
            "mean": 1.0,
            "p50": 1.0,
            "p95": 1.0,
            "pass_rate": 1.0,
            "cost": 1.5,
            "latency_p50": 0.5,
            "latency_p95": 0.5,
        },
    ]


def test_the_json_report_reads_back_equal_and_is_stable() -> None:
    report = sample()
    text = report.to_json()
    again = EvalReport.from_json(text)
    assert again == report
    assert again.to_json() == text
    data = json.loads(text)
    assert (data["format"], data["version"]) == ("oma-eval-report", 1)
    assert data["cases"][0]["usage"] == {
        "input_tokens": 10,
        "output_tokens": 2,
        "cache_read_tokens": 3,
        "cache_write_tokens": 1,
        "reasoning_tokens": 1,
    }
    assert [c.case for c in again.not_run] == ["c", "c"]


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (lambda d: d.update(version=2), "version is 2"),
        (lambda d: d.update(format="other"), "format must be"),
        (lambda d: d["cases"][0].update(status="great"), "cases[0].status"),
        (lambda d: d["cases"][1]["usage"].update(input_tokens="9"), "cases[1].usage.input_tokens"),
        (lambda d: d["cases"][0].pop("config"), "cases[0].config is missing"),
        (lambda d: d["scorers"][0].update(pass_mark="high"), "scorers[0].pass_mark"),
    ],
)
def test_a_report_of_another_shape_is_refused_naming_the_place(change: Any, phrase: str) -> None:
    data = json.loads(sample().to_json())
    change(data)
    with pytest.raises(InvalidReportError) as caught:
        EvalReport.from_json(json.dumps(data))
    assert phrase in str(caught.value)


def test_junit_has_a_test_per_case_and_config_that_fails_below_the_pass_mark() -> None:
    root = ElementTree.fromstring(sample().to_junit())
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert set(suites) == {"fast", "smart"}
    fast = suites["fast"]
    assert (fast.get("tests"), fast.get("failures"), fast.get("skipped")) == ("3", "1", "1")
    cases = {case.get("name"): case for case in fast.iter("testcase")}
    assert cases["a"].find("failure") is None
    failure = cases["b"].find("failure")
    assert failure is not None and "contains 0 < 0.8" in (failure.get("message") or "")
    assert cases["c"].find("skipped") is not None
    smart = {case.get("name"): case for case in suites["smart"].iter("testcase")}
    error = smart["b"].find("error")
    assert error is not None and "ProviderError: down" in (error.text or "")
    assert suites["smart"].get("errors") == "1"


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.cells: list[str] = []
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_cell = tag in ("td", "th")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._in_cell = False

    def handle_data(self, data: str) -> None:
        if self._in_cell and data.strip():
            self.cells.append(data.strip())


def test_the_html_page_holds_the_table_and_thumbnails_and_loads_nothing() -> None:
    page = Page()
    page.feed(report_html(sample()))
    images = [attrs for tag, attrs in page.tags if tag == "img"]
    assert [img["src"] for img in images] == [f"data:image/png;base64,{PNG_B64}"]
    assert "fast" in page.cells and "smart" in page.cells
    assert "1.00 (pass 100%, n=1) ★" in page.cells  # smart's contains: the best of the row
    assert "$1.5000" in page.cells and "$0.5000 ★" in page.cells
    for tag, attrs in page.tags:
        assert tag not in ("script", "link", "iframe", "object")
        for name in ("src", "href", "action"):
            value = attrs.get(name) or ""
            assert not value.lower().startswith(("http:", "https:", "//")), (tag, attrs)
    html = report_html(sample())
    assert "&lt;b&gt;a&lt;/b&gt;" in html  # an output is shown, never obeyed
    assert "<b>a</b>" not in html
