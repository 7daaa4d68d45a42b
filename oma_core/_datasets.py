"""Datasets for offline evaluation: named cases read from YAML or JSON, checked before any run.

A dataset file holds ``{"name"?: str, "cases": [{"name", "input", "expected"?, "metadata"?}]}``.
``input`` is a string or a conversation in the message JSON shape (``load_messages``); a media
block may name a file instead of a source, ``{"type": "image", "path": "cat.png"}`` (also
``video``, ``document``, ``audio``; with ``media_type``, an image's ``detail``, a document's
``filename``), read relative to the dataset file and sent as base64. ``expected`` is any
JSON value (text, a value, a schema: what the scorers make of it); ``metadata`` an object.

Everything is checked on load, so a mistake stops the evaluation before anything is sent: the
first one is an ``InvalidDatasetError`` naming the file, the case and the field
(``cases[1].input[0].content[1].path no such file``). YAML needs PyYAML, imported only here
and only for a YAML file.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from .errors import InvalidMessageError
from .messages import LLMMessage

__all__ = ["Dataset", "DatasetCase", "InvalidDatasetError", "MAX_DATASET_BYTES"]

#: The largest dataset file read: 64 MiB (media read from paths are limited per file).
MAX_DATASET_BYTES = 64 * 1024 * 1024
_CASE_KEYS = frozenset({"name", "input", "expected", "metadata"})
_FILE_KEYS = frozenset({"name", "cases"})
_MEDIA = ("image", "video", "document", "audio")
_PATH_KEYS = {
    "image": frozenset({"type", "path", "media_type", "detail"}),
    "video": frozenset({"type", "path", "media_type"}),
    "document": frozenset({"type", "path", "media_type", "filename"}),
    "audio": frozenset({"type", "path", "media_type"}),
}


class InvalidDatasetError(InvalidMessageError):
    """A dataset broke a rule; ``path`` names the place (``cases[2].expected``), ``case`` the
    case's name when it has one and ``file`` the dataset file (None for data given in
    Python). Raised on load, before anything is sent."""

    code = "INVALID_DATASET"

    def __init__(
        self, path: str, reason: str, *, case: str | None = None, file: str | None = None
    ) -> None:
        super().__init__(path, reason)
        self.case = case
        self.file = file
        where = f"{file}: " if file else ""
        named = f'case "{case}": ' if case else ""
        self.args = (f"{where}{named}{path} {reason}" if path else f"{where}{named}{reason}",)


@attrs.frozen
class DatasetCase:
    """One case: its ``name``, its ``input`` (text or validated messages), what is
    ``expected`` (None: nothing; the scorers that need it skip the case) and ``metadata``."""

    name: str
    input: str | tuple[LLMMessage, ...]
    expected: Any = None
    metadata: Mapping[str, Any] = attrs.field(factory=dict)


def _cases(cases: Iterable[DatasetCase]) -> tuple[DatasetCase, ...]:
    return tuple(cases)


@attrs.frozen
class Dataset:
    """Named cases to run each config on (``evaluate``). Build one in Python from
    ``DatasetCase``s or with ``Dataset.load(path)``; case names are unique."""

    cases: tuple[DatasetCase, ...] = attrs.field(converter=_cases)
    name: str = "dataset"

    def __attrs_post_init__(self) -> None:
        seen: set[str] = set()
        for index, case in enumerate(self.cases):
            if not isinstance(case, DatasetCase):
                raise InvalidDatasetError(
                    f"cases[{index}]", f"must be a DatasetCase, got {type(case).__name__}"
                )
            if case.name in seen:
                raise InvalidDatasetError(
                    f"cases[{index}].name", "repeats an earlier case's name", case=case.name
                )
            seen.add(case.name)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Dataset:
        """The dataset in a ``.yaml``/``.yml`` or ``.json`` file; media paths in it are read
        relative to the file's folder."""
        where = str(path)
        data = _read(Path(path), where)
        default = Path(path).stem or "dataset"
        return cls.from_data(data, base=Path(path).parent, file=where, default_name=default)

    @classmethod
    def from_data(
        cls,
        data: object,
        *,
        base: str | os.PathLike[str] | None = None,
        file: str | None = None,
        default_name: str = "dataset",
    ) -> Dataset:
        """The dataset in ``data`` (a file's content as read); media paths are relative to
        ``base`` (default: the working directory)."""
        if not isinstance(data, Mapping):
            raise InvalidDatasetError("", "must be an object with 'cases'", file=file)
        unknown = sorted(str(key) for key in data if key not in _FILE_KEYS)
        if unknown:
            raise InvalidDatasetError(unknown[0], "is not a dataset field (name, cases)", file=file)
        name = data.get("name", default_name)
        if not isinstance(name, str) or not name.strip():
            raise InvalidDatasetError("name", "must be non-empty text", file=file)
        cases = data.get("cases")
        if not isinstance(cases, list) or not cases:
            raise InvalidDatasetError("cases", "must be a non-empty list of cases", file=file)
        folder = Path(base) if base is not None else Path()
        parsed = [_case(item, index, folder, file) for index, item in enumerate(cases)]
        try:
            return cls(parsed, name)
        except InvalidDatasetError as error:
            raise InvalidDatasetError(
                error.path, error.reason, case=error.case, file=file
            ) from None


def _read(path: Path, where: str) -> Any:
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise InvalidDatasetError("", "must be a .yaml, .yml or .json file", file=where)
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise InvalidDatasetError("", "is not a regular file", file=where)
        if size > MAX_DATASET_BYTES:
            raise InvalidDatasetError(
                "", f"is {size} bytes, past the limit of {MAX_DATASET_BYTES}", file=where
            )
        raw = path.read_bytes()[: MAX_DATASET_BYTES + 1]
    except FileNotFoundError:
        raise InvalidDatasetError("", "no such file", file=where) from None
    except OSError as error:
        raise InvalidDatasetError("", f"cannot be read: {error.strerror}", file=where) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidDatasetError("", "is not UTF-8 text", file=where) from None
    if suffix == ".json":
        try:
            return json.loads(text)
        except ValueError as error:
            raise InvalidDatasetError("", f"is not valid JSON: {error}", file=where) from None
    import importlib

    yaml: Any = importlib.import_module("yaml")  # only for a YAML dataset (typed loosely)

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        reason = " ".join(str(error).split())
        raise InvalidDatasetError("", f"is not valid YAML: {reason}", file=where) from None


def _case(item: object, index: int, folder: Path, file: str | None) -> DatasetCase:
    here = f"cases[{index}]"
    if not isinstance(item, Mapping):
        raise InvalidDatasetError(here, "must be an object with name and input", file=file)
    name = item.get("name")
    named = name if isinstance(name, str) else None
    unknown = sorted(str(key) for key in item if key not in _CASE_KEYS)
    if unknown:
        raise InvalidDatasetError(
            f"{here}.{unknown[0]}",
            "is not a case field (name, input, expected, metadata)",
            case=named,
            file=file,
        )
    if not isinstance(name, str) or not name.strip():
        raise InvalidDatasetError(f"{here}.name", "must be non-empty text", file=file)
    if "input" not in item:
        raise InvalidDatasetError(f"{here}.input", "is missing", case=name, file=file)
    for field in ("expected", "metadata"):
        problem = json_problem(item.get(field), f"{here}.{field}")
        if problem is not None:
            raise InvalidDatasetError(problem[0], problem[1], case=name, file=file)
    metadata = item.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, Mapping):
        raise InvalidDatasetError(f"{here}.metadata", "must be an object", case=name, file=file)
    try:
        value = _input(item["input"], f"{here}.input", folder)
    except InvalidMessageError as error:
        raise InvalidDatasetError(error.path, error.reason, case=name, file=file) from None
    return DatasetCase(name, value, item.get("expected"), dict(metadata))


def _input(value: object, here: str, folder: Path) -> str | tuple[LLMMessage, ...]:
    """A case's input: non-empty text, or messages with media paths read as base64."""
    from .validation import load_messages

    if isinstance(value, str):
        if not value.strip():
            raise InvalidMessageError(here, "must be non-empty text or a list of messages")
        return value
    if not isinstance(value, list):
        raise InvalidMessageError(
            here, f"must be text or a list of messages, got {type(value).__name__}"
        )
    messages = [_with_files(message, f"{here}[{i}]", folder) for i, message in enumerate(value)]
    return load_messages(messages, path=here)


def _with_files(message: object, here: str, folder: Path) -> object:
    """``message`` with each media block that names a ``path`` read into a block object."""
    if not isinstance(message, Mapping) or not isinstance(message.get("content"), list):
        return message  # load_messages says what is wrong with it
    content = [
        _file_block(block, f"{here}.content[{j}]", folder)
        if isinstance(block, Mapping) and "path" in block and block.get("type") in _MEDIA
        else block
        for j, block in enumerate(message["content"])
    ]
    return {**message, "content": content}


def _file_block(block: Mapping[str, Any], here: str, folder: Path) -> object:
    from . import media

    kind = block["type"]
    unknown = sorted(str(key) for key in block if key not in _PATH_KEYS[kind])
    if unknown:
        allowed = ", ".join(sorted(_PATH_KEYS[kind] - {"type"}))
        raise InvalidMessageError(
            f"{here}.{unknown[0]}", f"is not a field of a {kind} read from a file ({allowed})"
        )
    path = block["path"]
    if not isinstance(path, str) or not path:
        raise InvalidMessageError(f"{here}.path", "must be a file path (text)")
    options = {key: block[key] for key in block if key not in ("type", "path")}
    readers: dict[str, Callable[..., object]] = {
        "image": media.image_file,
        "video": media.video_file,
        "document": media.document_file,
        "audio": media.audio_file,
    }
    reader = readers[kind]
    try:
        return reader(folder / path, **options)
    except FileNotFoundError:
        raise InvalidMessageError(f"{here}.path", f"no such file: {path}") from None
    except InvalidMessageError as error:
        field = error.path if error.path in options else "path"
        raise InvalidMessageError(f"{here}.{field}", error.reason) from None
    except OSError as error:
        raise InvalidMessageError(f"{here}.path", f"cannot read {path}: {error.strerror}") from None
    except TypeError as error:  # a wrong type for media_type, detail or filename
        raise InvalidMessageError(here, str(error)) from None


def json_problem(value: object, here: str, depth: int = 0) -> tuple[str, str] | None:
    """Where ``value`` stops being plain JSON data (objects with text keys, lists, text,
    finite numbers, booleans, null) and why, or None. YAML reads dates and other values
    a JSON report could not hold: they are refused here."""
    if depth > 100:
        return here, "nests more than 100 levels"
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (here, "must be a finite number")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{here}.{key}", "must have a text key"
            problem = json_problem(item, f"{here}.{key}", depth + 1)
            if problem is not None:
                return problem
        return None
    if isinstance(value, list | tuple):
        return _first(
            (json_problem(item, f"{here}[{i}]", depth + 1) for i, item in enumerate(value))
        )
    return here, f"must be JSON data, got {type(value).__name__}"


def _first(problems: Iterable[tuple[str, str] | None]) -> tuple[str, str] | None:
    return next((p for p in problems if p is not None), None)


def input_json(value: str | Sequence[LLMMessage]) -> Any:
    """A case's input as JSON data: the text, or the messages' JSON shape."""
    if isinstance(value, str):
        return value
    from .serialization import dump_messages

    return dump_messages(value)
