"""The wire-shape parser: one description of the message shape, reached through named doors."""

from __future__ import annotations

import ast
import pathlib
from typing import Any

import pytest
from _builders import (
    URL_SOURCE,
    VIDEO_SOURCE,
    user,
)

import oma_core._model as parse_module
import oma_core._sources as sources_module
from oma_core import (
    Base64Source,
    ImageBlock,
    InvalidMessageError,
    LLMMessage,
    TextBlock,
    UrlSource,
    dump_messages,
    load_messages,
)
from oma_core._checks import check_base64
from oma_core.messages import FilePart, MediaSource, ToolResultPart
from oma_core.serialization import message_converter

CORE = pathlib.Path(__file__).resolve().parent.parent / "oma_core"
MODEL_MODULES = (
    "messages",
    "_model",
    "_sources",
    "validation",
    "serialization",
    "media",
    "_checks",
)


def _runtime_imports(module: str) -> list[ast.ImportFrom]:
    """The ``from . import`` statements of a core module, less those under TYPE_CHECKING."""
    tree = ast.parse((CORE / f"{module}.py").read_text())
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_only.update(id(child) for child in ast.walk(node))
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level > 0 and id(node) not in type_only
    ]


def test_the_sources_stand_on_the_leaf_checks_only() -> None:
    """The sources and shared field rules sit below the classes and their parser (one module,
    ``_model``): nothing of the model imports back up (no import cycle)."""
    tree = ast.parse((CORE / "_sources.py").read_text())
    imported = {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.level}
    assert imported <= {"_checks", "errors"}


@pytest.mark.parametrize("module", MODEL_MODULES)
def test_no_model_module_imports_another_modules_private_names(module: str) -> None:
    for node in _runtime_imports(module):
        if node.module is None:  # `from . import _parse`: a module, private as a whole
            continue
        private = [alias.name for alias in node.names if alias.name.startswith("_")]
        assert private == [], f"{module} imports {private} from {node.module}"


@pytest.mark.parametrize("module", MODEL_MODULES)
def test_model_modules_import_only_the_model_and_errors(module: str) -> None:
    allowed = {None, "errors", *MODEL_MODULES}
    for node in _runtime_imports(module):
        assert node.module in allowed, f"{module} imports {node.module}"


def test_dicts_are_checked_exactly_once(monkeypatch: pytest.MonkeyPatch, png_base64: str) -> None:
    calls: list[str] = []

    def counting(value: object, path: str) -> str:
        calls.append(path)
        return check_base64(value, path)

    monkeypatch.setattr(sources_module, "check_base64", counting)
    source = {"type": "base64", "media_type": "image/png", "data": png_base64}
    load_messages([{"role": "user", "content": [{"type": "image", "source": source}]}])
    assert calls == ["messages[0].content[0].source.data"]

    monkeypatch.undo()  # the second part counts through the real check again
    calls: list[str] = []
    original = sources_module.check_base64

    def counting(value: object, path: str) -> str:
        calls.append(path)
        return original(value, path)

    monkeypatch.setattr(sources_module, "check_base64", counting)
    source = {"type": "base64", "media_type": "image/png", "data": png_base64}
    load_messages(
        [user({"type": "image", "source": source}, {"type": "video", "source": VIDEO_SOURCE})]
    )
    assert calls == ["messages[0].content[0].source.data"]


def test_message_objects_inside_dicts_are_not_parsed_again(
    monkeypatch: pytest.MonkeyPatch, png_base64: str
) -> None:
    image = ImageBlock(Base64Source("image/png", png_base64))

    def forbidden(*args: object) -> str:
        raise AssertionError("checked again")

    for name in ("check_base64", "check_media_type", "check_string", "check_url"):
        for module in (parse_module, sources_module):
            monkeypatch.setattr(module, name, forbidden, raising=False)
    (loaded,) = load_messages([{"role": "user", "content": [image]}])
    assert loaded.content[0] is image

    monkeypatch.undo()  # the constructors share these checks: build the message unwatched
    message = LLMMessage("user", [ImageBlock(Base64Source("image/png", png_base64))])

    def forbidden(*args: object) -> str:
        raise AssertionError("checked again")

    monkeypatch.setattr(sources_module, "check_base64", forbidden)
    monkeypatch.setattr(sources_module, "check_media_type", forbidden)
    monkeypatch.setattr(parse_module, "check_string", forbidden)
    assert load_messages([message])[0] is message
    assert load_messages([{"role": "user", "content": list(message.content)}])[0] == message


def test_constructors_and_load_messages_give_the_same_reason_for_the_same_fault() -> None:
    bad = {"type": "image", "source": {**URL_SOURCE, "url": "ftp://example.com/a.png"}}
    with pytest.raises(InvalidMessageError) as by_load:
        load_messages([{"role": "user", "content": [bad]}])
    with pytest.raises(InvalidMessageError) as by_constructor:
        LLMMessage("user", [bad])
    assert by_load.value.path == "messages[0].content[0].source.url"
    assert by_constructor.value.path == "content[0].source.url"
    assert by_load.value.reason == by_constructor.value.reason


# --- the converter structures through the parser ------------------------------------------


@pytest.mark.parametrize(
    ("data", "cls"),
    [
        ({"type": "text", "text": "a"}, TextBlock),
        ({"text": "a"}, TextBlock),  # the class names the tag
        ({"source": URL_SOURCE, "detail": "low"}, ImageBlock),
        ({"media_type": "image/png", "url": "https://example.com/a.png"}, UrlSource),
        ({"filename": "a.png", "source": URL_SOURCE}, FilePart),
    ],
)
def test_the_converter_builds_each_class_through_the_parser(data: Any, cls: type) -> None:
    built: object = message_converter().structure(data, cls)
    assert type(built) is cls
    assert message_converter().unstructure(built)["type"] == parse_module.tag_of(cls)


def test_the_converter_refuses_a_key_the_parser_does_not_know() -> None:
    with pytest.raises(InvalidMessageError, match='is not allowed in an "image" block'):
        message_converter().structure({"source": URL_SOURCE, "size": 3}, ImageBlock)


def test_the_converter_refuses_a_tag_of_another_class() -> None:
    with pytest.raises(InvalidMessageError, match='must be "text"'):
        message_converter().structure({"type": "image", "source": URL_SOURCE}, TextBlock)


@pytest.mark.parametrize(
    ("data", "union", "match"),
    [
        ({"type": "s3", "media_type": "image/png"}, MediaSource, 'must be "base64" or "url"'),
        ({"type": "video", "source": URL_SOURCE}, ToolResultPart, '"text", "image" or "file"'),
    ],
)
def test_the_unions_dispatch_through_the_parser(data: Any, union: Any, match: str) -> None:
    with pytest.raises(InvalidMessageError, match=match):
        message_converter().structure(data, union)


def test_structuring_a_conversation_is_load_messages(conversation: list[dict[str, Any]]) -> None:
    structured = message_converter().structure(conversation, tuple[LLMMessage, ...])
    assert structured == load_messages(conversation)
    assert dump_messages(structured) == conversation
