"""Note and record versions kept across re-indexing, and memory read as of a date (issue 37)."""
