from hwspec.cli.commands import run_command

run_command()
