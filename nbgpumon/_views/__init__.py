"""Everything nbgpumon shows: text, the static SVG, the live widget, the bqplot report, the HTML
page, the advisor, the profile, the frames."""
