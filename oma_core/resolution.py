"""What a provider name, a ``provider:model`` string and a config's options mean, and the way
out when they mean nothing: a did-you-mean and the plugin to install.

A configuration mistake is an error at once (when the agent is built, or when the run starts
for a missing key), never an empty result: ``not_registered`` builds the error for an unknown
provider or backend, ``check_provider_options`` refuses options a provider does not accept,
``check_api_key`` refuses a run without the key a provider needs, and ``resolve_model`` turns
the command line's ``-p``/``-m`` (or any optional provider and model) into a provider and a
model. ``KNOWN_DISTRIBUTIONS`` names the package of this repository that provides each
provider and backend, so that an unknown name can say what to install.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

from .errors import (
    MissingKeyError,
    MissingProviderError,
    NotRegisteredError,
    OptionTypeError,
    UnknownOptionError,
)

if TYPE_CHECKING:
    from .capabilities import ProviderSpec
    from .plugins import PluginHost

__all__ = [
    "KNOWN_BACKENDS",
    "KNOWN_DISTRIBUTIONS",
    "check_api_key",
    "check_provider_options",
    "not_registered",
    "resolve_model",
    "suggest",
]

#: Provider names the plugins of this repository register, and the distribution of each
#: (``plugins/<distribution>/``); held to the plugins' own registrations by a test.
KNOWN_DISTRIBUTIONS: Final[Mapping[str, str]] = {
    "anthropic": "oma-anthropic",
    "bedrock": "oma-bedrock",
    "gemini": "oma-gemini",
    "litellm": "oma-litellm",
    "mistral": "oma-mistral",
    **{
        name: "oma-openai"
        for name in (
            "openai",
            "minimax",
            "deepseek",
            "groq",
            "openrouter",
            "together",
            "ollama",
            "vllm",
            "lmstudio",
            "openai-compatible",
        )
    },
}

#: Backend kinds the plugins of this repository register, and the distribution of each.
KNOWN_BACKENDS: Final[Mapping[str, str]] = {"acp": "oma-acp", "process": "oma-process"}

#: Model-name beginnings and the provider that serves them, to suggest ``provider:model``.
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


def suggest(name: str, names: Iterable[str]) -> tuple[str, ...]:
    """The names close to ``name`` (difflib's did-you-mean), closest first, at most three."""
    return tuple(difflib.get_close_matches(name, list(names), n=3, cutoff=0.7))


def not_registered(
    name: str, available: Iterable[str], *, kind: str = "provider", note: str = ""
) -> NotRegisteredError:
    """The error for a provider (``kind="provider"``) or backend kind (``"backend"``) no
    plugin registered: what is available, the close names, and which package to install when
    this repository has a plugin for the name (or for the close name it was probably meant to
    be). ``note`` is appended (plugins that failed to load)."""
    available = tuple(available)
    known = KNOWN_DISTRIBUTIONS if kind == "provider" else KNOWN_BACKENDS
    suggestions = suggest(name, {*available, *known})
    meant = name if name in known else next((s for s in suggestions if s not in available), None)
    distribution = known.get(meant) if meant is not None else None
    if name in known:  # the right name, its plugin missing: a did-you-mean would only confuse
        suggestions = ()
    what = "provider" if kind == "provider" else "backend kind"
    plural = "providers" if kind == "provider" else "backends"
    message = f"unknown {what} {name!r}"
    if suggestions:
        message += f" (did you mean {' or '.join(repr(s) for s in suggestions)}?)"
    message += f"; available {plural}: {', '.join(available) or 'none'}"
    if distribution is not None:
        message += (
            f'. The {what} "{meant}" comes from the {distribution} plugin, which is not '
            f"installed: pip install {distribution} (from a checkout of oma: "
            f"pip install -e plugins/{distribution})"
        )
    return NotRegisteredError(
        message + note,
        name=name,
        kind=kind,
        available=available,
        suggestions=suggestions,
        distribution=distribution,
    )


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
        if close:
            message += f" (did you mean {' or '.join(map(repr, close))}?)"
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
    spec: ProviderSpec, api_key: str | None, environ: Mapping[str, str] | None = None
) -> None:
    """Raise ``MissingKeyError`` when ``spec`` needs a key and neither ``api_key`` nor any of
    its ``api_key_env`` variables (in ``environ``, the process environment by default) holds
    one. The error names where a key comes from, never a key."""
    if not spec.requires_api_key or api_key:
        return
    env = os.environ if environ is None else environ
    variables = spec.key_variables
    if any(env.get(variable) for variable in variables):
        return
    raise MissingKeyError(spec.name, variables, display_name=spec.display_name)


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
