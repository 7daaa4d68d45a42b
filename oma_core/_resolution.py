"""What a provider name, a ``provider:model`` string and a config's options mean, and the way
out when they mean nothing: a did-you-mean and the plugin to install.

A configuration mistake is an error at once (when the agent is built, or when the run starts
for a missing key), never an empty result: ``not_registered`` builds the error for an unknown
provider or backend, ``check_provider_options`` refuses options a provider does not accept,
``check_api_key`` refuses a run without the key a provider needs, ``provider_settings`` fills
a provider's key and base URL from its spec (``api_key_env``, ``default_base_url``), and
``resolve_model`` turns
the command line's ``-p``/``-m`` (or any optional provider and model) into a provider and a
model. ``KNOWN_DISTRIBUTIONS`` names the package of this repository that provides each
provider and backend, so that an unknown name can say what to install.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

import attrs

from ._hints import KNOWN_BACKENDS, KNOWN_DISTRIBUTIONS, not_registered, suggest
from ._origin import custom_host
from .errors import MissingKeyError, MissingProviderError, OptionTypeError, UnknownOptionError

if TYPE_CHECKING:
    from .capabilities import ProviderSpec
    from .plugins import PluginHost
    from .providers import ProviderSettings

__all__ = [
    "KNOWN_BACKENDS",
    "KNOWN_DISTRIBUTIONS",
    "check_api_key",
    "check_provider_options",
    "not_registered",
    "provider_settings",
    "resolve_model",
    "suggest",
]

_MODEL_FAMILIES: Final = (
    ("claude", "anthropic"),
    ("gpt-", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("gemini", "gemini"),
    ("mistral", "mistral"),
    ("magistral", "mistral"),
    ("codestral", "mistral"),
    ("pixtral", "mistral"),
    ("ministral", "mistral"),
    ("deepseek", "deepseek"),
    ("minimax", "minimax"),
    ("amazon.", "bedrock"),
    ("anthropic.", "bedrock"),
    ("meta.", "bedrock"),
)


#: The ``AgentConfig`` fields every provider maps to its wire (not provider options).
_PORTABLE = ("temperature", "max_tokens", "stop")


def _portable_meant(unknown: Sequence[str]) -> str | None:
    """The portable ``AgentConfig`` field an unknown option's name is close to, if any."""
    return next((name for key in unknown for name in suggest(key, _PORTABLE)), None)


def check_provider_options(spec: ProviderSpec, options: Mapping[str, object]) -> None:
    """Refuse ``options`` that ``spec`` does not declare (its ``provider_options``; None
    accepts every name and value): an unknown name is an ``UnknownOptionError`` with a
    did-you-mean, a value of the wrong type an ``OptionTypeError`` naming the type."""
    accepted = spec.provider_options
    if accepted is None:
        return
    unknown = sorted(str(key) for key in options if key not in accepted)
    if unknown:
        names = sorted(accepted)
        close = tuple(dict.fromkeys(s for key in unknown for s in suggest(key, names)))
        message = f"unknown provider_options for {spec.name}: {', '.join(map(repr, unknown))}"
        # every provider takes AgentConfig's own settings, whatever options it declares
        if exact := next((key for key in unknown if key in _PORTABLE), None):
            close = (exact,)
            message += f" ({exact} is not a provider option: set AgentConfig.{exact})"
        elif close:
            message += f" (did you mean {' or '.join(map(repr, close))}?)"
        elif portable := _portable_meant(unknown):
            close = (portable,)
            message += f" (did you mean {portable!r}? set AgentConfig.{portable})"
        message += f"; {spec.name} accepts: {', '.join(names) or 'none'}"
        raise UnknownOptionError(
            message, name=spec.name, options=unknown, accepted=names, suggestions=close
        )
    for key, value in options.items():
        option = accepted[key]
        if not option.accepts(value):
            got = type(value).__name__
            raise OptionTypeError(
                f'provider_options["{key}"] for {spec.name} must be {option.type_name}, not {got}',
                name=spec.name,
                option=key,
                expected=option.type_name,
                got=got,
            )


def check_api_key(
    spec: ProviderSpec,
    api_key: str | None,
    environ: Mapping[str, str] | None = None,
    *,
    base_url: str | None = None,
) -> None:
    """Raise ``MissingKeyError`` when ``spec`` needs a key and neither ``api_key`` nor any of
    its ``api_key_env`` variables (in ``environ``, the process environment by default) holds
    one. The error names where a key comes from (for a ``base_url`` of another host than the
    provider's own, a key for that host's origin), never a key."""
    if not spec.requires_api_key or api_key:
        return
    env = os.environ if environ is None else environ
    variables = spec.key_variables
    if any(env.get(variable) for variable in variables):
        return
    host = custom_host(base_url, spec.default_base_url)
    raise MissingKeyError(spec.name, variables, display_name=spec.display_name, host=host)


def provider_settings(
    spec: ProviderSpec, settings: ProviderSettings, environ: Mapping[str, str] | None = None
) -> ProviderSettings:
    """``settings`` with what its spec says fills the gaps: ``api_key``, when None, from the
    first of ``api_key_env``'s variables that is set (in ``environ``, the process environment
    by default); ``base_url``, when None, is ``default_base_url``. The one rule for every
    provider built on the toolkit's ``HttpProvider``, so no plugin repeats its variable or
    its URL; a key given in ``AgentConfig.api_key`` always wins over the environment."""
    env = os.environ if environ is None else environ
    api_key = settings.api_key
    if not api_key:
        api_key = next((env[v] for v in spec.key_variables if env.get(v)), None)
    base_url = settings.base_url or spec.default_base_url
    return attrs.evolve(settings, api_key=api_key, base_url=base_url)


def resolve_model(
    provider: str | None, model: str | None, *, plugins: PluginHost | None = None
) -> tuple[str, str | None]:
    """The provider and model that an optional provider and an optional model name.

    - ``model="anthropic:claude-sonnet-4-6"``: the part before the first colon, when it is a
      registered provider, is the provider (``provider`` may be None or say the same);
    - with a provider named, any other model is taken as it is (``ft:gpt-4o:acme``);
    - a provider alone gets its spec's ``default_model`` (None when it has none);
    - a model without a provider is a ``MissingProviderError`` that names the fix (the
      ``provider:model`` spelling, guessed from the model's name when it can be), or a
      ``NotRegisteredError`` with the install hint when its prefix names a provider whose
      plugin is not installed;
    - neither: ``("echo", None)``, the offline provider.

    The provider is checked to be registered in ``plugins`` (the process-wide host by
    default). ``AgentConfig`` itself keeps ``provider="echo"`` as its default; this is for a
    caller (the ``oma`` command) where a model alone must not fall back to echo.
    """
    if plugins is None:
        from .plugins import PluginHost

        plugins = PluginHost.default()
    specs = plugins.provider_specs()
    if model is not None and ":" in model:
        prefix, _, rest = model.partition(":")
        if prefix in specs and provider in (None, prefix):
            return prefix, rest or specs[prefix].default_model
        if provider is None:
            if prefix in KNOWN_DISTRIBUTIONS or suggest(prefix, {*specs, *KNOWN_DISTRIBUTIONS}):
                plugins.provider_spec(prefix)  # raises: not registered, with the install hint
            raise MissingProviderError(model, _guess(model))
    if provider is None:
        if model is None:
            return "echo", specs["echo"].default_model if "echo" in specs else None
        raise MissingProviderError(model, _guess(model))
    spec = plugins.provider_spec(provider)
    return provider, model if model is not None else spec.default_model


def _guess(model: str) -> str | None:
    """``provider:model`` for a model whose name shows its provider (``claude-...``)."""
    lowered = model.lower()
    for start, provider in _MODEL_FAMILIES:
        if lowered.startswith(start):
            return f"{provider}:{model}"
    return None
