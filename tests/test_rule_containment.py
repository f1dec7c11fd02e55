"""Site rules cannot spoil the report, the exit status or the process: what a rule raises, a
changed working directory, a rule module that fails to import, exit handlers and threads a rule
leaves behind, signal handlers it installs (docs/security.md, `hwspec.rules.sandbox`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

from hwspec.cli.commands import main
from hwspec.diagnostics import Severity
from hwspec.model.load import load_platform
from hwspec.rules import Rule, Sandbox, run_rules
from hwspec.rules.sandbox import describe
from hwspec.topology import topology_of

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "tests/fixtures/rules/base_2gpu.yaml"  # clean: no finding
SARIF_SCHEMA = ROOT / "tests/data/sarif-schema-2.1.0.json"


def site_rules(directory: Path, **modules: str) -> Path:
    """`directory` holding one rule module per keyword (its name) with that source."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, source in modules.items():
        (directory / f"{name}.py").write_text(textwrap.dedent(source))
    return directory


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def hwspec(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    """The `hwspec` program (`python -m hwspec`), as CI runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "hwspec", *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def sarif_results(text: str) -> list[tuple[str, str]]:
    log = json.loads(text)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(log)
    return [(r["ruleId"], r["message"]["text"]) for r in log["runs"][0]["results"]]


# ---------------------------------------------------------------- 1. whatever a rule raises


UNSHOWABLE_EXCEPTIONS = {
    "str_raises": ("class Bad(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n",
                   "Bad()", "Bad: <str() failed>"),
    "str_and_repr_raise": ("class Bad(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n"
                           "    def __repr__(self):\n        raise RuntimeError('no')\n",
                           "Bad()", "Bad: <str() failed>"),
    "str_returns_no_str": ("class Bad(Exception):\n    def __str__(self):\n        return 42\n",
                           "Bad()", "Bad: <str() failed>"),
    "type_name_with_controls": ("Bad = type('Bad\\n::error::\\x1b[31m', (Exception,), {})\n",
                                "Bad('one\\ntwo')", "Bad\\x0a::error::\\x1b[31m: one\\x0atwo"),
    "type_name_raises": ("class Meta(type):\n    @property\n    def __name__(cls):\n        raise RuntimeError('no')\n"
                         "class Bad(Exception, metaclass=Meta):\n    pass\n",
                         "Bad('x')", "<unnamed type>: x"),
}


@pytest.mark.parametrize("fault", sorted(UNSHOWABLE_EXCEPTIONS))
def test_a_rule_raising_an_exception_that_cannot_be_shown_is_a_one_line_e900_in_valid_json_and_sarif(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, fault: str) -> None:
    definition, raised, shown = UNSHOWABLE_EXCEPTIONS[fault]
    rules = site_rules(tmp_path / "rules", bad=f'''
        from hwspec.rules import rule

        {textwrap.indent(definition, "        ").strip()}


        @rule("SITE001", "bad")
        def bad(ctx):
            """Raises."""
            raise {raised}
            yield
    ''')
    message = f"rule SITE001 bad failed: {shown}"
    status, out, _ = run(capsys, "validate", "--format", "json", "--rules", rules, BASE)
    assert status == 1 and [(d["code"], d["message"]) for d in json.loads(out)] == [("E900", message)]
    status, out, _ = run(capsys, "validate", "--format", "sarif", "--rules", rules, BASE)
    assert status == 1 and sarif_results(out) == [("E900", f"{message}\nhint: this is a bug in {rules / 'bad.py'}")]
    assert message.isprintable()


def test_describe_shows_an_exception_as_one_short_printable_line() -> None:
    assert describe(ValueError("x" * 1000)) == "ValueError: " + "x" * 285 + "..."
    assert describe(ValueError("a\tb\u2028c")) == "ValueError: a\\x09b\\u2028c"


def test_a_rule_exiting_with_an_unshowable_code_is_e900() -> None:
    platform = load_platform(BASE)

    class Code:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    def leaving(ctx: object) -> tuple:
        """Leaves."""
        sys.exit(Code())

    (found,) = run_rules(topology_of(platform), [Rule("T001", "probe", Severity.INFO, "node", leaving, "x.py")],
                         sandbox=Sandbox())
    assert (found.code, found.message) == ("E900", "rule T001 probe called sys.exit(a Code object)")


# ---------------------------------------------------------------- 2. the working directory


CHDIR_RULE = '''
    import os
    from hwspec.rules import rule


    @rule("SITE002", "wanders")
    def wanders(ctx):
        """Changes directory."""
        os.chdir("elsewhere")
        yield from ()
'''


def test_a_rule_changing_the_working_directory_is_e900_and_the_next_relative_paths_still_mean_the_same(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "a.yaml").write_bytes(BASE.read_bytes())
    (tmp_path / "b.yaml").write_bytes(BASE.read_bytes())
    site_rules(tmp_path / "rules", wanders=CHDIR_RULE)
    monkeypatch.chdir(tmp_path)
    status, out, _ = run(capsys, "validate", "--format", "json", "--rules", "rules", "a.yaml", "b.yaml")
    assert status == 1 and Path.cwd() == tmp_path
    message = "rule SITE002 wanders changed the working directory (put back)"
    assert [(d["file"], d["code"], d["message"]) for d in json.loads(out)] == [
        ("a.yaml", "E900", message), ("b.yaml", "E900", message)]


def test_generate_writes_nothing_outside_its_output_directory_when_a_rule_changes_directory(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "a.yaml").write_bytes(BASE.read_bytes())
    site_rules(tmp_path / "rules", wanders=CHDIR_RULE)
    monkeypatch.chdir(tmp_path)
    status, _, err = run(capsys, "generate", "--rules", "rules", "-o", "out", "a.yaml")
    assert status == 2 and err.endswith("hwspec: nothing written: fix the errors above first\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "elsewhere", "rules"]
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_rule_module_changing_the_working_directory_at_import_is_e900(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "elsewhere").mkdir()
    site_rules(tmp_path / "rules", wanders="import os\n\nos.chdir('elsewhere')\n")
    monkeypatch.chdir(tmp_path)
    status, out, _ = run(capsys, "validate", "--rules", "rules", BASE)
    assert (status, Path.cwd()) == (1, tmp_path)
    assert out.startswith("rules/wanders.py:1:1: error[E900]: the rule module changed the working directory "
                          "(put back) while it was imported\n")


# ---------------------------------------------------------------- 3. a rule module that fails to import


FAILING_IMPORT = {"broken": "import os\nraise RuntimeError('no config')\n",
                  "fine": '''
                      from hwspec.rules import rule


                      @rule("SITE003", "fine", "warning")
                      def fine(ctx):
                          """Always says something."""
                          yield ctx.finding("still checked", at=("gpu0",))
                  '''}


def test_a_rule_module_that_fails_to_import_is_a_located_e900_in_the_sarif_report_with_exit_zero(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rules = site_rules(tmp_path / "rules", **FAILING_IMPORT)
    status, out, err = run(capsys, "validate", "--format", "sarif", "--exit-zero", "--rules", rules, BASE)
    assert status == 0 and "exit status 0 although the report has errors" in err
    assert sarif_results(out) == [
        ("E900", f"the rule module failed to import: RuntimeError: no config\n"
                 f"hint: none of its rules ran; this is a bug in {rules / 'broken.py'}"),
        ("SITE003", "still checked")]
    log = json.loads(out)
    assert log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 1}


# ---------------------------------------------------------------- 4, 5. what a rule leaves behind


@pytest.mark.slow  # a hwspec process
def test_an_atexit_handler_that_prints_cannot_corrupt_the_json_report(tmp_path: Path) -> None:
    site_rules(tmp_path / "rules", noisy='''
        import atexit
        from hwspec.rules import rule

        atexit.register(print, "registered at import")


        @rule("SITE004", "noisy", "warning")
        def noisy(ctx):
            """Registers an exit handler."""
            atexit.register(print, "registered by the rule")
            yield ctx.finding("noisy")
    ''')
    result = hwspec("validate", "--format", "json", "--rules", "rules", BASE, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [d["message"] for d in json.loads(result.stdout)] == ["noisy"]
    assert "registered" not in result.stdout + result.stderr


@pytest.mark.slow  # a hwspec process
def test_a_non_daemon_thread_started_by_a_rule_does_not_keep_the_process_alive(tmp_path: Path) -> None:
    site_rules(tmp_path / "rules", lingers='''
        import threading, time
        from hwspec.rules import rule


        @rule("SITE005", "lingers", "warning")
        def lingers(ctx):
            """Leaves a thread behind."""
            threading.Thread(target=time.sleep, args=(600,)).start()
            yield ctx.finding("lingers")
    ''')
    result = hwspec("validate", "--format", "json", "--rules", "rules", BASE, cwd=tmp_path)  # times out after 60 s
    assert result.returncode == 0, result.stderr
    assert [d["message"] for d in json.loads(result.stdout)] == ["lingers"]


# ---------------------------------------------------------------- what else a rule may do to the process


@pytest.mark.slow  # a hwspec process whose rules install handlers and close stdout
def test_a_rule_installing_signal_handlers_and_closing_stdout_leaves_the_next_rule_contained(tmp_path: Path) -> None:
    """A rule that ignores SIGALRM does not free the next rule from the time limit; one that
    closes file descriptor 1 and replaces sys.stdout and sys.stderr does not lose the report."""
    site_rules(tmp_path / "rules", rude='''
        import os, signal, sys
        from hwspec.rules import rule


        @rule("SITE006", "a-rude", "warning")
        def rude(ctx):
            """Takes the process's signals and output."""
            signal.signal(signal.SIGALRM, signal.SIG_IGN)
            os.close(1)
            sys.stdout, sys.stderr = open(os.devnull, "w"), None
            yield ctx.finding("rude")


        @rule("SITE007", "b-loops")
        def loops(ctx):
            """Never ends."""
            while True:
                pass
            yield
    ''')
    result = hwspec("validate", "--format", "json", "--rule-time-limit", "1", "--rules", "rules", BASE, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert [(d["code"], d["message"]) for d in json.loads(result.stdout)] == [
        ("E900", "rule SITE007 b-loops ran longer than the 1 s time limit"), ("SITE006", "rude")]
