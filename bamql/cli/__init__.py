"""The ``bamql`` command: its parser and subcommands, the one-shot ``sql``, the shell, output
formats and the demo.
"""
