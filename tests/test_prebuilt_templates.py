"""The built-in templates compiled once, when hwspec is built (issue 38, speed): the committed
`generate/compiled/` is what jinja2 makes of the templates now, a run takes each built-in
template's code from it, and an edited template or another environment is compiled from source."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import jinja2
import pytest

from hwspec import content
from hwspec.generate import build_templates, compiled, prebuilt_templates
from hwspec.generate.engine import template_environment

BUILTIN = content.builtin_dir("templates")


def test_the_committed_compiled_templates_are_what_jinja2_makes_of_the_templates_now():
    written = {p.name: p.read_text(encoding="utf-8") for p in prebuilt_templates.compiled_dir().glob("*.py")}
    assert written == build_templates.render(template_environment()), (
        "src/hwspec/generate/compiled/ is stale: run 'python -m hwspec.generate.build_templates'")


def test_every_builtin_template_loads_from_its_compiled_module():
    env = template_environment()
    names = sorted(env.list_templates())
    assert names == sorted(compiled.TEMPLATES)
    for name in names:
        module = compiled.TEMPLATES[name][0]
        assert env.get_template(name).filename == str(prebuilt_templates.compiled_dir() / f"{module}.py"), name


def _environment(search: Path, **options: object) -> jinja2.Environment:
    """An environment over built-in templates in `search`, with the engine's options unless
    `options` changes them."""
    engine = template_environment()
    settings = {"trim_blocks": engine.trim_blocks, "lstrip_blocks": engine.lstrip_blocks,
                "keep_trailing_newline": engine.keep_trailing_newline, "autoescape": False, **options}
    env = jinja2.Environment(loader=prebuilt_templates.BuiltinLoader(str(search)), undefined=jinja2.StrictUndefined,
                             **settings)  # type: ignore[arg-type]
    env.filters.update(engine.filters)
    return env


@pytest.fixture
def edited_builtin(tmp_path: Path) -> Path:
    """A copy of the built-in templates whose ranks.tsv.j2 was rewritten after the build."""
    copy = tmp_path / "templates"
    shutil.copytree(BUILTIN, copy)
    ranks = copy / "ranks.tsv.j2"
    ranks.write_text("edited after the build: {{ 1 + 1 }}\n", encoding="utf-8")
    return copy


def test_an_edited_builtin_template_is_compiled_from_its_source(edited_builtin: Path):
    template = _environment(edited_builtin).get_template("ranks.tsv.j2")
    assert template.filename == str(edited_builtin / "ranks.tsv.j2")
    assert template.render() == "edited after the build: 2\n"
    unchanged = _environment(edited_builtin).get_template("nccl.conf.j2")
    assert unchanged.filename == str(prebuilt_templates.compiled_dir() / "nccl_conf.py")


def test_a_template_edited_while_the_environment_lives_is_reloaded_from_source(edited_builtin: Path):
    env = _environment(edited_builtin)
    assert env.get_template("nccl.conf.j2").filename.endswith("compiled/nccl_conf.py")
    conf = edited_builtin / "nccl.conf.j2"
    conf.write_text("{# reloaded #}" + conf.read_text(encoding="utf-8"), encoding="utf-8")
    stat = conf.stat()
    os.utime(conf, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    assert env.get_template("nccl.conf.j2").filename == str(conf)


def test_an_environment_with_other_options_compiles_the_builtin_templates_from_source():
    env = _environment(BUILTIN, trim_blocks=False)
    assert prebuilt_templates.fingerprint(env) != compiled.FINGERPRINT
    assert env.get_template("ranks.tsv.j2").filename == str(BUILTIN / "ranks.tsv.j2")


def test_a_template_compiled_for_another_jinja2_release_is_compiled_from_source(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(compiled, "FINGERPRINT", compiled.FINGERPRINT.replace("jinja2 ", "jinja2 0.", 1))
    env = _environment(BUILTIN)
    assert env.get_template("ranks.tsv.j2").filename == str(BUILTIN / "ranks.tsv.j2")


def test_module_names_keep_directories_apart():
    assert prebuilt_templates.module_name("cluster/nccl.conf.j2") == "cluster__nccl_conf"
    assert prebuilt_templates.module_name("nccl-topo.xml.j2") == "nccl_topo_xml"
