"""``Dataset.load``: YAML and JSON cases, media read from paths beside the file, and every
mistake refused on load with the file, the case and the field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _builders import ROOT
from hypothesis import given
from hypothesis import strategies as st

from oma_core.errors import InvalidMessageError, UsageError
from oma_core.evaluation import Dataset, DatasetCase, InvalidDatasetError
from oma_core.messages import ImageBlock, LLMMessage


def write(folder: Path, name: str, data: Any) -> Path:
    path = folder / name
    path.write_text(json.dumps(data) if name.endswith(".json") else data, encoding="utf-8")
    return path


def turn(*blocks: dict[str, Any], role: str = "user") -> list[dict[str, Any]]:
    return [{"role": role, "content": list(blocks)}]


def test_a_yaml_dataset_loads_its_cases_in_order(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "qa.yaml",
        "name: qa\ncases:\n  - {name: a, input: hi, expected: hello, metadata: {k: 1}}\n"
        "  - {name: b, input: bye, expected: {answer: [1, 2]}}\n",
    )
    dataset = Dataset.load(path)
    assert dataset.name == "qa"
    assert dataset.cases == (
        DatasetCase("a", "hi", "hello", {"k": 1}),
        DatasetCase("b", "bye", {"answer": [1, 2]}),
    )


def test_a_json_dataset_is_named_after_its_file_unless_it_says(tmp_path: Path) -> None:
    path = write(tmp_path, "smoke.json", {"cases": [{"name": "a", "input": "hi"}]})
    dataset = Dataset.load(path)
    assert dataset.name == "smoke" and dataset.cases[0].expected is None


def test_media_paths_are_read_relative_to_the_dataset_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(ROOT / "examples" / "cat.png", folder / "cat.png")
    path = write(
        folder,
        "cases.json",
        {
            "cases": [
                {
                    "name": "cat",
                    "input": [
                        {
                            "role": "user",
                            "content": [{"type": "image", "path": "cat.png", "detail": "low"}],
                        }
                    ],
                }
            ]
        },
    )
    monkeypatch.chdir(tmp_path)  # not the dataset's folder
    (message,) = Dataset.load(path).cases[0].input
    assert isinstance(message, LLMMessage)
    (block,) = message.content
    assert isinstance(block, ImageBlock) and block.detail == "low"
    assert block.source.media_type == "image/png"


@pytest.mark.parametrize(
    ("case", "path", "phrase"),
    [
        ({"input": "hi"}, "cases[0].name", "non-empty text"),
        ({"name": "a"}, "cases[0].input", "is missing"),
        ({"name": "a", "input": ""}, "cases[0].input", "non-empty"),
        ({"name": "a", "input": 3}, "cases[0].input", "text or a list"),
        ({"name": "a", "input": "hi", "expect": 1}, "cases[0].expect", "not a case field"),
        ({"name": "a", "input": "hi", "metadata": [1]}, "cases[0].metadata", "an object"),
        (
            {"name": "a", "input": turn({"type": "image", "path": "x.png"})},
            "cases[0].input[0].content[0].path",
            "no such file",
        ),
        (
            {"name": "a", "input": turn({"type": "image", "path": "x.png", "size": 1})},
            "cases[0].input[0].content[0].size",
            "not a field",
        ),
        (
            {"name": "a", "input": turn({"type": "text", "text": "x"}, role="robot")},
            "cases[0].input[0].role",
            "",
        ),
    ],
)
def test_a_bad_case_is_refused_naming_the_file_the_case_and_the_field(
    tmp_path: Path, case: dict[str, Any], path: str, phrase: str
) -> None:
    file = write(tmp_path, "bad.json", {"cases": [case]})
    with pytest.raises(InvalidDatasetError) as caught:
        Dataset.load(file)
    error = caught.value
    assert error.path == path and phrase in error.reason
    assert error.file == str(file)
    assert str(error).startswith(f"{file}: ")
    if isinstance(case.get("name"), str):
        assert error.case == case["name"] and f'case "{case["name"]}"' in str(error)
    assert isinstance(error, InvalidMessageError) and isinstance(error, UsageError)


def test_two_cases_with_one_name_are_refused(tmp_path: Path) -> None:
    file = write(tmp_path, "d.json", {"cases": [{"name": "a", "input": "x"}] * 2})
    with pytest.raises(InvalidDatasetError) as caught:
        Dataset.load(file)
    assert caught.value.path == "cases[1].name" and caught.value.case == "a"


def test_a_yaml_date_is_refused_as_not_json(tmp_path: Path) -> None:
    file = write(tmp_path, "d.yml", "cases:\n  - {name: a, input: x, expected: 2024-01-02}\n")
    with pytest.raises(InvalidDatasetError) as caught:
        Dataset.load(file)
    assert caught.value.path == "cases[0].expected" and "JSON data" in caught.value.reason


@pytest.mark.parametrize(
    ("name", "content", "phrase"),
    [
        ("d.txt", "cases: []", ".yaml, .yml or .json"),
        ("d.json", "{", "not valid JSON"),
        ("d.yaml", "cases: [", "not valid YAML"),
        ("d.yaml", "- a\n- b\n", "an object with 'cases'"),
        ("d.yaml", "cases: []\n", "non-empty list"),
        ("d.yaml", "cases: [{name: a, input: x}]\nmodel: x\n", "not a dataset field"),
    ],
)
def test_a_bad_file_is_refused_naming_it(
    tmp_path: Path, name: str, content: str, phrase: str
) -> None:
    file = tmp_path / name
    file.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidDatasetError) as caught:
        Dataset.load(file)
    assert phrase in str(caught.value) and str(file) in str(caught.value)


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidDatasetError, match="no such file"):
        Dataset.load(tmp_path / "none.yaml")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)
anything = st.recursive(
    json_values | st.binary() | st.sets(st.integers()) | st.dates(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(data=st.dictionaries(st.sampled_from(["name", "cases", "x"]), anything, max_size=3))
def test_any_data_loads_or_is_refused_with_a_dataset_error(data: dict[str, Any]) -> None:
    try:
        dataset = Dataset.from_data(data)
    except InvalidDatasetError as error:
        assert error.reason
    else:
        assert dataset.cases and len({c.name for c in dataset.cases}) == len(dataset.cases)


@given(
    cases=st.lists(
        st.fixed_dictionaries(
            {"name": st.text(min_size=1), "input": st.text(min_size=1)},
            optional={"expected": anything, "metadata": anything},
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_case_list_loads_or_names_a_case_field(cases: list[dict[str, Any]]) -> None:
    try:
        dataset = Dataset.from_data({"cases": cases})
    except InvalidDatasetError as error:
        assert error.path.startswith("cases[")
    else:
        assert [c.name for c in dataset.cases] == [c["name"] for c in cases]
        for case, raw in zip(dataset.cases, cases, strict=True):
            json.dumps([case.expected, dict(case.metadata)], allow_nan=False)
            assert case.expected == raw.get("expected")
