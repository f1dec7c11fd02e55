"""Diagnostics: `Diagnostic`, `Severity`, positions, the code registry (`codes`) and the report
formats (`report`). Every other layer reports through these types."""

from hwspec.diagnostics.codes import Code
from hwspec.diagnostics.diagnostic import Diagnostic, HwspecError, Position, Severity, display_path

__all__ = ["Code", "Diagnostic", "HwspecError", "Position", "Severity", "display_path"]
