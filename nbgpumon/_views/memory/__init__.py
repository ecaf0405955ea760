"""What this kernel's GPU memory is made of, who holds it, what came back, and why it ran
out, in words."""
