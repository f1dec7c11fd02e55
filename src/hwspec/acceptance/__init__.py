"""Acceptance tests derived from a platform spec: what nccl-tests, rccl-tests and nvbandwidth
should show on it (`expected`, from the links a run crosses, `spans`, and NCCL's choices,
`algorithms`), their saved outputs read back (`results`) and compared (`compare`), and a
cluster's runs laid out in rounds of runs that share no link (`plan`)."""
