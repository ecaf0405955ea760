"""Sampling: the one sampler thread and the bounded timeline it fills."""
