"""The `hwspec` command: argument parsing (`commands.build_parser`) and the commands;
`run_command` is the program (console script), `main` the same for a caller in its process."""

from hwspec.cli.commands import build_parser, main, run_command

__all__ = ["build_parser", "main", "run_command"]
