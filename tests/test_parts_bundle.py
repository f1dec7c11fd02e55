"""The parts an installed health check carries (`parts/platform-parts.yaml`) define each part as
the catalogue does: every built-in part, written as a parts file by `Part.entry`, validates to
the same model with the same source and assumed notes."""

from __future__ import annotations

from pathlib import Path

import yaml

from hwspec.model.parts import catalogue_for, load_parts_file

ROOT = Path(__file__).resolve().parent.parent


def test_every_built_in_part_written_as_a_parts_file_validates_to_the_same_part_and_notes(tmp_path):
    catalogue = catalogue_for(ROOT / "platforms" / "zionex.yaml")
    document: dict = {"hwspec": 1, "kind": "parts"}
    for kind, parts in catalogue.parts.items():
        for name, part in parts.items():
            document.setdefault(kind, {})[name] = part.entry()
    written = tmp_path / "bundle.yaml"
    written.write_text(yaml.safe_dump(document, sort_keys=False))
    again = load_parts_file(written).parts
    assert {kind: sorted(parts) for kind, parts in again.items()} == {kind: sorted(parts) for kind, parts in catalogue.parts.items()}
    for kind, parts in catalogue.parts.items():
        for name, part in parts.items():
            assert (again[kind][name].model, again[kind][name].notes) == (part.model, part.notes), f"{kind}.{name}"


def test_a_generated_node_carries_the_parts_it_names_and_no_other(tmp_path):
    from hwspec.cli.commands import main

    assert main(["generate", str(ROOT / "platforms" / "zionex.yaml"), "-o", str(tmp_path), "--no-svg"]) == 0
    bundle = yaml.safe_load((tmp_path / "zionex" / "parts" / "platform-parts.yaml").read_text())
    assert {kind: list(parts) for kind, parts in bundle.items() if kind not in ("hwspec", "kind")} == {
        "cpus": ["xeon-platinum-8380h"], "gpus": ["a100-oam-40gb"], "nics": ["connectx-6-200g", "ethernet-100g"]}
