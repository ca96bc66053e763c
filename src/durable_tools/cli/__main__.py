"""`python -m durable_tools.cli`."""

from durable_tools.cli import main

main()
