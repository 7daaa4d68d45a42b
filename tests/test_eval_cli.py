"""``oma eval run``, ``gate`` and ``show`` end to end, through the command, on the offline
example shipped in examples/eval (as a clean clone has it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import attrs
import pytest
from _builders import ROOT, oma

from oma_core.evaluation import EvalReport, Score

EXAMPLE = "examples/eval/dataset.yaml"
REPLY = "Hello Ada! The picture shows a cat; the report says we ship on Friday."
#: The command the example's comment and docs/offline-evaluation.md give.
RUN = (
    "eval", "run", EXAMPLE, "-m", "echo", "-m", "scripted", "-O", "responses", json.dumps([REPLY]),
    "--scorer", "contains", "--price", "echo", "1", "2", "--price", "scripted", "3", "4",
)  # fmt: skip


@pytest.fixture(autouse=True)
def at_the_root(cli_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def ran(tmp_path: Path, *extra: str) -> tuple[Any, EvalReport]:
    path = tmp_path / "report.json"
    result = oma(*RUN, "-o", str(path), *extra)
    assert result.exit_code == 0, result.output
    return result, EvalReport.from_json(path.read_text(encoding="utf-8"))


def test_the_example_prints_the_side_by_side_table(tmp_path: Path) -> None:
    result, report = ran(tmp_path)
    lines = result.stdout.splitlines()
    header = next(line for line in lines if "echo" in line and "scripted" in line)
    assert header.index("echo") < header.index("scripted")
    row = next(line for line in lines if line.strip("│ ").startswith("contains"))
    # echo finds Ada only, and "ship" of [ship, Friday]: (1 + 0 + 0.5) / 3
    assert "0.50 (pass 33%, n=3)" in row and "1.00 (pass 100%, n=3) *" in row
    assert any(line.strip("│ ").startswith("cost") for line in lines)
    assert any("latency p50" in line for line in lines)
    assert "* best of the row" in result.stdout
    assert [(c.case, c.config) for c in report.cases][:2] == [
        ("greeting", "echo"),
        ("greeting", "scripted"),
    ]
    assert all(c.status == "ok" for c in report.cases)
    assert {c.output for c in report.cases if c.config == "scripted"} == {REPLY}
    image = report.cases[2].input[0]["content"][1]
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"


def test_the_example_policy_holds_and_a_stricter_one_fails_naming_each_rule(
    tmp_path: Path,
) -> None:
    ran(tmp_path)
    report = str(tmp_path / "report.json")
    held = oma("eval", "gate", report, "--policy", "examples/eval/policy.json")
    assert held.exit_code == 0, held.output
    assert "the gate holds (4 checks)" in held.stdout
    strict = tmp_path / "strict.json"
    strict.write_text(
        json.dumps(
            {
                "min_samples": 4,
                "rules": [{"scorer": "contains", "metric": "pass_rate", "min": 0.5}],
            }
        )
    )
    failed = oma("eval", "gate", report, "--policy", str(strict))
    assert failed.exit_code == 1
    assert failed.stdout.splitlines() == [
        "failed: min_samples: echo has 3 cases scored, fewer than 4",
        "failed: min_samples: scripted has 3 cases scored, fewer than 4",
        "failed: rules[0] (contains pass_rate >= 0.5): echo has 0.3333",
    ]
    assert "error: the gate failed: 3" in failed.stderr


def test_a_regression_against_a_baseline_fails_the_gate(tmp_path: Path) -> None:
    _, report = ran(tmp_path)
    baseline = attrs.evolve(  # the same cases, echo scoring 1 on each
        report,
        cases=[
            attrs.evolve(c, scores={"contains": Score(1.0)}) if c.config == "echo" else c
            for c in report.cases
        ],
    )
    old = tmp_path / "old.json"
    old.write_text(baseline.to_json())
    policy = tmp_path / "policy.json"
    policy.write_text('{"max_regression": 0.1}')
    failed = oma(
        "eval", "gate", str(tmp_path / "report.json"), "--policy", str(policy),
        "--baseline", str(old),
    )  # fmt: skip
    assert failed.exit_code == 1
    assert failed.stdout.startswith("failed: max_regression: echo contains mean 0.5 is 0.5 below")


@pytest.mark.parametrize(
    "policy", ['{"rules": [{"scorer": "contains", "metric": "median", "min": 1}]}', "{oops"]
)
def test_a_bad_policy_exits_2(tmp_path: Path, policy: str) -> None:
    ran(tmp_path)
    path = tmp_path / "policy.json"
    path.write_text(policy)
    result = oma("eval", "gate", str(tmp_path / "report.json"), "--policy", str(path))
    assert result.exit_code == 2 and result.stderr.startswith("error: policy")


def test_json_and_junit_outputs(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    result = oma(*RUN, "--json", "--junit", str(junit))
    assert result.exit_code == 0, result.output
    report = EvalReport.from_json(result.stdout)
    assert len(report.cases) == 6
    root = ElementTree.parse(junit).getroot()
    echo = next(s for s in root.iter("testsuite") if s.get("name") == "echo")
    assert (echo.get("tests"), echo.get("failures")) == ("3", "2")


def test_show_prints_the_table_and_writes_a_self_contained_page(tmp_path: Path) -> None:
    ran(tmp_path)
    page = tmp_path / "report.html"
    shown = oma("eval", "show", str(tmp_path / "report.json"), "--html", str(page))
    assert shown.exit_code == 0
    assert "1.00 (pass 100%, n=3) *" in shown.stdout
    html = page.read_text(encoding="utf-8")
    assert "data:image/png;base64," in html and "http" not in html.split("<h2>Cases")[0]


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (("--scorer", "bleu"), "--scorer bleu is not a scorer"),
        (("-O", "nonsense", "1"), "-O nonsense: no model's provider takes"),
        (("--max-cost", "1", "-m", "echo:other"), "--price"),
    ],
)
def test_a_mistake_on_the_command_line_exits_2_before_any_run(
    tmp_path: Path, args: tuple[str, ...], phrase: str
) -> None:
    result = oma("eval", "run", EXAMPLE, "-m", "echo", *args)
    assert result.exit_code == 2, result.output
    assert phrase in result.stderr


def test_a_bad_case_in_the_dataset_is_named_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        "cases:\n  - name: pic\n    input:\n      - role: user\n"
        "        content: [{type: image, path: missing.png}]\n"
    )
    result = oma("eval", "run", str(path), "-m", "echo")
    assert result.exit_code == 2
    assert f'{path}: case "pic": cases[0].input[0].content[0].path no such file' in result.stderr


def test_a_report_that_is_not_one_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"format": "something else"}')
    result = oma("eval", "show", str(path))
    assert result.exit_code == 2 and "format" in result.stderr


def test_a_judge_scores_each_case_and_its_cost_is_counted(tmp_path: Path) -> None:
    verdict = json.dumps({"score": 0.5, "reasons": ["half right"]})
    path = tmp_path / "report.json"
    result = oma(
        "eval", "run", EXAMPLE, "-m", "echo", "--judge", "Is it right?",
        "--judge-model", "scripted", "-O", "responses", json.dumps([verdict]),
        "--pass-mark", "judge", "0.5", "--price", "echo", "1", "1",
        "--price", "scripted", "1000", "1000", "-o", str(path),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = EvalReport.from_json(path.read_text(encoding="utf-8"))
    assert report.scorers == ("judge",)
    assert {c.scores["judge"] for c in report.cases} == {Score(0.5, "half right")}
    assert all((c.judge_cost or 0) > 0 for c in report.cases)
    runs = sum(c.cost or 0 for c in report.cases)
    judged = sum(c.judge_cost or 0 for c in report.cases)
    assert report.spent == pytest.approx(runs + judged)
    assert report.summary()[0]["pass_rate"] == 1.0
