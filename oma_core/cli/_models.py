"""``oma models``: each installed provider's default model, and the options it declares with
their types (``oma models --options``, or ``oma models PROVIDER`` for one provider)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from ._exits import usage

if TYPE_CHECKING:
    from ..capabilities import ProviderSpec


@click.command()
@click.argument("provider", required=False)
@click.option("--options", "show_options", is_flag=True, help="Also list each one's options.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def models(provider: str | None, show_options: bool, as_json: bool) -> None:
    """List providers' default models; with PROVIDER or --options, their options and types.

    A provider that declares no options accepts any name (shown as "any option")."""
    from ..plugins import PluginHost
    from ..resolution import suggest

    specs = PluginHost.default().provider_specs()
    if provider is not None:
        if provider not in specs:
            close = suggest(provider, sorted(specs))
            hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
            usage(f"no provider named {provider!r} is installed{hint}; see oma plugins")
        specs = {provider: specs[provider]}
        show_options = True
    report = [_entry(spec) for _, spec in sorted(specs.items())]
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    for entry in report:
        model = entry["default_model"] or "(no default model)"
        click.echo(f"{entry['provider']}: {model}")
        if not show_options:
            continue
        options = entry["options"]
        if options is None:
            click.echo("  any option (the provider declares none)")
        for option in options or ():
            help_text = f"  {option['help']}" if option["help"] else ""
            click.echo(f"  -o {option['name']} {option['type'].upper()}{help_text}")


def _entry(spec: ProviderSpec) -> dict[str, Any]:
    declared = spec.provider_options
    options = None
    if declared is not None:
        options = [{"name": o.name, "type": o.type_name, "help": o.help} for o in declared.values()]
    return {"provider": spec.name, "default_model": spec.default_model, "options": options}
