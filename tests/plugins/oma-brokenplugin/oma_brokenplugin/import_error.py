"""Fails at import: a dependency that is not installed."""

import oma_brokenplugin_missing_dependency  # noqa: F401
