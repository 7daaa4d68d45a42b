"""A registration hook that raises."""

from oma_core import hookimpl


@hookimpl
def oma_register_providers() -> list[object]:
    raise RuntimeError("the SDK is not configured")
