"""Sources: one module per origin of numbers. A source reads one instant and never raises."""
