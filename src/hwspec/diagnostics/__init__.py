"""Diagnostics: `Diagnostic`, `Severity`, `Location` (every place in a file hwspec carries), the
code registry (`codes`) and the report formats (`report`). Every other layer reports through
these types."""

from hwspec.diagnostics.codes import Code
from hwspec.diagnostics.diagnostic import Diagnostic, HwspecError, Location, Severity, display_path, os_reason, real_path

__all__ = ["Code", "Diagnostic", "HwspecError", "Location", "Severity", "display_path", "os_reason", "real_path"]
