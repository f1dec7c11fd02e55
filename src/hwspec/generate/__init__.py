"""Generation: the engine (`engine`: contexts, plans, `--check`), how generators are declared
and found (`registry`), the writer (`writer`), and hwspec's own generators, one module per
family (`nccl`, `rccl`, `launch`, ...). Every function of this package's modules marked with
`@generator` is a built-in generator (`registry.builtin_generators`): a new module here needs
no other registration.

Importing one module (a generation rule reads `nccl.topology_limits`) imports only that module
and what it needs: rendering, and so jinja2, is loaded only when something is generated."""
