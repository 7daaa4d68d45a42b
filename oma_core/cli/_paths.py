"""Where the ``oma`` command keeps its files: keys in the user's config directory, the run
log in the user's data directory (both from ``platformdirs``); ``$OMA_HOME``, when set, holds
both instead (tests and sandboxes point it at a directory of their own)."""

from __future__ import annotations

import os
from pathlib import Path


def _home() -> Path | None:
    home = os.environ.get("OMA_HOME")
    return Path(home).expanduser() if home else None


def config_dir() -> Path:
    home = _home()
    if home is not None:
        return home
    import platformdirs

    return Path(platformdirs.user_config_dir("oma", appauthor=False))


def data_dir() -> Path:
    home = _home()
    if home is not None:
        return home
    import platformdirs

    return Path(platformdirs.user_data_dir("oma", appauthor=False))


def keys_path() -> Path:
    return config_dir() / "keys.json"


def logs_path() -> Path:
    return data_dir() / "logs.db"


def logs_off_path() -> Path:
    """A file whose presence turns the log off (``oma logs off``)."""
    return data_dir() / "logs-off"
