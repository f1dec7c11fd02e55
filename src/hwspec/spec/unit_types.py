"""Pydantic field types of the quantities in `hwspec.spec.units`: parsed from what people write,
stored canonically, printed back in JSON mode, described in the JSON Schema.

Kept apart from `hwspec.spec.units` so that the parsers import without pydantic; the validators
named here are module-level functions of `hwspec.spec.units`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

from hwspec.spec import units
from hwspec.spec.units import (
    _BYTE_RATE_KIND,
    _DURATION_KIND,
    _FLOP_RATE_KIND,
    _SIZE_KIND,
    _TRANSFER_RATE_KIND,
    format_byte_rate,
    format_bytes,
    format_duration,
    format_flop_rate,
    format_transfer_rate,
)


def _serializer(format_: Callable[[Any], str]) -> PlainSerializer:
    return PlainSerializer(format_, return_type=str, when_used="json")


Bytes = Annotated[int, BeforeValidator(units.validate_bytes), _serializer(format_bytes),
                  WithJsonSchema(_SIZE_KIND.json_schema("bytes"))]
"""A size field: bytes (int) in Python, '40 GiB' in YAML and JSON; at most 1 PiB (`units.MAX_BYTES`)."""
ByteRate = Annotated[float, BeforeValidator(units.validate_byte_rate), _serializer(format_byte_rate),
                     WithJsonSchema(_BYTE_RATE_KIND.json_schema("bytes per second per direction"))]
"""A bandwidth field: bytes per second per direction (float) in Python, '25 GB/s' in YAML and JSON;
finite, at most 1000 TB/s (`units.MAX_BYTE_RATE`)."""
FlopRate = Annotated[float, BeforeValidator(units.validate_flop_rate), _serializer(format_flop_rate),
                     WithJsonSchema(_FLOP_RATE_KIND.json_schema("operations per second"))]
"""A compute-rate field: operations per second (float) in Python, '312 TFLOPS' in YAML and JSON;
finite, at most 1 EFLOPS (`units.MAX_FLOP_RATE`)."""
TransferRate = Annotated[float, BeforeValidator(units.validate_transfer_rate), _serializer(format_transfer_rate),
                         WithJsonSchema(_TRANSFER_RATE_KIND.json_schema("transfers per second"))]
"""A transfer-rate field: transfers per second (float) in Python, '16 GT/s' in YAML and JSON;
finite, at most 1000 GT/s (`units.MAX_TRANSFER_RATE`)."""
Duration = Annotated[float, BeforeValidator(units.validate_duration), _serializer(format_duration),
                     WithJsonSchema(_DURATION_KIND.json_schema("seconds"))]
"""A duration field: seconds (float) in Python, '2 us' in YAML and JSON; finite, at most one day
(`units.MAX_DURATION`)."""
