"""Processes: this kernel's process tree (its children, grandchildren behind a shell, across
exec), each child's GPU figures read from the device source's process list, and who the other
processes on a GPU are (another notebook's kernel, another user's process)."""
