"""What the consumers' formats accept, without rendering anything: NCCL's and RCCL's topology
parser rules, NCCL's variable names, the `<system>` tree of their topology files, and what the
generators cannot write (`limits`). Rules and generators both read it, so `validate` loads no
generator."""
