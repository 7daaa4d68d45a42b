"""``oma templates``: agent settings kept by name, and ``-t NAME``/``--save NAME`` on the
commands that run an agent.

A template holds a provider, a model, a system prompt, a base URL and ``-o`` options, never a
key: ``--api-key`` is refused with ``--save``, a field a template does not have (``api_key``)
is refused when one is read, and so are options, a system prompt or a base URL that look like
a credential (``oma_core.redaction``'s test). Each template is one JSON file,
``templates/NAME.json`` in the config directory beside the keys, written atomically with mode
0600; a NAME is letters, digits, ``.``, ``_`` and ``-`` (never a path).

``-t NAME`` fills in what the command line does not give: the provider and model together
(``-m`` or ``-p`` given again replaces both), the system prompt, the base URL; the
template's options come first and a ``-o`` of the same name given again wins.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import attrs
import click

from ._agent import AgentOptions, check_portable, parse_value
from ._exits import command_guard, reported, usage
from ._paths import config_dir

F = TypeVar("F", bound=Callable[..., Any])

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: The fields a template file may hold.
FIELDS = ("provider", "model", "system", "base_url", "options")
#: A template file larger than this is not read.
MAX_TEMPLATE_BYTES = 1 << 20
#: How deep a template's JSON may nest (an option's value is an object or list at most this
#: many levels down); deeper is refused as it is read, never left to Python's recursion limit.
MAX_TEMPLATE_DEPTH = 32


def templates_dir() -> Path:
    """Where templates are kept: ``templates`` in the config directory (``$OMA_HOME``)."""
    return config_dir() / "templates"


def checked_name(name: str) -> str:
    """``name`` when it can name a template file; else a usage error."""
    if not _NAME.match(name):
        usage(
            f"template name {name!r}: use 1 to 64 letters, digits, '.', '_' and '-', "
            "starting with a letter or digit (no path separators)"
        )
    return name


def template_path(name: str) -> Path:
    return templates_dir() / f"{checked_name(name)}.json"


@attrs.frozen
class Template:
    """A template's settings; ``options`` as ``-o`` gives them, values parsed."""

    name: str
    provider: str | None = None
    model: str | None = None
    system: str | None = None
    base_url: str | None = None
    options: Mapping[str, Any] = attrs.field(factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The file's object: the fields that are set."""
        data: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "system": self.system,
            "base_url": self.base_url,
            "options": dict(self.options) or None,
        }
        return {key: value for key, value in data.items() if value is not None}

    def applied(self, given: AgentOptions) -> AgentOptions:
        """``given`` with what it leaves unset taken from the template (see the module)."""
        provider, model = given.provider, given.model
        if provider is None and model is None:
            provider, model = self.provider, self.model
        pairs = tuple((name, json.dumps(value)) for name, value in self.options.items())
        return attrs.evolve(
            given,
            provider=provider,
            model=model,
            system_prompt=given.system_prompt if given.system_prompt is not None else self.system,
            base_url=given.base_url if given.base_url is not None else self.base_url,
            options=(*pairs, *given.options),
        )

    def summary(self) -> str:
        """One line for ``oma templates list``."""
        parts = []
        if self.model or self.provider:
            parts.append(":".join(p for p in (self.provider, self.model) if p))
        if self.system:
            system = " ".join(self.system.split())
            parts.append(f"system: {system[:60]}{'...' if len(system) > 60 else ''}")
        if self.options:
            parts.append(" ".join(f"-o {name} {json.dumps(v)}" for name, v in self.options.items()))
        return "  ".join(parts) or "(empty)"


def _credential(template: Template) -> str | None:
    """Which field of ``template`` looks like it holds a credential, or None."""
    from urllib.parse import urlsplit

    from ..redaction import redact_json, redact_text

    for name, value in template.options.items():
        if redact_json({name: value}) != {name: value}:
            return f"-o {name}"
    if template.system is not None and redact_text(template.system) != template.system:
        return "the system prompt (-s)"
    if template.base_url is not None:
        try:
            parts = urlsplit(template.base_url)
        except ValueError:
            return None
        if parts.username or parts.password or redact_json(parts.query) != parts.query:
            return "--base-url (user info or a secret in its query)"
    return None


def _store_command(provider: str | None, model: str | None, base_url: str | None) -> str:
    """The ``oma keys set`` command for the key of a template's provider at its base URL
    (``--base-url ORIGIN`` for another host than the provider's own); ``PROVIDER`` when the
    template names no installed provider."""
    from ..plugins import PluginHost
    from ._agent import keys_set_command

    host = PluginHost.default()
    name = provider or (model.partition(":")[0] if model and ":" in model else None)
    if name not in host.provider_specs():
        name = None
    return keys_set_command(name, base_url, host)


def _refuse_credentials(template: Template, where: str) -> None:
    found = _credential(template)
    if found is not None:
        store = _store_command(template.provider, template.model, template.base_url)
        usage(
            f"{where}: {found} looks like a key or secret, and a template never holds one "
            f"(store keys with `{store}`)"
        )


def from_options(name: str, options: AgentOptions) -> Template:
    """The template ``--save NAME`` or ``oma templates save NAME`` makes of the options."""
    if options.api_key is not None:
        store = _store_command(options.provider, options.model, options.base_url)
        usage(f"a template never holds a key: drop --api-key (store it with `{store}`)")
    check_portable(options.options)  # refused when saved, as a run would refuse it
    template = Template(
        checked_name(name),
        provider=options.provider,
        model=options.model,
        system=options.system_prompt,
        base_url=options.base_url,
        options={option: parse_value(text) for option, text in options.options},
    )
    if not template.as_json():
        usage(f"template {name} would be empty: give -m, -p, -s, --base-url or -o")
    if _deeper_than(template.as_json(), MAX_TEMPLATE_DEPTH):
        usage(f"template {name}: an -o value nests deeper than {MAX_TEMPLATE_DEPTH} levels")
    _refuse_credentials(template, f"template {name}")  # first: it never echoes a secret
    if options.provider is not None or options.model is not None:
        _check_options(options)
    return template


def _check_options(options: AgentOptions) -> None:
    """The provider and model named, and the ``-o`` options checked against the provider's
    declared options as a run checks them (an unknown name with its did-you-mean, a value of
    the wrong type): a template is refused when saved, not at each use."""
    from .._resolution import check_provider_options
    from ..plugins import PluginHost
    from ._agent import provider_and_model, split_options

    host = PluginHost.default()
    provider, _ = provider_and_model(options.provider, options.model, host)
    spec = host.provider_specs().get(provider)
    if spec is not None:
        check_provider_options(spec, split_options(options.options)[1])


def save_template(template: Template) -> Path:
    """Write the template's file atomically (a temporary file of mode 0600, renamed)."""
    import tempfile

    path = template_path(template.name)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = json.dumps(template.as_json(), ensure_ascii=False, indent=2) + "\n"
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _names() -> list[str]:
    directory = templates_dir()
    if not directory.is_dir():
        return []
    return sorted(p.stem for p in directory.glob("*.json") if _NAME.match(p.stem))


def load_template(name: str) -> Template:
    """The template NAME; a missing, unreadable or malformed one is a usage error."""
    import difflib
    import stat

    path = template_path(name)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        close = difflib.get_close_matches(name, _names(), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        usage(f"no template {name} ({hint}see `oma templates list`)")
    except OSError as exc:
        usage(f"cannot read template {name} ({path}): {exc.strerror or exc}")
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            usage(f"template {name} ({path}) is not a regular file")
        raw = file.read(MAX_TEMPLATE_BYTES + 1)
    if len(raw) > MAX_TEMPLATE_BYTES:
        usage(f"template {name} ({path}) is larger than {MAX_TEMPLATE_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        usage(f"template {name} ({path}) is not JSON: {exc}")
    except RecursionError:
        data = None
        deep = True
    else:
        deep = _deeper_than(data, MAX_TEMPLATE_DEPTH)
    if deep:
        usage(f"template {name} ({path}) nests deeper than {MAX_TEMPLATE_DEPTH} levels")
    return _parsed(name, path, data)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels deep (walked
    without recursion)."""
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return False


def _parsed(name: str, path: Path, data: Any) -> Template:
    where = f"template {name} ({path})"
    if not isinstance(data, dict):
        usage(f"{where} must hold a JSON object")
    for key in data:
        if key not in FIELDS:
            said = " (a template never holds a key)" if "key" in str(key).lower() else ""
            usage(f"{where}: unknown field {key!r}{said}; fields are {', '.join(FIELDS)}")
    for key in ("provider", "model", "system", "base_url"):
        if key in data and not isinstance(data[key], str | None):
            usage(f"{where}: {key} must be a string")
    options = data.get("options") or {}
    if not isinstance(options, dict):
        usage(f"{where}: options must be an object of name -> value")
    template = Template(
        name,
        provider=data.get("provider"),
        model=data.get("model"),
        system=data.get("system"),
        base_url=data.get("base_url"),
        options=options,
    )
    _refuse_credentials(template, where)
    return template


def template_options(function: F) -> F:
    """``-t/--template NAME`` and ``--save NAME`` for a command decorated with
    ``input_options`` (put this under it): ``-t`` fills the command's ``agent_options`` from
    the template; ``--save`` stores them as a template instead of running."""

    @functools.wraps(function)
    def templated(**kwargs: Any) -> Any:
        name = kwargs.pop("template")
        save = kwargs.pop("save")
        with reported():
            if save is not None:
                _save_instead(save, name, kwargs)
                return None
            if name is not None:
                options = load_template(name).applied(kwargs["agent_options"])
                kwargs["agent_options"] = options
                kwargs["media"] = attrs.evolve(kwargs["media"], target=options)
        return function(**kwargs)

    wrapped: Any = click.option(
        "--save",
        default=None,
        metavar="NAME",
        help="Save -m, -p, -s, --base-url and -o as template NAME instead of running.",
    )(templated)
    wrapped = click.option(
        "-t",
        "--template",
        default=None,
        metavar="NAME",
        help="Use template NAME (see `oma templates`); options given here win.",
    )(wrapped)
    return wrapped  # type: ignore[no-any-return]


#: What ``--save`` cannot be given with: the command's argument name -> the option.
_NOT_SAVED = {
    "prompt": "PROMPT",
    "messages_file": "--messages",
    "continue_last": "-c",
    "conversation_id": "--cid",
    "backend_kind": "--backend",
    "backend_command": "--command",
    "backend_args": "--arg",
}


def _save_instead(name: str, template: str | None, kwargs: dict[str, Any]) -> None:
    given = [flag for key, flag in _NOT_SAVED.items() if kwargs.get(key)]
    media = kwargs["media"]
    if media.attach or media.attach_types or media.images or media.videos:
        given.append("-a")
    if template is not None:
        given.append("-t")
    if given:
        usage(
            f"--save keeps -m, -p, -s, --base-url and -o only; it cannot be used with "
            f"{', '.join(given)}"
        )
    path = save_template(from_options(name, kwargs["agent_options"]))
    click.echo(f"saved template {name} in {path}", err=True)


@click.group(invoke_without_command=True)
@click.pass_context
def templates(ctx: click.Context) -> None:
    """Keep a system prompt, model and options by name, for `-t NAME` (list by default)."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(templates_list)


@templates.command("list")
@command_guard
def templates_list() -> None:
    """List the templates: each name and what it sets (a broken one is an ``error:`` line,
    the others are still listed, and the status is 2)."""
    broken = False
    for name in _names():
        try:
            template = load_template(name)
        except SystemExit:  # its error line is printed; list the others
            broken = True
            continue
        click.echo(f"{name}  {template.summary()}")
    if broken:
        raise SystemExit(2)


@templates.command("show")
@click.argument("name")
@command_guard
def templates_show(name: str) -> None:
    """Print template NAME as stored."""
    click.echo(json.dumps(load_template(name).as_json(), ensure_ascii=False, indent=2))


@templates.command("save")
@click.argument("name")
@click.option("-m", "--model", default=None, help="PROVIDER:MODEL, or MODEL with -p.")
@click.option("-p", "--provider", default=None, help="Registered provider name.")
@click.option("-s", "--system", "system_prompt", default=None, help="System prompt.")
@click.option("--base-url", default=None, help="The provider's base URL.")
@click.option(
    "-o",
    "--option",
    "options",
    multiple=True,
    nargs=2,
    metavar="NAME VALUE",
    help="An option, as `oma run -o` takes it (repeatable).",
)
@command_guard
def templates_save(
    name: str,
    model: str | None,
    provider: str | None,
    system_prompt: str | None,
    base_url: str | None,
    options: tuple[tuple[str, str], ...],
) -> None:
    """Save template NAME (replacing one of that name). It never holds a key."""
    given = AgentOptions(
        provider=provider,
        model=model,
        system_prompt=system_prompt,
        base_url=base_url,
        options=tuple(options),
    )
    path = save_template(from_options(name, given))
    click.echo(f"saved template {name} in {path}", err=True)


@templates.command("rm")
@click.argument("name")
@command_guard
def templates_rm(name: str) -> None:
    """Remove template NAME."""
    path = template_path(name)
    if not path.exists():
        load_template(name)  # says it is missing, with a near name
    path.unlink()
    click.echo(f"removed template {name}", err=True)


@templates.command("path")
def templates_path() -> None:
    """Print the directory the templates are kept in."""
    click.echo(str(templates_dir()))
