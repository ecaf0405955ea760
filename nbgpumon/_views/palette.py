"""The views' colours, each named for its job and defined once: every picture, page and report
takes its colours from here, so one role looks the same wherever it is drawn.

A metric's line colour is not here: it stays with the metric's declaration (the registry's
``color``); :data:`LINE_CYCLE` only colours a line whose metric has none. The live chart's
front end (``js/src/``) keeps colours of its own: see the notes by each role that it shares.
"""

from __future__ import annotations

# -- lines -----------------------------------------------------------------------------------------
# A line whose metric declares no colour takes this cycle's for its place in its panel; the
# report's lines of other nodes take one each. js/src/chart.js's PALETTE is the same cycle.
LINE_CYCLE = ("#3b82f6", "#f59e0b", "#10b981", "#8b5cf6", "#06b6d4", "#ef4444", "#ec4899")

# -- a comparison's two runs (the page's lines and legend, the report's) ---------------------------
RUN_COLORS = {"A": "#4c78a8", "B": "#f58518"}

# -- text and rules --------------------------------------------------------------------------------
PAGE_TEXT = "#222"  # a self-contained page's body text
TITLE_TEXT = "#333"  # a static picture's panel title
QUIET_TEXT = "#666"  # what explains other text: axis labels, a hint, a fact's name
TABLE_RULE = "#ddd"  # the line under each table row

# -- a static picture's plot area (chart/svg_plot) -------------------------------------------------
PICTURE_BACKGROUND = "white"  # behind the whole picture, so it reads on a dark page too
FRAME = "#ccc"  # the plot area's border
GRIDLINE = "#e6e6e6"  # a y gridline across the plot area
TICK = "#999"  # a time tick under the plot area

# -- cells and marks on a timeline -----------------------------------------------------------------
MARK = "#b279a2"  # a mark()'s dashed line and its label
BAND_LABEL = "#555"  # a cell's [N] at the top of its band
# A static picture draws its cell bands translucent (the opacity is the picture's to choose);
# the comparison page alternates the two greys, so back-to-back cells stay apart.
PICTURE_BAND = "#888"
PICTURE_BAND_DARKER = "#555"
PICTURE_REGRESSION_BAND = "#e45756"  # a regressed cell's band on the comparison page
# The bqplot reports fill their cell bands in pale tones, alternating
REPORT_BANDS = ("#c6dbef", "#dadaeb")
REPORT_REGRESSION_BAND = "#f4a6a3"  # a regressed cell's band in the comparison report
REGRESSION_ROW = "#fde2e1"  # a regressed cell's row in the comparison table
BRUSH = "#888"  # the report's time-range selection while it is dragged

# -- the report's per-cell bars --------------------------------------------------------------------
PEAK_BAR = "#4c78a8"
KEPT_BAR = "#f58518"
DURATION_BAR = "#9d755d"

# -- what memory is (%gpumon explain's bars) -------------------------------------------------------
# One colour per category, the same on every GPU. js/src/kinds.js (KIND_COLORS) repeats these
# for the live chart's "by kind" bands, all but the CUDA context's.
CATEGORY_COLORS = {
    "parameters": "#2563eb",
    "gradients": "#60a5fa",
    "optimizer state": "#f59e0b",
    "buffers": "#a855f7",
    "arrays held by variables": "#10b981",
    "outputs and tracebacks": "#ec4899",
    "unexplained": "#ef4444",
    "CUDA context and libraries": "#334155",
    "activations and temporaries": "#f97316",
}
# Each framework's arrays held by variables ("arrays held by variables (X)") in explain's bars:
# in the plug-ins' order, numpy's after them (the live chart's bands draw them all in the first)
ARRAYS_GREENS = ("#10b981", "#34d399", "#047857", "#6ee7b7")
# A framework's unused reserve, and any category without a colour above, take these in turn
RESERVE_GREYS = ("#94a3b8", "#cbd5e1", "#64748b")
