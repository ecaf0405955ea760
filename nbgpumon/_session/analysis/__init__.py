"""Analyses of what was measured: advice, the comparison of two runs, fit and headroom."""
