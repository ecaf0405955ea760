"""The report of a session, live or recorded: the bqplot widget, the HTML page, the DataFrames."""
