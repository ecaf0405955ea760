"""Foundation: what every layer may use. The metric registry, units, errors, the clock."""
