"""The one sampler thread and the bounded timeline it fills."""
