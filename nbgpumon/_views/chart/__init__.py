"""The chart drawn without a widget: its panels and ticks, and the static SVG picture."""
