"""Every sentence nbgpumon says about a session, a cell, a process or a fault, from facts."""
