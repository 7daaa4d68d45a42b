"""``oma plugins``: what is installed, what failed to load, what each provider can carry."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.table import Table

    from ..capabilities import Capabilities
    from ..plugins import PluginHost

#: The columns of the capability matrix: key -> (label, block type, role, source kind).
CAPABILITY_COLUMNS: dict[str, tuple[str, str, str, str | None]] = {
    "text": ("text", "text", "user", None),
    "image_base64": ("image base64", "image", "user", "base64"),
    "image_url": ("image url", "image", "user", "url"),
    "video_base64": ("video base64", "video", "user", "base64"),
    "video_url": ("video url", "video", "user", "url"),
    "tool_use": ("tool use", "tool_use", "assistant", None),
    "tool_result_media": ("tool-result media", "image", "tool_result", None),
}


def capability_matrix(capabilities: Capabilities) -> dict[str, str]:
    """Each column of ``CAPABILITY_COLUMNS``: "native", "forwarded" or "refused".

    "tool use" needs both ``tool_use`` in assistant turns and ``tool_result`` in user turns;
    the weaker of the two modes is shown.
    """
    matrix: dict[str, str] = {}
    for key, (_label, block_type, role, source) in CAPABILITY_COLUMNS.items():
        modes = [capabilities.mode(block_type, role, source)]
        if key == "tool_use":
            modes.append(capabilities.mode("tool_result", "user"))
        if any(mode is None for mode in modes):
            matrix[key] = "refused"
        elif all(mode is not None and mode.value == "native" for mode in modes):
            matrix[key] = "native"
        else:
            matrix[key] = "forwarded"
    return matrix


# -- helpers -----------------------------------------------------------------------------------


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def plugins(as_json: bool) -> None:
    """List installed plugins, load errors and what each provider can carry."""
    from ..plugins import PluginHost

    host = PluginHost.default()
    report = _plugins_report(host)
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    _print_plugins(report)


def _plugins_report(host: PluginHost) -> dict[str, Any]:
    infos = host.plugin_info()
    provider_owner = {p: info.name for info in infos for p in info.providers}
    backend_owner = {b: info.name for info in infos for b in info.backends}
    return {
        "plugins": [
            {
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
                "builtin": info.builtin,
                "providers": list(info.providers),
                "backends": list(info.backends),
                "scorers": info.scorers,
                "hooks": list(info.hooks),
            }
            for info in infos
        ],
        "failures": [
            {"name": f.name, "distribution": f.distribution, "stage": f.stage, "error": f.error}
            for f in host.failures
        ],
        "providers": {
            name: {
                "display_name": spec.display_name,
                "plugin": provider_owner.get(name),
                "description": spec.description,
                "default_model": spec.default_model,
                "capabilities": capability_matrix(spec.capabilities),
            }
            for name, spec in host.provider_specs().items()
        },
        "backends": {
            kind: {
                "display_name": spec.display_name,
                "plugin": backend_owner.get(kind),
                "text_only": spec.text_only,
                "description": spec.description,
            }
            for kind, spec in host.backend_specs().items()
        },
        "shadowed": host.shadowed(),
    }


#: Cell labels of the capability matrix when the full words do not fit the terminal.
_SHORT_MODES = {"native": "native", "forwarded": "fwd", "refused": "no"}
_MODE_STYLES = {"native": "green", "forwarded": "yellow", "refused": "red"}


def _print_plugins(report: dict[str, Any]) -> None:
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.measure import Measurement
    from rich.table import Table

    console = Console()
    table = Table(title="Plugins", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("plugin", overflow="fold")
    table.add_column("version", no_wrap=True)
    table.add_column("providers", overflow="fold")
    table.add_column("backends", overflow="fold")
    table.add_column("hooks", no_wrap=True)  # one per line: a hook name is never cut
    for info in report["plugins"]:
        if info["builtin"]:
            label = escape(info["name"].rpartition(".")[2]) + " [dim](built-in)[/dim]"
        else:
            label = escape(info["name"])
            if info["distribution"]:
                label += f" [dim]({escape(info['distribution'])})[/dim]"
        table.add_row(
            label,
            escape(info["version"] or ""),
            escape(", ".join(info["providers"])),
            escape(", ".join(info["backends"])),
            "\n".join(info["hooks"]),
        )
    console.print(table)

    matrix = _capability_table(report, _MODE_NAMES)
    unbounded = console.options.update_width(10_000)
    short = Measurement.get(console, unbounded, matrix).maximum > console.width
    if short:
        matrix = _capability_table(report, _SHORT_MODES)
    console.print(matrix)
    if short:
        console.print("fwd: forwarded for the service to judge; no: refused before any request")

    if report["backends"]:
        backends = Table(title="Backends", title_justify="left", box=box.SIMPLE_HEAD)
        for column in ("kind", "name", "input"):
            backends.add_column(column)
        for kind, entry in report["backends"].items():
            text_only = "text prompts only" if entry["text_only"] else "structured"
            backends.add_row(escape(kind), escape(entry["display_name"]), text_only)
        console.print(backends)

    for note in report["shadowed"]:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    for failure in report["failures"]:
        where = f" ({failure['distribution']})" if failure["distribution"] else ""
        console.print(
            f"[red]failed to load[/red] {escape(failure['name'] + where)} at "
            f"{failure['stage']}: {escape(failure['error'])}"
        )


_MODE_NAMES = {mode: mode for mode in _MODE_STYLES}


def _capability_table(report: dict[str, Any], names: Mapping[str, str]) -> Table:
    """The capability matrix: a row per provider, a column per ``CAPABILITY_COLUMNS`` key."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    matrix = Table(
        title="What each provider can carry",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    matrix.add_column("provider", overflow="fold")
    for label, *_ in CAPABILITY_COLUMNS.values():
        matrix.add_column(label.replace(" ", "\n", 1), no_wrap=True)
    for name, entry in report["providers"].items():
        cells = [
            f"[{_MODE_STYLES[mode]}]{names[mode]}[/{_MODE_STYLES[mode]}]"
            for mode in entry["capabilities"].values()
        ]
        matrix.add_row(escape(name), *cells)
    return matrix
