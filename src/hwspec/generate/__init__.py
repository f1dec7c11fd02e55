"""Built-in generators. Each module registers its generators with `@generator` when
`hwspec.generate.engine.generators()` imports it; add a module here and to BUILTIN.

Importing one module (a generation rule reads `nccl.topology_limits`) imports only that module
and what it needs: rendering, and so jinja2, is loaded only when something is generated."""

BUILTIN = ("nccl", "rccl", "launch", "roofline", "diagram", "slurm", "cluster", "domains", "health", "acceptance")
"""The built-in generator modules, in registration order."""
