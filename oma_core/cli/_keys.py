"""``oma keys``: API keys stored for the ``oma`` command, and which key a run uses.

Keys live in ``keys.json`` in the user's config directory (``oma keys path``), a JSON object
of name -> key at mode 0600, kept by ``_keystore.KeyStore`` (one writer at a time, atomic
writes, a hostile file or directory refused). A run's key is, first to last: ``--api-key``,
the provider's environment variable (``ProviderSpec.api_key_env``), the stored key of the
provider's name; ``KeyResolver`` is that rule, for every command that builds agents. A key is
never printed (but by ``oma keys get``), logged or put in an error.
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING

import click

from ._exits import command_guard, stdin_is_piped, usage
from ._keystore import KeyStore
from ._paths import keys_path

if TYPE_CHECKING:
    from ..plugins import PluginHost


class KeyResolver:
    """Which key each agent of one command runs with: the one rule for ``oma run``, ``oma
    tasks`` and ``oma team``.

    First to last: the key given (``--api-key``, or ``api_key`` in an agents file); None when
    one of the provider's environment variables is set (the plugin reads it); the key stored
    under the provider's name. The keys file is read at most once, and only for a provider
    that takes a key (an echo run never opens it); a file others can read gives a warning
    with the fix, and its key is used; a file others can write is refused.
    """

    def __init__(self, host: PluginHost, store: KeyStore | None = None) -> None:
        self._host = host
        self._store = store or KeyStore.default()
        self._keys: dict[str, str] | None = None

    def key(self, provider: str | None, given: str | None = None) -> str | None:
        if given is not None:
            return given
        spec = self._host.provider_specs().get(provider) if provider else None
        if spec is None or not (spec.requires_api_key or spec.key_variables):
            return None
        if any(os.environ.get(variable) for variable in spec.key_variables):
            return None
        return self._stored().get(spec.name)

    def _stored(self) -> dict[str, str]:
        if self._keys is None:
            self._keys = read_keys(self._store)
        return self._keys


def read_keys(store: KeyStore) -> dict[str, str]:
    """The stored keys, with a warning on stderr when others can read them."""
    keys, mode = store.read()
    if mode is not None and mode & 0o044:
        path = store.path
        click.echo(
            f"warning: {path} can be read by others (mode {mode:o}); run: chmod 600 {path}",
            err=True,
        )
    return keys


#: A name ``oma keys set`` takes: what a provider can be called, never a path.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _check_name(name: str, force: bool) -> None:
    """Refuse a name no provider could have, and one no installed provider has (unless
    ``force``): a typo would otherwise store a key no run ever reads."""
    from ..plugins import PluginHost
    from ..resolution import suggest

    if not _NAME.fullmatch(name):
        usage(
            f"{name!r} is not a provider name (letters, digits, '-', '_' and '.', "
            "starting with a letter or digit, at most 64)"
        )
    installed = PluginHost.default().provider_specs()
    if name in installed or force:
        return
    close = suggest(name, installed)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    usage(
        f"no installed provider is named {name}{hint} (installed: "
        f"{', '.join(sorted(installed)) or 'none'}); pass --force to store it anyway"
    )


# -- the commands ------------------------------------------------------------------------------


@click.group()
def keys() -> None:
    """Store API keys for providers (names only are ever shown)."""


@keys.command("set")
@click.argument("name")
@click.option("--force", is_flag=True, help="Store it even when no installed provider has NAME.")
@command_guard
def keys_set(name: str, force: bool) -> None:
    """Store the key for NAME (a provider name, e.g. openai): typed hidden, or piped."""
    _check_name(name, force)
    if stdin_is_piped():
        value = sys.stdin.readline().strip()
    else:
        try:
            value = click.prompt(f"Key for {name}", hide_input=True, err=True).strip()
        except click.Abort:
            raise SystemExit(130) from None
    if not value:
        usage("no key given")
    store = KeyStore.default()
    store.set(name, value)
    click.echo(f"stored the key for {name} in {store.path}", err=True)


@keys.command("get")
@click.argument("name")
@command_guard
def keys_get(name: str) -> None:
    """Print the stored key for NAME on stdout (for scripts: KEY=$(oma keys get openai))."""
    stored = read_keys(KeyStore.default())
    if name not in stored:
        usage(f"no key is stored for {name}")
    click.echo(stored[name])


@keys.command("list")
@command_guard
def keys_list() -> None:
    """Print the names of the stored keys, one per line."""
    for name in sorted(read_keys(KeyStore.default())):
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
    if not KeyStore.default().remove(name):
        usage(f"no key is stored for {name}")
    click.echo(f"removed the key for {name}", err=True)
