"""Chat (SPEC B7, B8, B11): the streamed chat turn (``chat``), the conversations and messages it
keeps (``conversations``), and the small text rules for titles and queued context (``text``).
"""
