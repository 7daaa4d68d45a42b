"""``oma models``: each installed provider's default model and the models it knows
(``ProviderSpec.known_models``), and the options it declares with their types (``oma models
--options``, or ``oma models PROVIDER`` for one provider); ``oma models default
[PROVIDER:MODEL]`` shows or stores the model a run uses when none is named (``_settings``)."""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from ._exits import usage

if TYPE_CHECKING:
    from ..capabilities import ProviderSpec


@click.command()
@click.argument("words", nargs=-1, metavar="[PROVIDER | default [PROVIDER:MODEL]]")
@click.option("--options", "show_options", is_flag=True, help="Also list each one's options.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def models(words: tuple[str, ...], show_options: bool, as_json: bool) -> None:
    """List providers' default and known models; with PROVIDER or --options, their options.

    A provider that declares no options accepts any name (shown as "any option"); one that
    declares an empty set takes none but the portable temperature, max_tokens and stop.

    `oma models default PROVIDER:MODEL` stores the model `oma run` and `oma chat` use when
    no -m, -p, $OMA_MODEL or $OMA_PROVIDER names one; `oma models default` prints it, or
    prints nothing (exit 0) when none is stored."""
    from ..plugins import PluginHost

    if words[:1] == ("default",):
        _default(words[1:])
        return
    if len(words) > 1:
        usage(f"oma models takes one PROVIDER at most, not {len(words)} ({' '.join(words)})")
    provider = words[0] if words else None
    specs = PluginHost.default().provider_specs()
    if provider is not None:
        _check_provider(provider, specs)
        specs = {provider: specs[provider]}
        show_options = True
    report = [_entry(spec) for _, spec in sorted(specs.items())]
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    width = max(40, shutil.get_terminal_size().columns)
    for entry in report:
        model = entry["default_model"] or "(no default model)"
        click.echo(f"{entry['provider']}: {model}")
        if entry["known_models"]:
            known = f"known models: {', '.join(entry['known_models'])}"
            for line in textwrap.wrap(
                known,
                width - 1,
                initial_indent="  ",
                subsequent_indent="    ",
                break_long_words=False,
                break_on_hyphens=False,
            ):
                click.echo(line)
        if not show_options:
            continue
        options = entry["options"]
        if options is None:
            click.echo("  any option (the provider declares none)")
        elif not options:
            click.echo("  no options of its own (-o temperature, max_tokens and stop apply)")
        for option in options or ():
            help_text = f"  {option['help']}" if option["help"] else ""
            click.echo(f"  -o {option['name']} {option['type'].upper()}{help_text}")


def _check_provider(provider: str, specs: Mapping[str, ProviderSpec]) -> None:
    from .._resolution import suggest

    if provider not in specs:
        close = suggest(provider, sorted(specs))
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        usage(f"no provider named {provider!r} is installed{hint}; see oma plugins")


def _default(words: tuple[str, ...]) -> None:
    """``oma models default``: print the stored default; with PROVIDER:MODEL, store it."""
    from ..plugins import PluginHost
    from ._settings import default_model, store_default_model

    if not words:
        stored = default_model()
        if stored is not None:
            click.echo(stored)
        return
    if len(words) > 1:
        usage(f"oma models default takes one PROVIDER:MODEL, not {len(words)}")
    provider, colon, model = words[0].partition(":")
    if not colon or not provider or not model.strip():
        usage(f"{words[0]!r} is not PROVIDER:MODEL (for example openai:gpt-4o-mini)")
    specs = PluginHost.default().provider_specs()
    _check_provider(provider, specs)
    _unknown_model_note(specs[provider], model)
    path = store_default_model(words[0])
    click.echo(f"default model: {words[0]} (stored in {path})", err=True)


def _unknown_model_note(spec: ProviderSpec, model: str) -> None:
    """A note when ``model`` is not among ``spec``'s known models but close to one (a typo,
    probably: the closest is named); the model is stored all the same: a provider serves
    more models than it lists (a new one, a fine-tuned one)."""
    from .._resolution import suggest
    from ._exits import note

    if model in spec.known_models:
        return
    close = suggest(model, spec.known_models)
    if close:
        note(
            f"{spec.name} does not list {model} among its known models (did you mean "
            f"{close[0]}?); stored as given: oma models {spec.name} lists them"
        )


def _entry(spec: ProviderSpec) -> dict[str, Any]:
    declared = spec.provider_options
    options = None
    if declared is not None:
        options = [{"name": o.name, "type": o.type_name, "help": o.help} for o in declared.values()]
    return {
        "provider": spec.name,
        "default_model": spec.default_model,
        "known_models": list(spec.known_models),
        "options": options,
    }
