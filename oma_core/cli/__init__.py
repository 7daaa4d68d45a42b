"""The ``oma`` command: run an agent, list plugins, validate a conversation, render a request,
keep keys and a log of runs.

click and rich are imported here only, and this package loads only when the command runs.
Each command (group) lives in a module of its own and is added to the group below.

As in ``llm``, ``run`` is the default command: a first word that names no command starts a
prompt (``oma "hello"`` is ``oma run "hello"``, ``oma -m echo:x hello`` is ``oma run -m
echo:x hello``); bare ``oma`` prints the help and exits 0.

A mistake click's option parser finds, in any command, is one ``error: ...`` line naming the
command's help, exit 2, as every other ``oma`` error is (click's own is three lines).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, Any

import click

from .. import __version__
from ._chat import chat
from ._eval import eval_group
from ._keys import keys
from ._logs import logs
from ._mcp import mcp
from ._models import models
from ._plugins import CAPABILITY_COLUMNS, capability_matrix, plugins
from ._run import render, run, validate
from ._runs import runs
from ._tasks import tasks, team
from ._templates import templates

__all__ = ["CAPABILITY_COLUMNS", "capability_matrix", "cli", "main"]


#: The command a prompt runs when no command is named.
DEFAULT_COMMAND = "run"


def _print_versions(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: the core's version, then one line per installed distribution that
    registers plugins (``oma`` entry points), by name, as a bug report needs them."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import entry_points

    click.echo(f"oma {__version__}")
    found = {ep.dist.name: ep.dist.version for ep in entry_points(group="oma") if ep.dist}
    for name in sorted(found):
        click.echo(f"{name} {found[name]}")
    ctx.exit(0)


class _OneLineUsageError(click.UsageError):
    """A click usage error said as every other ``oma`` error is: one ``error: ...`` line on
    stderr naming the command's help (click prints three: ``Usage:``, ``Try``, ``Error:``);
    exit 2."""

    def show(self, file: IO[Any] | None = None) -> None:
        hint = f" (see `{self.ctx.command_path} --help`)" if self.ctx is not None else ""
        message = " ".join(self.format_message().split())
        click.echo(f"error: {message}{hint}", file=file, err=file is None)


def _one_line(error: click.UsageError, ctx: click.Context) -> click.UsageError:
    """``error`` to be shown on one line; without a context of its own (an option missing
    its values), it names the help of the command ``ctx`` was about to run. Bare ``oma keys``
    (a group's help for want of a command) stays the help it is."""
    if isinstance(error, _OneLineUsageError | click.exceptions.NoArgsIsHelpError):
        return error
    where = error.ctx
    group, name = ctx.command, ctx.invoked_subcommand
    if where is None and isinstance(group, click.Group) and name is not None:
        command = group.get_command(ctx, name)
        if command is not None:
            where = click.Context(command, info_name=name, parent=ctx)
    return _OneLineUsageError(error.format_message(), where or ctx)


class _PromptGroup(click.Group):
    """A group whose first word, when it names no command, is the default command's: a
    prompt or one of ``run``'s options. Options the group does not know are left for the
    command (``ignore_unknown_options``), as ``click-default-group`` does for ``llm``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args:  # bare `oma`: the help, and success
            click.echo(ctx.get_help())
            ctx.exit(0)
        return super().parse_args(ctx, args)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line(exc, exc.ctx or click.Context(self, info_name=info_name)) from None

    def invoke(self, ctx: click.Context) -> Any:
        """The command, its usage errors (those of every subcommand and sub-group) on one
        line."""
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _one_line(exc, ctx) from None

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and self.get_command(ctx, args[0]) is None:
            return DEFAULT_COMMAND, self.commands[DEFAULT_COMMAND], args
        return super().resolve_command(ctx, args)


@click.group(
    "oma",
    cls=_PromptGroup,
    context_settings={"help_option_names": ["-h", "--help"], "ignore_unknown_options": True},
    subcommand_metavar="COMMAND [ARGS]... | PROMPT",
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_versions,
    help="Show the version of oma and of each installed plugin distribution, and exit.",
)
def cli() -> None:
    """Run LLM agents on structured, multimodal input. Providers are plugins.

    `oma PROMPT` is `oma run PROMPT`: a first word that names no command is a prompt, and
    `run`'s options may come before it (`oma -m openai:gpt-4o "hello"`).
    """


for _command in (
    *(run, chat, validate, render, plugins, models, keys, logs, mcp, tasks, team, templates),
    eval_group,
    runs,
):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    """The console-script entry point."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="oma")
