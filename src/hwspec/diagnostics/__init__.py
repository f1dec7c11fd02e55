"""Diagnostics: `Diagnostic`, `Severity`, positions, the code registry (`codes`) and the report
formats (`report`). Every other layer reports through these types."""

from hwspec.diagnostics.diagnostic import Diagnostic, HwspecError, Position, Severity, display_path

__all__ = ["Diagnostic", "HwspecError", "Position", "Severity", "display_path"]
