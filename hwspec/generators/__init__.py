"""Built-in generators. Each module registers its generators with `@generator` on import;
add a module here and import it below."""

from hwspec.generators import nccl  # noqa: F401
from hwspec.generators import rccl  # noqa: F401
from hwspec.generators import launch  # noqa: F401
from hwspec.generators import roofline  # noqa: F401
from hwspec.generators import diagram  # noqa: F401
from hwspec.generators import slurm  # noqa: F401
from hwspec.generators import cluster  # noqa: F401
from hwspec.generators import domains  # noqa: F401
