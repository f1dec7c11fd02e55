"""The staleness guard: generated/ must be exactly what platforms/ and templates/ produce."""

from __future__ import annotations

from pathlib import Path

from hwspec.cli.commands import main

ROOT = Path(__file__).resolve().parent.parent


def test_committed_generated_files_are_up_to_date(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)  # headers name the platform file relative to the working directory
    status = main(["generate", "--check"])
    out = capsys.readouterr()
    assert status == 0, f"generated/ is stale; run 'hwspec generate' and commit:\n{out.out}{out.err}"
