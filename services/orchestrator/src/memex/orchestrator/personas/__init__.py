"""Built-in persona files (TOML)."""
