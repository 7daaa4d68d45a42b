"""The ``oma`` command's settings file (``settings.json`` in the config directory, beside the
keys): today the default model ``oma models default PROVIDER:MODEL`` stores. Written whole
and atomically (a temporary file of mode 0600, renamed), so a reader never sees half of it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ._exits import usage
from ._paths import config_dir

#: Larger than any settings file oma writes; a bigger one is refused unread.
MAX_SETTINGS_BYTES = 64 * 1024


def settings_path() -> Path:
    return config_dir() / "settings.json"


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically: a temporary file of mode 0600 in the same
    directory (created 0700 when missing), synced, then renamed over ``path``."""
    import tempfile

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), 0o600)
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_settings() -> dict[str, Any]:
    """The settings (empty when there is no file); a malformed file is a usage error."""
    path = settings_path()
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_SETTINGS_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        usage(f"cannot read the settings file {path}: {exc.strerror or exc}")
    if len(raw) > MAX_SETTINGS_BYTES:
        usage(f"the settings file {path} is larger than {MAX_SETTINGS_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        usage(f"the settings file {path} is not JSON: {exc}")
    if not isinstance(data, dict):
        usage(f"the settings file {path} must hold a JSON object")
    return data


def default_model() -> str | None:
    """The stored default ``PROVIDER:MODEL``, or None when none is stored."""
    value = read_settings().get("default_model")
    if value is not None and not isinstance(value, str):
        usage(f"the settings file {settings_path()}: default_model must be a string")
    return value or None


def store_default_model(value: str) -> Path:
    """Store ``PROVIDER:MODEL`` as the default model, keeping the other settings."""
    settings = read_settings()
    settings["default_model"] = value
    path = settings_path()
    write_private(path, json.dumps(settings, ensure_ascii=False, indent=2) + "\n")
    return path
