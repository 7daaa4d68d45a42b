"""A misspelt hook name: pluggy's check_pending() refuses it."""

from oma_core import hookimpl


@hookimpl
def oma_register_provders() -> list[object]:
    return []
