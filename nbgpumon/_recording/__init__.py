"""A session's recording in SQLite: the writer (its own thread), the reader, the versioned schema,
and the checks that keep other files untouched."""
