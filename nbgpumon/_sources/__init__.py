"""Each source reads one kind of number (NVML, a framework's allocator, the host) for one instant;
none keeps history, starts a thread or raises."""
