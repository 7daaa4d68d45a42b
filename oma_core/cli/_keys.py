"""``oma keys``: API keys stored for the ``oma`` command, and which key a run uses.

Keys live in ``keys.json`` in the user's config directory (``oma keys path``), a JSON object
of name -> key, written with mode 0600 (a file others can read is refused). A run's key is,
first to last: ``--api-key``, the provider's environment variable (``ProviderSpec.api_key_env``),
the stored key of the provider's name. A key is never printed, logged or put in an error.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ._exits import command_guard, fail, note, stdin_is_piped, usage
from ._paths import keys_path


def load_keys(path: Path | None = None) -> dict[str, str]:
    """The stored keys (empty when there is no file); a broken or open file is refused."""
    path = path or keys_path()
    if not path.exists():
        return {}
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        fail(f"{path} can be read by others (mode {mode:o}); run: chmod 600 {path}", 2)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        fail(f"{path} is not a JSON object of keys; fix or remove it", 2)
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        fail(f"{path} is not a JSON object of name -> key strings; fix or remove it", 2)
    return dict(data)


def save_keys(keys: dict[str, str], path: Path | None = None) -> None:
    path = path or keys_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(keys, indent=2, sort_keys=True) + "\n"
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)


def stored_key(provider: str, variables: Sequence[str]) -> str | None:
    """The key a run of ``provider`` uses when no ``--api-key`` is given: None when one of
    the provider's environment variables is set (the plugin reads it) or nothing is stored."""
    if any(os.environ.get(variable) for variable in variables):
        return None
    return load_keys().get(provider)


@click.group()
def keys() -> None:
    """Store API keys for providers (names only are ever shown)."""


@keys.command("set")
@click.argument("name")
@command_guard
def keys_set(name: str) -> None:
    """Store the key for NAME (a provider name, e.g. openai): typed hidden, or piped."""
    if stdin_is_piped():
        value = sys.stdin.readline().strip()
    else:
        try:
            value = click.prompt(f"Key for {name}", hide_input=True, err=True).strip()
        except click.Abort:
            raise SystemExit(130) from None
    if not value:
        usage("no key given")
    stored = load_keys()
    stored[name] = value
    save_keys(stored)
    click.echo(f"stored the key for {name} in {keys_path()}", err=True)
    from ..plugins import PluginHost

    installed = PluginHost.default().provider_specs()
    if name not in installed:
        note(f"no installed provider is named {name}; `oma run -p {name}` would use this key")


@keys.command("list")
@command_guard
def keys_list() -> None:
    """Print the names of the stored keys, one per line."""
    for name in sorted(load_keys()):
        click.echo(name)


@keys.command("path")
def keys_path_command() -> None:
    """Print where the keys are stored."""
    click.echo(str(keys_path()))


@keys.command("remove")
@click.argument("name")
@command_guard
def keys_remove(name: str) -> None:
    """Forget the stored key for NAME."""
    stored = load_keys()
    if name not in stored:
        usage(f"no key is stored for {name}")
    del stored[name]
    save_keys(stored)
    click.echo(f"removed the key for {name}", err=True)
