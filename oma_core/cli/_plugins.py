"""``oma plugins``: what is installed, what failed to load, what each provider can carry."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from ._exits import command_guard

if TYPE_CHECKING:
    from rich.console import Console
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
    "document": ("document", "document", "user", None),
    "audio": ("audio", "audio", "user", None),
}


def capability_matrix(capabilities: Capabilities) -> dict[str, str]:
    """Each column of ``CAPABILITY_COLUMNS``: "native", "forwarded" or "refused".

    "tool use" needs both ``tool_use`` in assistant turns and ``tool_result`` in user turns;
    the weaker of the two modes is shown. "document" and "audio" show the best mode over the
    sources and media types declared (which ones is on each provider's page).
    """
    matrix: dict[str, str] = {}
    for key, (_label, block_type, role, source) in CAPABILITY_COLUMNS.items():
        modes = [capabilities.mode(block_type, role, source)]
        if key in ("document", "audio"):  # the best mode over its sources and media types
            found = {support.mode.value for support in capabilities.find(block_type, role)}
            best = next((m for m in ("native", "forwarded") if m in found), None)
            matrix[key] = best or "refused"
            continue
        if key == "tool_use":
            modes.append(capabilities.mode("tool_result", "user"))
        if any(mode is None for mode in modes):
            matrix[key] = "refused"
        elif all(mode is not None and mode.value == "native" for mode in modes):
            matrix[key] = "native"
        else:
            matrix[key] = "forwarded"
    return matrix


def thinking_report(capabilities: Capabilities) -> dict[str, Any]:
    """What ``oma plugins --json`` says of a provider's thinking: ``thinking`` (it maps
    ``AgentConfig.thinking``), ``reasoning`` (how reasoning blocks go back to it: "native" or
    "refused") and ``model_rules``, its model families as ``ModelRules`` declare them."""
    mode = capabilities.mode("reasoning", "assistant")
    return {
        "thinking": capabilities.thinking,
        "reasoning": "refused" if mode is None else mode.value,
        "model_rules": [
            {
                "models": list(rules.models),
                "thinking": rules.thinking,
                "budget": rules.budget,
                "refuses": sorted(rules.refuses),
                "refuses_while_thinking": sorted(rules.refuses_while_thinking),
                "exclusive": list(rules.exclusive),
                "source": rules.source,
            }
            for rules in capabilities.models
        ],
    }


def caching_report(capabilities: Capabilities) -> dict[str, Any]:
    """What ``oma plugins --json`` says of a provider's prompt caching: ``caching`` is None
    when it has none (``CachePoint`` blocks and ``AgentConfig.cache`` are ignored for it),
    else ``max_markers``, ``places`` (where it puts markers), ``implicit`` and ``source``."""
    from ..capabilities import CACHE_PLACES

    support = capabilities.caching
    if support is None:
        return {"caching": None}
    places = [place for place in CACHE_PLACES if place in support.places]
    return {
        "caching": {
            "max_markers": support.max_markers,
            "places": places if support.markers else [],
            "implicit": support.implicit,
            "source": support.source,
        }
    }


def caching_cell(entry: dict[str, Any]) -> str:
    """A provider's caching in a few words: ``4 markers``, ``implicit``, ``no``."""
    caching = entry["caching"]
    if caching is None:
        return "no"
    words = []
    if caching["places"]:
        words.append(f"{caching['max_markers']} markers")
    if caching["implicit"]:
        words.append("implicit")
    return " + ".join(words) or "no"


# -- helpers -----------------------------------------------------------------------------------


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@command_guard
def plugins(as_json: bool) -> None:
    """List installed plugins, load errors and what each provider can carry."""
    import warnings

    from ..plugins import PluginClashWarning, PluginHost

    with warnings.catch_warnings():  # the report lists every clash itself
        warnings.simplefilter("ignore", PluginClashWarning)
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
    executor_owner = {e: info.name for info in infos for e in info.executors}
    toolset_owner = {t: info.name for info in infos for t in info.toolsets}
    return {
        "plugins": [
            {
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
                "builtin": info.builtin,
                "providers": list(info.providers),
                "backends": list(info.backends),
                "executors": list(info.executors),
                "toolsets": list(info.toolsets),
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
                "api_key_env": list(spec.key_variables),
                "default_base_url": spec.default_base_url,
                "capabilities": capability_matrix(spec.capabilities),
                "output_modes": sorted(spec.capabilities.output_modes),
                **thinking_report(spec.capabilities),
                **caching_report(spec.capabilities),
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
        "executors": {
            name: {
                "plugin": executor_owner.get(name),
                "supports": sorted(spec.supports),
                "description": spec.description,
            }
            for name, spec in host.executor_specs().items()
        },
        "toolsets": {
            kind: {"plugin": toolset_owner.get(kind), "description": spec.description}
            for kind, spec in host.toolset_specs().items()
        },
        "shadowed": host.shadowed(),
        "clashes": [
            {
                "kind": clash.kind,
                "name": clash.name,
                "owners": list(clash.owners),
                "winner": clash.winner,
                "reason": clash.reason,
                "note": clash.describe(),
            }
            for clash in host.clashes()
        ],
    }


#: Cell labels of the capability matrix when the full words do not fit the terminal.
_SHORT_MODES = {"native": "yes", "forwarded": "fwd", "refused": "no"}
_MODE_STYLES = {"native": "green", "forwarded": "yellow", "refused": "red"}


def _print_plugins(report: dict[str, Any]) -> None:
    """Tables when they fit the terminal (or 80 columns when piped), lists otherwise: a
    name is never cut mid-word."""
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    width = console.width
    console.print("[bold]Plugins[/bold]")
    for info in report["plugins"]:
        if info["builtin"]:
            label = escape(info["name"].rpartition(".")[2]) + " [dim](built-in)[/dim]"
        else:
            label = escape(info["name"])
            if info["distribution"]:
                label += f" [dim]({escape(info['distribution'])})[/dim]"
        plain = f"  {info['name']} {info['distribution'] or ''} {info['version'] or ''}"
        if len(plain) + 4 <= width:  # room for the styled label (its "(...)" and "built-in")
            console.print(f"  {label} {escape(info['version'] or '')}", soft_wrap=True)
        else:
            head = info["name"].rpartition(".")[2] if info["builtin"] else info["name"]
            rest = ["(built-in)" if info["builtin"] else f"({info['distribution'] or '-'})"]
            _print_wrapped(console, "", [head, *rest, info["version"] or ""], width, 2, " ")
        for field in ("providers", "backends", "executors", "toolsets", "hooks"):
            if info[field]:
                _print_wrapped(console, f"{field}: ", info[field], width, indent=4)
    console.print()

    providers = _providers_table(report)
    if _fits(console, providers):
        console.print(providers)
        console.print()
    else:
        console.print("[bold]Providers[/bold]")
        for name, entry in report["providers"].items():
            _print_wrapped(console, "", [name], width, indent=2)
            _print_wrapped(console, "key: ", entry["api_key_env"] or ["-"], width, indent=4)
            model = entry["default_model"] or "-"
            _print_wrapped(console, "default model: ", [model], width, indent=4)
        console.print()

    matrix = _capability_table(report, _MODE_NAMES)
    short = not _fits(console, matrix)
    if short:
        matrix = _capability_table(report, _SHORT_MODES)
    if _fits(console, matrix):
        console.print(matrix)
    else:  # not even the short matrix fits: one wrapped line per provider
        console.print("[bold]What each provider can carry[/bold]")
        for name, entry in report["providers"].items():
            cells = [
                f"{CAPABILITY_COLUMNS[key][0]} {_SHORT_MODES[mode]}"
                for key, mode in entry["capabilities"].items()
            ]
            _print_wrapped(console, f"{name}: ", cells, width, indent=2)
    if short:
        console.print("fwd: forwarded for the service to judge; no: refused before any request")
    console.print()
    _print_thinking(console, report)
    console.print()
    _print_caching(console, report)

    if report["backends"]:
        from rich import box
        from rich.table import Table

        backends = Table(title="Backends", title_justify="left", box=box.SIMPLE_HEAD)
        for column in ("kind", "name", "input"):
            backends.add_column(column, no_wrap=True)
        for kind, entry in report["backends"].items():
            text_only = "text prompts only" if entry["text_only"] else "structured"
            backends.add_row(escape(kind), escape(entry["display_name"]), text_only)
        if _fits(console, backends):
            console.print(backends)
        else:
            console.print("[bold]Backends[/bold]")
            for kind, entry in report["backends"].items():
                _print_wrapped(console, f"{kind}: ", [entry["display_name"]], width, indent=2)

    for clash in report["clashes"]:
        console.print(f"[yellow]clash:[/yellow] {escape(clash['note'])}")  # folded at the width
    for note in report["shadowed"]:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")  # folded at the width
    for failure in report["failures"]:
        where = f" ({failure['distribution']})" if failure["distribution"] else ""
        console.print(
            f"[red]failed to load[/red] {escape(failure['name'] + where)} at "
            f"{failure['stage']}: {escape(failure['error'])}"
        )  # folded at the width


def _print_thinking(console: Console, report: dict[str, Any]) -> None:
    """Per provider: whether it maps ``AgentConfig.thinking``, whether reasoning blocks go
    back to it, and how many model families it has rules for."""
    rows = [
        (
            name,
            "yes" if entry["thinking"] else "no",
            "yes" if entry["reasoning"] != "refused" else "no",
            str(len(entry["model_rules"])),
        )
        for name, entry in report["providers"].items()
    ]
    columns = ("thinking", "reasoning", "model rules")
    _print_provider_rows(console, "Thinking and reasoning", columns, columns, rows)


def _print_caching(console: Console, report: dict[str, Any]) -> None:
    """Per provider: whether it caches prompts, with how many markers, and where it puts them
    (a provider without caching ignores ``CachePoint`` blocks and ``AgentConfig.cache``)."""
    rows = [
        (name, caching_cell(entry), ", ".join((entry["caching"] or {}).get("places", [])) or "-")
        for name, entry in report["providers"].items()
    ]
    _print_provider_rows(
        console, "Prompt caching", ("caching", "markers on"), ("caching", "on"), rows
    )


def _print_provider_rows(
    console: Console,
    title: str,
    columns: tuple[str, ...],
    labels: tuple[str, ...],
    rows: Sequence[tuple[str, ...]],
) -> None:
    """A table of one row per provider under ``columns``; where it is wider than the
    terminal, a line per provider instead, each cell after its label in ``labels``."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
    )
    for column in ("provider", *columns):
        table.add_column(column, no_wrap=True)
    for name, *cells in rows:
        table.add_row(escape(name), *cells)
    if _fits(console, table):
        console.print(table)
        return
    console.print(f"[bold]{title}[/bold]")
    for name, *cells in rows:
        labelled = [f"{label} {cell}" for label, cell in zip(labels, cells, strict=True)]
        _print_wrapped(console, f"{name}: ", labelled, console.width, indent=2)


def _fits(console: Console, table: Table) -> bool:
    from rich.measure import Measurement

    unbounded = console.options.update_width(10_000)
    return Measurement.get(console, unbounded, table).maximum <= console.width


def _print_wrapped(
    console: Console, head: str, items: list[str], width: int, indent: int, sep: str = ", "
) -> None:
    """``head`` and ``items`` joined by ``sep``, wrapped between words so that no line is
    wider than the terminal; only a word longer than a whole line is broken (an item is
    moved to the next line whole when it fits there)."""
    import textwrap

    from rich.markup import escape

    text = head + sep.join(items)
    lines = textwrap.wrap(
        text,
        width=max(width - 1, indent + 12),
        initial_indent=" " * indent,
        subsequent_indent=" " * (indent + 2),
        break_long_words=True,
        break_on_hyphens=False,
    )
    for line in lines:
        console.print(escape(line), soft_wrap=True, highlight=False)


def _providers_table(report: dict[str, Any]) -> Table:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title="Providers",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
    )
    for column in ("provider", "key variable", "default model"):
        table.add_column(column, no_wrap=True)
    for name, entry in report["providers"].items():
        keys = ", ".join(entry["api_key_env"]) or "-"
        table.add_row(escape(name), escape(keys), escape(entry["default_model"] or "-"))
    return table


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
        show_edge=False,
        padding=(0, 1) if names is _MODE_NAMES else (0, 0),  # short cells: columns closer
    )
    matrix.add_column("provider", no_wrap=True)
    for label, *_ in CAPABILITY_COLUMNS.values():
        matrix.add_column(label.replace(" ", "\n").replace("-", "-\n"), no_wrap=True)
    for name, entry in report["providers"].items():
        cells = [
            f"[{_MODE_STYLES[mode]}]{names[mode]}[/{_MODE_STYLES[mode]}]"
            for mode in entry["capabilities"].values()
        ]
        matrix.add_row(escape(name), *cells)
    return matrix
