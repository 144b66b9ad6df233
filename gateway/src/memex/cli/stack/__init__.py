"""The local stack: its processes (``services``, ``processes``, ``weaviate``), the supervisor that
starts, checks and restarts them (``supervisor``), and the `memex up`/`down`/`status` commands
(``commands``)."""
