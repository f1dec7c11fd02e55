"""What the consumers' formats accept, without rendering anything: NCCL's and RCCL's topology
parser rules, NCCL's variable names. Rules and generators both read it."""
