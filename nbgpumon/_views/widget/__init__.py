"""The live chart: the anywidget and the traits it syncs to ``js/``."""
