"""The live chart, an anywidget, and the traits it syncs to ``js/``."""
