"""memex common library: what every service shares (settings, logging, errors, gRPC lifecycle)."""
