"""Two runs side by side: the table, the words, the aligned timeline, the report and the page."""
