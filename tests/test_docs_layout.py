"""The docs layout check judges what it measures correctly (offline: no browser, no build).

tests/docs_layout.py measures the built site in headless Chromium (run by the ``docs`` nox
session); here its verdicts are checked on measurements and pages written by hand, and
docs/griffe_attrs.py on a small attrs module.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import docs_layout
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _page(**changes: Any) -> dict[str, Any]:
    page: dict[str, Any] = {
        "column": 812,
        "page_overflow": 0,
        "code": [],
        "code_blocks": 3,
        "wrapped": [],
        "tables": [{"width": 600, "visible": 844, "right": -212, "head": "name"}],
        "breaks": [],
    }
    page.update(changes)
    return page


def test_a_page_that_fits_has_no_problems() -> None:
    assert docs_layout.problems({"index": _page()}) == []


def test_a_code_block_that_scrolls_sideways_is_a_problem() -> None:
    page = _page(code=[{"hidden": 120, "line": "x = 1  # a long comment"}])
    (problem,) = docs_layout.problems({"cli/": page})
    assert "cli/: a code block hides 120 px" in problem


def test_a_table_past_the_content_column_is_a_problem() -> None:
    page = _page(tables=[{"width": 1002, "visible": 844, "right": 190, "head": "preset"}])
    (problem,) = docs_layout.problems({"providers/openai/": page})
    assert "1002 px wide" in problem


def test_a_name_broken_in_a_cell_is_a_problem() -> None:
    page = _page(breaks=[{"word": "OPENAI_API_KEY", "at": "E|Y"}])
    (problem,) = docs_layout.problems({"providers/openai/": page})
    assert "'OPENAI_API_KEY'" in problem


def test_the_page_scrolling_sideways_is_a_problem() -> None:
    assert docs_layout.problems({"index": _page(page_overflow=40)})


def test_the_summary_gives_the_figures() -> None:
    wide = _page(tables=[{"width": 700, "visible": 844, "right": -112, "head": "x"}])
    text = docs_layout.summary({"index": _page(), "cli/": wide})
    assert "0 of 6 code blocks scroll sideways" in text
    assert "widest table 700 px (cli/)" in text


def _reference(site: Path, page: str, *ids: str) -> None:
    folder = site / "reference" / page
    folder.mkdir(parents=True)
    headings = "".join(f'<h2 id="{i}" class="doc doc-heading">x</h2>' for i in ids)
    (folder / "index.html").write_text(headings, encoding="utf-8")


def test_a_class_documented_on_two_pages_is_a_problem(tmp_path: Path) -> None:
    _reference(tmp_path, "messages", "oma_core.messages.TextBlock")
    _reference(tmp_path, "plugins", "oma_core.TextBlock")
    (problem,) = docs_layout.reference_problems(tmp_path)
    assert "oma_core._model.TextBlock is documented 2 times" in problem


def test_a_private_heading_is_a_problem(tmp_path: Path) -> None:
    _reference(tmp_path, "agent", "oma_core.agent.Agent", "oma_core.agent._runner")
    assert docs_layout.reference_problems(tmp_path) == [
        "reference/agent: private name oma_core.agent._runner"
    ]


def test_without_a_browser_or_apt_get_the_check_is_skipped_loudly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no chromium, no apt-get
    monkeypatch.delenv("OMA_CHROMIUM", raising=False)
    monkeypatch.delenv("OMA_CHROMEDRIVER", raising=False)
    (tmp_path / "reference").mkdir()
    assert docs_layout.main([str(tmp_path), "--install-browser"]) == 0
    assert "SKIPPED the docs layout check" in capsys.readouterr().err


def test_attrs_classes_get_their_constructor_in_the_reference(tmp_path: Path) -> None:
    griffe = pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("griffe_attrs", ROOT / "docs/griffe_attrs.py")
    assert spec and spec.loader
    extension = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extension)
    (tmp_path / "shapes.py").write_text(
        "import attrs\n\n"
        "def _positive(instance, attribute, value): ...\n\n"
        "class _Base:\n    pass\n\n"
        "@attrs.frozen\nclass Box(_Base):\n"
        "    name: str\n"
        "    size: int = attrs.field(default=1, validator=_positive)\n"
        "    tags: list[str] = attrs.field(factory=list)\n"
        "    _cache: int = attrs.field(default=0, kw_only=True)\n",
        encoding="utf-8",
    )
    module = griffe.load(
        "shapes",
        search_paths=[str(tmp_path)],
        extensions=griffe.load_extensions(extension.AttrsInit),
    )
    box = module["Box"]
    params = [(p.name, str(p.default), p.kind.value) for p in box["__init__"].parameters]
    assert params == [
        ("self", "None", "positional or keyword"),
        ("name", "None", "positional or keyword"),
        ("size", "1", "positional or keyword"),
        ("tags", "list()", "positional or keyword"),
        ("cache", "0", "keyword-only"),
    ]
    assert str(box["size"].value) == "1"  # not attrs.field(..., validator=_positive)
    assert box.bases == []


def test_code_under_the_copy_button_at_a_phones_width_is_a_problem() -> None:
    page = _page(covered=["$ oma run --schema 'name, age int' \"Describe a person.\""])

    (problem,) = docs_layout.problems({"cli/": page})

    assert problem.startswith("cli/: at 390 px the copy button covers code:")
