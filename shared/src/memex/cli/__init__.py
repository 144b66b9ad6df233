"""The `memex` command line."""
