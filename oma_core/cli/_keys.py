"""``oma keys``: API keys stored for the ``oma`` command, and which key a run uses.

Keys live in ``keys.json`` in the user's config directory (``oma keys path``), a JSON object
of entry -> key at mode 0600, kept by ``_keystore.KeyStore`` (one writer at a time, atomic
writes, a hostile file or directory refused). An entry is a provider's name (``openai``: its
key for the provider's own host) or a provider's name and a normalised origin
(``openai@http://127.0.0.1:8080``: stored with ``oma keys set openai --base-url URL``, its
key for that host only).

A run's key (``KeyResolver``, the one rule for every command that builds agents), first to
last: ``--api-key``; the key stored for the provider and the origin the run talks to; the
provider's environment variable (``ProviderSpec.api_key_env``, read by the plugin); the
provider's own stored key, only when the run talks to the provider's default host (no base
URL, or one of the origin of ``ProviderSpec.default_base_url``). A provider-wide key is
never sent to another host: a custom base URL (``--base-url``, or one ``-c`` reuses) gets a
key stored for its origin, or none. A key is never printed (but by ``oma keys get``), logged
or put in an error: a key the host refuses (HTTP 401/403) is named by where it came from, with
the command that replaces it (``key_advice``).
"""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING

import click

from .._origin import custom_host, origin
from ._exits import command_guard, stdin_is_piped, usage
from ._keystore import KeysFileError, KeyStore
from ._paths import keys_path

if TYPE_CHECKING:
    from ..agent import Agent
    from ..plugins import PluginHost


class KeyResolver:
    """Which key each agent of one command runs with: the one rule for ``oma run``, ``oma
    tasks`` and ``oma team`` (the module docstring says it).

    The keys file is read at most once, and only for a provider that takes a key or a run
    given a base URL (an echo run never opens it); a file others can read gives a warning
    with the fix, and its key is used; a file others can write is refused.
    """

    def __init__(self, host: PluginHost, store: KeyStore | None = None) -> None:
        self._host = host
        self._store = store or KeyStore.default()
        self._keys: dict[str, str] | None = None

    def key(
        self, provider: str | None, given: str | None = None, base_url: str | None = None
    ) -> str | None:
        """The key to run ``provider`` against ``base_url`` (None: its default host) with;
        None leaves it to the plugin (its environment variable, or no key)."""
        if given is not None:
            return given
        spec = self._host.provider_specs().get(provider) if provider else None
        if spec is None:
            return None
        takes_key = spec.requires_api_key or bool(spec.key_variables)
        if not takes_key and base_url is None:
            return None
        where = origin(base_url or spec.default_base_url)
        if where is not None:
            stored = self._stored(strict=takes_key).get(host_entry(spec.name, where))
            if stored is not None:
                return stored
        if not takes_key or any(os.environ.get(variable) for variable in spec.key_variables):
            return None
        if self.default_host(spec.name, base_url):
            return self._stored().get(spec.name)
        return None

    def withheld(self, provider: str, base_url: str | None) -> str | None:
        """Why a run of ``provider`` against a custom ``base_url`` got no stored key although
        the provider has one (a note for the user), or None."""
        if base_url is None or self.default_host(provider, base_url):
            return None
        if provider not in self._stored(strict=False):
            return None
        where = origin(base_url)
        if where is None:  # never the URL itself: it may hold a password or a token
            return None
        return (
            f"the key stored for {provider} is sent only to its default host, not to {where}; "
            f"store one for that host with: oma keys set {provider} --base-url {where}"
        )

    def default_host(self, provider: str, base_url: str | None) -> bool:
        """Whether a run of ``provider`` against ``base_url`` talks to the provider's own
        host (no base URL, or one of the origin of its ``default_base_url``)."""
        if base_url is None:
            return True
        spec = self._host.provider_specs().get(provider)
        default = origin(spec.default_base_url) if spec is not None else None
        return default is not None and origin(base_url) == default

    def _stored(self, strict: bool = True) -> dict[str, str]:
        """The stored keys; a store that cannot be trusted is an error when ``strict`` (the
        run needs a key) and no keys otherwise (a keyless run is never blocked by it)."""
        if self._keys is None:
            try:
                self._keys = read_keys(self._store)
            except KeysFileError:
                if strict:
                    raise
                return {}
        return self._keys


def key_advice(error: object, agent: Agent, given: str = "with --api-key") -> str:
    """For a run its host refused for its key (``ProviderError`` HTTP 401 or 403): `` (...)``
    saying where the key came from (``--api-key``, or where ``given`` says, the environment
    variable by name, or the store and for which host) and the command that replaces it;
    never the key. Else ""."""
    from ..errors import ProviderError

    config = agent.config
    if not isinstance(error, ProviderError) or error.status_code not in (401, 403):
        return ""
    if config.backend is not None or not isinstance(config.provider, str):
        return ""
    spec = agent.plugins.provider_specs().get(config.provider)
    if spec is None:
        return ""
    name, custom = spec.name, custom_host(config.base_url, spec.default_base_url)
    for_host = f"oma keys set {name}" + (f" --base-url {custom}" if custom else "")
    if config.api_key is None:
        variable = next((v for v in spec.key_variables if os.environ.get(v)), None)
        if variable is None:
            return f" (no key was given; store one for this host with: {for_host})"
        if custom is None:  # the variable comes before the provider's stored key
            return (
                f" (the key in ${variable} was refused; set {variable} to a valid key, or "
                f"unset it and store one with: {for_host})"
            )
        return (
            f" (the key in ${variable} was refused; set {variable} to a valid key, or store "
            f"one for this host with: {for_host})"
        )
    try:
        stored, _ = KeyStore.default().read()
    except KeysFileError:
        stored = {}
    where = origin(config.base_url or spec.default_base_url)
    entries = [host_entry(name, where)] if where is not None else []
    if custom is None:
        entries.append(name)
    entry = next((e for e in entries if stored.get(e) == config.api_key), None)
    if entry is None:
        return (
            f" (the key given {given} was refused; give a valid one, or store it with: {for_host})"
        )
    at = entry.partition("@")[2]
    again = f"oma keys set {name}" + (f" --base-url {at}" if at else "")
    return f" (the key stored for {_shown(entry)} was refused; replace it with: {again})"


def host_entry(provider: str, where: str) -> str:
    """The keys file's entry for ``provider``'s key at origin ``where``."""
    return f"{provider}@{where}"


def _entry(name: str, base_url: str | None) -> str:
    """The entry ``oma keys set/get/remove NAME [--base-url URL]`` means."""
    if base_url is None:
        return name
    where = origin(base_url)
    if where is None:
        usage(f"--base-url {base_url!r} is not an http:// or https:// URL with a host")
    return host_entry(name, where)


def _shown(entry: str) -> str:
    """An entry as ``oma keys`` names it: ``openai``, or ``openai`` and its host."""
    name, at, where = entry.partition("@")
    return f"{name} {where}" if at else name


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
    from .._resolution import suggest
    from ..plugins import PluginHost

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


_BASE_URL = click.option(
    "--base-url",
    metavar="URL",
    help="The key for this host only (its origin: scheme, host and port).",
)


@keys.command("set")
@click.argument("name")
@_BASE_URL
@click.option("--force", is_flag=True, help="Store it even when no installed provider has NAME.")
@command_guard
def keys_set(name: str, base_url: str | None, force: bool) -> None:
    """Store the key for NAME (a provider name, e.g. openai): typed hidden, or piped.

    Without --base-url the key is sent only to the provider's own host; with it, only to
    that URL's host."""
    _check_name(name, force)
    entry = _entry(name, base_url)
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
    store.set(entry, value)
    click.echo(f"stored the key for {_shown(entry)} in {store.path}", err=True)


@keys.command("get")
@click.argument("name")
@_BASE_URL
@command_guard
def keys_get(name: str, base_url: str | None) -> None:
    """Print the stored key for NAME on stdout (for scripts: KEY=$(oma keys get openai))."""
    entry = _entry(name, base_url)
    stored = read_keys(KeyStore.default())
    if entry not in stored:
        usage(f"no key is stored for {_shown(entry)}")
    click.echo(stored[entry])


@keys.command("list")
@command_guard
def keys_list() -> None:
    """Print the stored keys' names, one per line: a provider's name (its own host), or a
    provider's name and the host its key is for."""
    for entry in sorted(read_keys(KeyStore.default())):
        click.echo(_shown(entry))


@keys.command("path")
def keys_path_command() -> None:
    """Print where the keys are stored."""
    click.echo(str(keys_path()))


@keys.command("remove")
@click.argument("name")
@_BASE_URL
@command_guard
def keys_remove(name: str, base_url: str | None) -> None:
    """Forget the stored key for NAME (for one host with --base-url)."""
    entry = _entry(name, base_url)
    if not KeyStore.default().remove(entry):
        usage(f"no key is stored for {_shown(entry)}")
    click.echo(f"removed the key for {_shown(entry)}", err=True)
