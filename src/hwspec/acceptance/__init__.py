"""Acceptance tests of machines against their platform files: `plan` lays out the benchmark runs
(nccl-tests or rccl-tests, nvbandwidth) a cluster needs at bring-up and after repair, in rounds of
runs that share no link, and the sizes the runs use; the generated scripts run them."""
