"""How the session is doing, in words: status, the sampler's cost, the recorder, the cluster,
NVTX, what a setting did, and the snapshot."""
