"""hwspec: declarative hardware-platform specs for GPU training machines.

Data flows one way: YAML (with positions) -> spec model -> resolved platform -> topology
graph -> rules -> findings; resolved platform + graph -> generators -> plan -> write/check.
"""

__version__ = "0.1.0"
