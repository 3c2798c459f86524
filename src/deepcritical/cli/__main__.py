"""``python -m deepcritical.cli``: the ``deepcritical`` command."""

from deepcritical.cli import main

main()
