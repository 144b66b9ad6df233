"""The gateway's routes, one small module per area."""
