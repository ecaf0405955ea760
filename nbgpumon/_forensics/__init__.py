"""Forensics says who holds memory and whether a cell leaked; it frees IPython's hidden references,
makes the out-of-memory post-mortem and traces allocations."""
