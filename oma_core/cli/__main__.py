"""``python -m oma_core.cli``: the ``oma`` command."""

from . import main

main()
