"""Reading memory (issue 11): what the orchestrator shows of retrieved items (``items``), the read
policy every surface goes through (``policy``), the reads themselves (``reads``), people
(``entities``), dates (``periods``, ``as_of``), and forgetting a note everywhere (``forget``,
``traces``).
"""
