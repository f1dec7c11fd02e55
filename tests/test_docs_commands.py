"""docs/commands.md: the synopsis is the command line hwspec parses, and every code is explained
as the code reference says."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from hwspec.cli.commands import build_parser, main
from hwspec.cli.docsgen import code_reference, plain
from hwspec.diagnostics.codes import Code

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "commands.md").read_text()
SHARED = {"-h", "--help", "--rule-time-limit", "--allow-env", "--platform-root"}
"""Options the page describes once, under "Options shared by several commands", not per line."""


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def synopsis() -> dict[str, str]:
    """Each synopsis line after `hwspec COMMAND`, by command."""
    block = PAGE.split("## Synopsis\n\n```text\n", 1)[1].split("```", 1)[0]
    lines = [line.removeprefix("hwspec ") for line in block.splitlines() if not line.startswith("hwspec --")]
    return {line.split()[0]: line for line in lines}


def options_of(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {option: action for action in parser._actions for option in action.option_strings}


def test_the_synopsis_has_every_command_and_every_option_each_takes():
    commands = subcommands()
    lines = synopsis()
    assert sorted(lines) == sorted(commands)
    for name, line in lines.items():
        options = options_of(commands[name])
        shown = set(re.findall(r"\[(-[-\w]+)", line))
        assert shown <= set(options), (name, shown - set(options))
        not_shown = {action.option_strings[0] for action in set(options.values()) - {options[o] for o in shown}}
        assert not_shown <= SHARED, (name, not_shown - SHARED)


def test_every_choice_list_in_the_synopsis_is_what_the_parser_accepts():
    commands = subcommands()
    for name, line in synopsis().items():
        for option, choices in re.findall(r"\[(--[-\w]+) ([a-z-]+(?:\|[a-z-]+)+)\]", line):
            accepted = options_of(commands[name])[option].choices
            assert accepted is not None and choices.split("|") == list(accepted), (name, option)


def test_the_input_formats_the_page_lists_are_what_import_and_diff_read():
    listed = re.search(r"`FORMAT` is one of (.*?);", PAGE, re.DOTALL).group(1)
    for name in ("import", "diff"):
        accepted = options_of(subcommands()[name])["--input-format"].choices
        assert re.findall(r"`([a-z-]+)`", listed) == list(accepted)


def test_every_code_is_explained_as_the_code_reference_says(capsys):
    reference = code_reference()
    for code in Code:
        assert main(["explain", code.lower()]) == 0
        assert capsys.readouterr().out == f"{code.value} {code.summary}\n\n{code.doc}\n"
        assert f"\n## {code.value} {plain(code.summary)} {{ #{code.value.lower()} }}\n\n{plain(code.doc)}\n" in reference
    assert "[code reference](reference/codes.md)" in PAGE

