"""What ask and chat share on a turn (SPEC B1-B4, B7-B12): the ``pipeline`` (check, retrieve,
brief, generate and filter, police, record), its model stage (``generation``), the plan hop's
schema (``planner``), the fusion of several searches (``fusion``) and the personas (``persona``).
"""
