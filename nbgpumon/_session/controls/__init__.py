"""The session's controllers: recording, cluster, tracing and NVTX, memory, children, profiling."""
