"""What a cell shows when it ends with one of nbgpumon's objects: short text and escaped HTML."""
