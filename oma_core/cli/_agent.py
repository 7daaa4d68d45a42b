"""The agent a command builds: which provider and model (``-m``, ``-p``, ``$OMA_MODEL``,
``$OMA_PROVIDER``, the stored default), its options (``-o NAME VALUE``) and its key.

Which provider and model, first found wins: ``-m``/``-p`` (a template's through ``-t``), then
``$OMA_MODEL``/``$OMA_PROVIDER``, then the default stored with ``oma models default
PROVIDER:MODEL``, then the offline echo provider. Echo chosen that way says so once per
command on stderr (``note: no model configured ...``), only when stderr is a terminal: a
hint for a person, kept out of scripts' and pipes' stderr. ``-p echo`` chooses it quietly.

- ``-m provider:model`` names both; ``-p`` names the provider (then ``-m`` is the model as the
  provider spells it, ``ft:gpt-4o:acme`` included);
- ``-m MODEL`` with no provider anywhere is a usage error naming the fix: it never falls back
  to the offline echo provider, which answers only when nothing is configured;
- ``-o temperature|max_tokens|stop VALUE`` set the portable ``AgentConfig`` fields; any other
  name goes to ``provider_options`` (the provider says which it accepts); a VALUE is JSON
  when it parses as JSON, else the string;
- the key: ``--api-key``, else the key stored for the provider and the base URL's host,
  else the provider's environment variable (read by the plugin), else the key stored with
  ``oma keys set PROVIDER`` when the run talks to the provider's own host
  (``_keys.KeyResolver``; a note says so when that key was held back from another host);
  ``--api-key`` gives a warning: other processes of the user can read it in /proc.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
import click

from ._exits import note, usage

if TYPE_CHECKING:
    from ..agent import Agent
    from ..capabilities import ProviderSpec
    from ..plugins import PluginHost

#: ``-o`` names that are ``AgentConfig`` fields, portable across providers.
PORTABLE_OPTIONS = ("temperature", "max_tokens", "stop")


@attrs.frozen
class AgentOptions:
    """The agent options of ``run`` and ``render``, as given on the command line."""

    provider: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    base_url: str | None = None
    api_key: str | None = attrs.field(default=None, repr=False)
    options: tuple[tuple[str, str], ...] = ()


def provider_and_model(
    provider: str | None, model: str | None, host: PluginHost
) -> tuple[str, str | None]:
    """The provider and model to run (``oma_core.resolve_model`` on the options, with
    ``$OMA_PROVIDER`` and ``$OMA_MODEL`` as their defaults): see the module docstring."""
    from .._resolution import resolve_model
    from ..errors import MissingProviderError

    from_env = model is None and bool(os.environ.get("OMA_MODEL"))
    model = model or os.environ.get("OMA_MODEL") or None
    provider = provider or os.environ.get("OMA_PROVIDER") or None
    try:
        return resolve_model(provider, model, plugins=host)
    except MissingProviderError as exc:  # said the command line's way
        fix = exc.suggestion or f"PROVIDER:{model}"
    where = f"$OMA_MODEL={model}" if from_env else f"-m {model}"
    spec = host.provider_specs().get(model or "")
    if spec is not None:
        usage(f"{where} names the provider {spec.name}, not a model: {_provider_models(spec)}")
    installed = ", ".join(sorted(host.provider_specs())) or "none"
    usage(
        f"{where} names no provider: write -m {fix} or add -p PROVIDER "
        f"(installed providers: {installed})"
    )


#: How many of a provider's known models a hint names.
_MODELS_SHOWN = 4


def _provider_models(spec: ProviderSpec) -> str:
    """How to name a model of ``spec``: ``-m NAME:MODEL`` with a few of its known models,
    or ``-p NAME`` alone for its default."""
    name = spec.name
    shown = spec.known_models[:_MODELS_SHOWN]
    models = ""
    if shown:
        more = "include " if len(spec.known_models) > len(shown) else "are "
        models = f" (its models {more}{', '.join(shown)}; oma models {name} lists them)"
    if spec.default_model is None:
        return f"write -m {name}:MODEL{models}"
    return f"write -m {name}:MODEL{models}, or -p {name} alone for its default model " + (
        spec.default_model
    )


def _stderr_is_a_terminal() -> bool:
    import sys

    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed
        return False


def _key_in_environment(provider: str, host: PluginHost) -> bool:
    spec = host.provider_specs().get(provider)
    return spec is not None and any(os.environ.get(name) for name in spec.key_variables)


def _warn_of_api_key(provider: str, base_url: str | None, host: PluginHost) -> None:
    """``--api-key`` lands in this process's command line, which every process of the same
    user (an MCP server this run starts, say) can read in /proc: one warning line naming
    the safer ways, the keys store for the run's host and the provider's variable."""
    spec = host.provider_specs().get(provider)
    store = keys_set_command(provider, base_url, host)
    variables = spec.key_variables if spec is not None else ()
    env = f" (or set {' or '.join(variables)})" if variables else ""
    click.echo(
        "warning: --api-key puts the key on the command line, where other processes of your "
        f"user (an MCP server, say) can read it from /proc; store it instead with: {store}{env}",
        err=True,
    )


def keys_set_command(provider: str | None, base_url: str | None, host: PluginHost) -> str:
    """The ``oma keys set`` command storing the key a run of ``provider`` at ``base_url``
    would use: ``--base-url ORIGIN`` when that is another host than the provider's own
    (``PROVIDER`` when no provider is known)."""
    from .._origin import custom_host

    spec = host.provider_specs().get(provider or "")
    default = spec.default_base_url if spec is not None else None
    at = custom_host(base_url, default)
    return f"oma keys set {provider or 'PROVIDER'}" + (f" --base-url {at}" if at else "")


def parse_value(text: str) -> Any:
    """``-o`` values: JSON when they parse (``0.2``, ``500``, ``["a"]``, ``true``), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def split_options(options: Sequence[tuple[str, str]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``-o`` pairs as (portable ``AgentConfig`` fields, ``provider_options``)."""
    portable: dict[str, Any] = {}
    provider_options: dict[str, Any] = {}
    for name, text in options:
        value = parse_value(text)
        if name == "stop":
            portable["stop"] = [value] if isinstance(value, str) else value
        elif name in PORTABLE_OPTIONS:
            portable[name] = value
        else:
            provider_options[name] = value
    return portable, provider_options


#: What each portable ``-o`` option takes, in the command's words.
_PORTABLE_WANTED = {
    "temperature": "a number >= 0",
    "max_tokens": "a whole number >= 1",
    "stop": "text or a JSON list of texts",
}
#: The longest shown part of a refused ``-o`` value.
_SHOWN = 40


def _portable_fits(name: str, value: Any) -> bool:
    """Whether ``value`` (an ``-o`` value as read, JSON or text) suits the portable option
    ``name``; null leaves it unset."""
    import math

    if value is None:
        return True
    if name == "temperature":
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return number and math.isfinite(value) and value >= 0
    if name == "max_tokens":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    texts = value if isinstance(value, list) else [value]
    return bool(texts) and all(isinstance(text, str) and text for text in texts)


def _shown(value: Any) -> str:
    """An ``-o`` value as the refusal names it: ``text 'hot'``, or its JSON (``true``,
    ``-1``, ``["a", 1]``), cut to a few dozen characters."""
    if isinstance(value, str):
        return "empty text" if not value else f"text {value[:_SHOWN]!r}"
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= _SHOWN else shown[:_SHOWN] + "..."


def check_portable(options: Sequence[tuple[str, str]]) -> None:
    """``-o temperature|max_tokens|stop VALUE`` checked in the command's words (what the
    option takes, what was given), one usage error, before ``AgentConfig`` says it in
    Python's (``... or None, got int``)."""
    for name, text in options:
        if name not in _PORTABLE_WANTED:
            continue
        value = parse_value(text)
        if _portable_fits(name, value):
            continue
        hint = ""
        if name == "stop" and isinstance(value, int | float):  # a number or true read as JSON
            hint = f""" (VALUE is read as JSON when it parses: -o stop '"{text}"' gives the text)"""
        usage(f"-o {name} must be {_PORTABLE_WANTED[name]}, not {_shown(value)}{hint}")


def make_agent(
    options: AgentOptions,
    host: PluginHost,
    backend: dict[str, Any] | None = None,
) -> Agent:
    """The agent to run; a wrong option value is a usage error naming it."""
    from ..agent import Agent, AgentConfig
    from ._keys import KeyResolver

    model_given = options.model
    unconfigured = backend is None and not any(
        (
            options.provider,
            options.model,
            os.environ.get("OMA_PROVIDER"),
            os.environ.get("OMA_MODEL"),
        )
    )
    if unconfigured:
        from ._settings import default_model

        model_given = default_model()
        unconfigured = model_given is None
        stored_provider = (model_given or "").partition(":")[0]
        if model_given is not None and stored_provider not in host.provider_specs():
            usage(
                f"the default model {model_given} (set with oma models default) needs provider "
                f"{stored_provider}, which is not installed: install its plugin, or name "
                "another model with -m or oma models default PROVIDER:MODEL"
            )
    provider, model = provider_and_model(options.provider, model_given, host)
    if unconfigured and provider == "echo" and _stderr_is_a_terminal():
        note("no model configured: the offline echo provider answers (oma models default sets one)")
    check_portable(options.options)
    portable, provider_options = split_options(options.options)
    api_key = options.api_key
    if api_key is not None:
        _warn_of_api_key(provider, options.base_url, host)
    if backend is None:
        resolver = KeyResolver(host)
        api_key = resolver.key(provider, api_key, options.base_url)
        withheld = None if api_key is not None else resolver.withheld(provider, options.base_url)
        if withheld is not None and not _key_in_environment(provider, host):
            note(withheld)
    try:
        config = AgentConfig(
            name="oma",
            provider=provider,
            model=model,
            system_prompt=options.system_prompt,
            base_url=options.base_url,
            api_key=api_key,
            backend=backend,
            provider_options=provider_options,
            **portable,
        )
    except (TypeError, ValueError) as exc:
        message = str(exc)
    else:
        return Agent(config, plugins=host)
    usage(f"-o {message}")
