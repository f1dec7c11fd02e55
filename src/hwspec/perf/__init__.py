"""Performance numbers: roofline, cluster roofline, platform figures, estimates, comparisons, plots."""
