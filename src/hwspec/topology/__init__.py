"""Every derived connectivity fact, computed once and queried (node, cluster), the networkx
views and Slurm hostlists."""
