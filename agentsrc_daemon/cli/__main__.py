"""``python -m agentsrc_daemon.cli``: the same as the ``agentsrc`` command."""

from . import main

main()
