"""The ``oma`` command: run an agent, list plugins, validate a conversation, render a request.

click and rich are imported here only, and this package loads only when the command runs.
Each command lives in a module of its own and is added to the group below.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from .. import __version__
from ._plugins import CAPABILITY_COLUMNS, capability_matrix, plugins
from ._run import render, run, validate

__all__ = ["CAPABILITY_COLUMNS", "capability_matrix", "cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="oma")
def cli() -> None:
    """Run LLM agents on structured, multimodal input. Providers are plugins."""


for _command in (run, validate, render, plugins):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    """The console-script entry point."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="oma")
