"""The built-in parts catalogue validated once, when hwspec is built (issue 38, item 6):
`data/parts.jsonl` is what the YAML validates to, its parts are the validated ones (models,
positions, notes), and a built-in file that differs from its record, or a record that is not
well-formed, is validated from its YAML instead."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from hwspec import content
from hwspec.diagnostics import HwspecError
from hwspec.model import build_parts, parts
from hwspec.source.expand import expand
from hwspec.source.loader import load_yaml_file

BUILTIN = content.builtin_dir("parts")


def test_the_committed_prebuilt_catalogue_is_what_the_yaml_validates_to():
    assert parts.prebuilt_path().read_text(encoding="utf-8") == build_parts.render(), (
        "src/hwspec/data/parts.jsonl is stale: run 'python -m hwspec.model.build_parts'")


def _same_model(made, validated, where: str) -> None:
    """Same class, same fields written, same values, nested models alike."""
    assert type(made) is type(validated), where
    assert made.model_fields_set == validated.model_fields_set, where
    for name in type(validated).model_fields:
        a, b = getattr(made, name), getattr(validated, name)
        if hasattr(b, "model_fields_set"):
            _same_model(a, b, f"{where}.{name}")
        else:
            assert (type(a), a) == (type(b), b), f"{where}.{name}"
    assert made == validated, where


@pytest.mark.parametrize("path", parts.parts_files(BUILTIN), ids=lambda p: p.name)
def test_each_prebuilt_part_is_the_part_validated_from_its_yaml(path: Path):
    prebuilt = parts.prebuilt_file(path)
    assert prebuilt is not None
    made, validated = prebuilt.parts(), parts.load_parts_file(path).parts
    assert {k: list(v) for k, v in made.items()} == {k: list(v) for k, v in validated.items()}
    doc = load_yaml_file(path)
    expanded = expand(doc)
    for kind, found in validated.items():
        for name, part in found.items():
            mine = made[kind][name]
            _same_model(mine.model, part.model, f"{kind}.{name}")
            assert (mine.raw, mine.file, mine.positions, mine.notes) == (part.raw, part.file, part.positions, part.notes)
            for inner in [*part.positions, ("no", "such", "key"), ("pcie", "physical", "width")]:
                expected = doc.locate(expanded.written_path((kind, name, *inner)))
                assert mine.locate(inner) == expected, (kind, name, inner)


@pytest.fixture
def builtin_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the built-in parts directory and its prebuilt record, standing in for them."""
    shutil.copytree(BUILTIN, tmp_path / "parts")
    shutil.copy(parts.prebuilt_path(), tmp_path / "parts.jsonl")
    monkeypatch.setattr(content, "builtin_dir", lambda name: tmp_path / name)
    parts._prebuilt.cache_clear()
    yield tmp_path
    parts._prebuilt.cache_clear()


def test_a_builtin_file_changed_since_it_was_validated_is_validated_from_its_yaml(builtin_copy: Path):
    gpus = builtin_copy / "parts" / "gpus.yaml"
    text = gpus.read_text()
    assert "    sm: 80\n" in text
    gpus.write_text(text.replace("    sm: 80\n", "    sm: -80\n", 1))
    line = text[:text.index("    sm: 80\n")].count("\n") + 1
    with pytest.raises(HwspecError) as raised:
        parts.load_catalogue([builtin_copy / "parts"])
    assert [(d.file, d.line, d.col, d.code.value) for d in raised.value.diagnostics] == [(str(gpus), line, 9, "E110")]


def test_a_malformed_record_is_not_used_and_the_yaml_is_validated(builtin_copy: Path):
    record = builtin_copy / "parts.jsonl"
    lines = record.read_text().splitlines(keepends=True)
    broken = next(i for i, line in enumerate(lines) if line.startswith('["gpus","a100-oam-40gb",'))
    raw, model = lines[broken].split('"model":', 1)
    lines[broken] = raw.replace('"sm":80', '"sm":81') + '"model":' + model.replace('"sm":80', '"no_such_field":80', 1)
    record.write_text("".join(lines))
    part = parts.load_catalogue([builtin_copy / "parts"]).get("gpus", "a100-oam-40gb")
    assert part is not None and (part.raw["sm"], part.model.sm) == (80, 80)


def test_a_record_cut_short_is_not_used_and_the_yaml_is_validated(builtin_copy: Path):
    record = builtin_copy / "parts.jsonl"
    record.write_text("".join(record.read_text().splitlines(keepends=True)[:3]))
    part = parts.load_catalogue([builtin_copy / "parts"]).get("gpus", "a100-oam-40gb")
    assert part is not None and (part.raw["sm"], part.model.sm) == (80, 80)


def test_a_record_of_another_format_is_not_used(builtin_copy: Path):
    (builtin_copy / "parts.jsonl").write_text('{"format": 0, "files": {}}\n')
    assert parts.prebuilt_file(builtin_copy / "parts" / "gpus.yaml") is None
    assert parts.load_catalogue([builtin_copy / "parts"]).get("gpus", "a100-oam-40gb") is not None


def _record_line(record: Path, prefix: str) -> tuple[list[str], int]:
    lines = record.read_text().splitlines(keepends=True)
    return lines, next(i for i, line in enumerate(lines) if line.startswith(prefix))


def _rehash(record: Path) -> None:
    """Record each file's records' SHA-256 again, as a build that wrote them would (so that only
    their shape, not their hash, is what the reader is left to judge)."""
    lines = record.read_text(encoding="utf-8").split("\n")
    header = json.loads(lines[0])
    for entry in header["files"].values():
        count = sum(len(names) for names in entry["parts"].values())
        block = "\n".join(lines[entry["line"] - 1:entry["line"] - 1 + count])
        entry["records"] = hashlib.sha256(block.encode("utf-8")).hexdigest()
    record.write_text("\n".join([json.dumps(header, ensure_ascii=False, separators=(",", ":")), *lines[1:]]), encoding="utf-8")


def test_an_edited_record_is_not_used_and_the_yaml_is_validated(builtin_copy: Path):
    """A well-formed edit of a part's record (its YAML unchanged): the record's hash no longer holds."""
    record = builtin_copy / "parts.jsonl"
    lines, edited = _record_line(record, '["gpus","a100-oam-40gb",')
    lines[edited] = lines[edited].replace('"sm":80', '"sm":81')
    record.write_text("".join(lines))
    part = parts.load_catalogue([builtin_copy / "parts"]).get("gpus", "a100-oam-40gb")
    assert part is not None and (part.raw["sm"], part.model.sm) == (80, 80)


@pytest.mark.parametrize("fault", ["deeply-nested", "values-not-a-mapping", "positions-not-lists", "written-not-names"])
def test_a_record_of_the_wrong_shape_is_not_used_and_the_yaml_is_validated(builtin_copy: Path, fault: str):
    record = builtin_copy / "parts.jsonl"
    lines, broken = _record_line(record, '["gpus","a100-oam-40gb",')
    kind, name, entry = json.loads(lines[broken])
    if fault == "deeply-nested":
        line = json.dumps([kind, name, {**entry, "notes": []}], separators=(",", ":"))
        lines[broken] = line.replace('"notes":[]', '"notes":' + "[" * 100_000 + "]" * 100_000) + "\n"
    else:
        if fault == "values-not-a-mapping":
            entry["model"]["values"] = list(entry["model"]["values"])
        elif fault == "positions-not-lists":
            entry["positions"] = [7 for _ in entry["positions"]]
        else:
            entry["model"]["written"] = [1, 2]
        lines[broken] = json.dumps([kind, name, entry], ensure_ascii=False, separators=(",", ":")) + "\n"
    record.write_text("".join(lines))
    _rehash(record)
    part = parts.load_catalogue([builtin_copy / "parts"]).get("gpus", "a100-oam-40gb")
    assert part is not None and (part.raw["sm"], part.model.sm) == (80, 80)


def test_a_deeply_nested_header_is_not_used(builtin_copy: Path):
    record = builtin_copy / "parts.jsonl"
    lines = record.read_text().splitlines(keepends=True)
    lines[0] = lines[0].replace('"about":', '"nested":' + "[" * 100_000 + "]" * 100_000 + ',"about":', 1)
    record.write_text("".join(lines))
    assert parts.prebuilt_file(builtin_copy / "parts" / "gpus.yaml") is None
    assert parts.load_catalogue([builtin_copy / "parts"]).get("gpus", "a100-oam-40gb") is not None
