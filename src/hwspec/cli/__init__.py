"""The `hwspec` command: argument parsing (`commands.build_parser`) and the commands."""

from hwspec.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
