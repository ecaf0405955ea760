"""What nbgpumon knows of processes: this kernel's process tree (its children, grandchildren behind
a shell, across exec) and each child's GPU figures read from the device source's process list. It
also says who the other processes on a GPU are (another notebook's kernel, another user's
process)."""
