"""A hook that asks for an argument the spec does not have: refused at register."""

from oma_core import hookimpl


@hookimpl
def oma_before_run(ctx: object, config: object) -> None:
    return None
