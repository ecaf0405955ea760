"""Forensics: who holds memory, whether a cell leaked, freeing IPython's hidden references, the
out-of-memory post-mortem, allocation tracing."""
