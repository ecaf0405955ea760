"""The foundation holds what every layer may use: the metric registry, units, errors, the clock."""
