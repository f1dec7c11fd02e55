"""The spec language: the pydantic models, units, the checks that are code, pydantic errors as
diagnostics, the JSON Schema, workload files."""
