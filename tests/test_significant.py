"""`hwspec.text.significant`: the one number format of rule findings (3 digits) and the
performance reports (4 digits)."""

from __future__ import annotations

import math

import pytest

from hwspec.text import significant


@pytest.mark.parametrize(("value", "digits", "text"), [
    (7.8769, 3, "7.88"), (31.5077, 3, "31.5"), (1555.0, 3, "1555"), (150.6, 3, "151"), (0.5, 3, "0.5"), (99.96, 3, "100"),
    (31.5077, 4, "31.51"), (155.44, 4, "155.4"), (1555.4, 4, "1555"), (0.8, 4, "0.8"), (-2.5, 4, "-2.5"), (0.0, 4, "0"),
    (0.00001234, 3, "0.0000123"), (12345678.9, 3, "12345679"),
])
def test_a_number_keeps_its_significant_digits_without_exponent_or_trailing_zeros(value, digits, text):
    assert significant(value, digits) == text


def test_what_is_not_a_finite_number_is_written_as_python_writes_it():
    assert [significant(x, 3) for x in (math.inf, -math.inf, math.nan)] == ["inf", "-inf", "nan"]
