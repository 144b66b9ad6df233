"""`memex eval`: the question files (``questions``), how an answer is judged (``matching``,
``scoring``), the report (``report``), the retrieval-only run (``search``), the replay of logged
asks (``replay``) and the command that runs them (``command``)."""
