"""A registration hook that returns something other than ProviderSpecs."""

from oma_core import hookimpl


@hookimpl
def oma_register_providers() -> list[object]:
    return ["echo"]
