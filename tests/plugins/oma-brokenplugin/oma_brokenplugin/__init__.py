"""Broken oma plugins, one module per fault."""
