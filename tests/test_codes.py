"""The code registry: `Code` members are the code texts (E, the live checks' D and I codes, the acceptance A codes), and
the source names them, never the text."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from hwspec.diagnostics import Code, Diagnostic, Severity
from hwspec.diagnostics.codes import lookup
from hwspec.diagnostics.report import render

SRC = Path(__file__).resolve().parent.parent / "src" / "hwspec"
CODE_TEXT = re.compile(r"[EDIA][0-9]{3}")
TAG = re.compile(r"\[[EDIA][0-9]{3}[] ]")  # error[E902], error[D105 pcie-link], as a message prints them


def code_texts(source: str) -> list[str]:
    """The code texts `source` writes as values: a string that is a code ("E105", "D105",
    "I101"), or a report tag inside a string or f-string ("error[E901]", "error[I101 input-syntax]"). Prose that mentions a code (a docstring's
    "reported as E900", a help text) is not one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if CODE_TEXT.fullmatch(node.value.strip()):
                found.append(node.value)
            found += TAG.findall(node.value)
    return found


def test_the_scan_finds_code_texts_and_leaves_prose():
    source = '''
"""Module doc: reported as E900."""
def f(exc, d):
    code = "E105"
    other = 'E902' if exc else "E901"
    print(f"hwspec: error[E902]: {exc}")
    return d.code in {"E100", " E101 "}, "a rule that raises is reported as E900"
def g(machine, where):
    """An I101 when the input is not XML; D105 is diff's."""
    machine.problem(where, "I101", "not XML")
    drift = ("D105", "pcie-link")
    return f"error[D113 nvlink-clique]: {drift}", "I103 is a warning", "D1xx"
'''
    assert sorted(code_texts(source)) == [" E101 ", "D105", "E100", "E105", "E901", "E902", "I101", "[D113 ", "[E902]"]


@pytest.mark.slow  # parses every module of the package
def test_no_code_text_outside_the_registry():
    """Every emission site names a `Code` member: a typo is an AttributeError, not a new code,
    and `hwspec explain`, the code reference and the reports cannot disagree on what a code means."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "diagnostics" / "codes.py":
            continue
        texts = code_texts(path.read_text())
        if texts:
            found[str(path.relative_to(SRC))] = texts
    assert found == {}


def test_a_member_is_its_code_text():
    assert Code.DUPLICATE_KEY == "E107" and isinstance(Code.DUPLICATE_KEY, str)
    assert str(Code.NON_STRING_KEY) == f"{Code.NON_STRING_KEY}" == "E104"
    assert Code("E105") is Code.EXPANSION_TOO_LARGE
    assert "E105" in {Code.EXPANSION_TOO_LARGE} and Code.EXPANSION_TOO_LARGE in {"E105"}
    assert (Code.DUPLICATE_KEY.summary, Code.NON_STRING_KEY.summary) == ("duplicate key", "non-string key")
    assert len({code.value for code in Code}) == len(Code) and all(CODE_TEXT.fullmatch(code) for code in Code)
    assert all(code.summary and code.doc.endswith(".") for code in Code)


def test_a_live_code_prints_its_summary_as_a_rule_prints_its_name():
    """The drift (D) and input (I) codes are printed with their short name, the E codes without."""
    assert (Code.PCIE_LINK, Code.PCIE_LINK.printed_name) == ("D105", "pcie-link")
    assert (Code.INPUT_SYNTAX, Code.INPUT_SYNTAX.printed_name) == ("I101", "input-syntax")
    assert Code.DUPLICATE_KEY.printed_name == ""
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", code.printed_name) for code in Code if code[0] in "DIA")
    found = Diagnostic("p.yaml", 70, 11, Severity.ERROR, Code.PCIE_LINK, "gpu3: narrower", name=Code.PCIE_LINK.printed_name)
    assert found.format() == "p.yaml:70:11: error[D105 pcie-link]: gpu3: narrower"


def test_lookup_takes_any_case_and_refuses_what_is_not_a_code():
    assert lookup(" e107\n") is Code.DUPLICATE_KEY
    assert lookup("E999") is None and lookup("HW201") is None and lookup("DUPLICATE_KEY") is None


def test_reports_print_a_member_as_its_text():
    """A member in a diagnostic prints exactly as the text did, in every format."""
    by_member = Diagnostic("p.yaml", 3, 1, Severity.ERROR, Code.DUPLICATE_KEY, "duplicate key 'a'", "one is enough")
    by_text = Diagnostic("p.yaml", 3, 1, Severity.ERROR, "E107", "duplicate key 'a'", "one is enough")
    assert by_member == by_text
    for fmt in ("text", "json", "github", "sarif"):
        assert render([by_member], fmt) == render([by_text], fmt), fmt
    assert json.loads(render([by_member], "json"))[0]["code"] == "E107"
    assert by_member.format().startswith("p.yaml:3:1: error[E107]: ")


def test_the_loader_reports_keys_by_the_registry_meaning():
    """E104 is a non-string key and E107 a duplicate key, as `hwspec explain` and the code reference say
    (the loader once reported them the other way round)."""
    from hwspec.diagnostics import HwspecError
    from hwspec.source.loader import load_yaml_text

    def codes(text: str) -> list[str]:
        try:
            load_yaml_text(text, "p.yaml")
        except HwspecError as exc:
            return [d.code for d in exc.diagnostics]
        raise AssertionError("loaded")

    assert codes("a: 1\na: 2\n") == ["E107"] == [Code.DUPLICATE_KEY]
    assert codes("1: x\n") == ["E104"] == [Code.NON_STRING_KEY]
    assert (Code.DUPLICATE_KEY.summary, Code.NON_STRING_KEY.summary) == ("duplicate key", "non-string key")


def test_drift_codes_are_the_d_codes_and_the_acceptance_findings_that_drain_a_node():
    """A run below its band, wrong results and a part slow in every run are drift (exit 1, SARIF
    errors); a run that cannot be compared or reads above the datasheet is not."""
    assert {c for c in Code if c.is_drift and c[0] == "A"} == {Code.BELOW_BAND, Code.WRONG_RESULTS, Code.SLOW_IN_EVERY_RUN}
    assert all(c.is_drift for c in Code if c[0] == "D") and not any(c.is_drift for c in Code if c[0] in "EI")
