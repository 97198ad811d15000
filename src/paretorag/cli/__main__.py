"""``python -m paretorag.cli``: the ``paretorag`` command."""

from . import main

main()
