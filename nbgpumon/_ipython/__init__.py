"""This package wires nbgpumon into IPython: the extension's load and unload, the ``%gpumon`` magic,
the cell hooks. The only part of nbgpumon that imports IPython."""
