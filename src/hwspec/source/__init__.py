"""Reading platform files: positioned safe YAML, `repeat`/`${...}` expansion, the source map."""
