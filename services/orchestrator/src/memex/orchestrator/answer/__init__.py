"""Reading a numbered answer (issue 10): the model cites sources by number, memex grounds and
grades the numbers itself, mechanically.

``reading.py`` puts the parts together (``Reading``, ``read``, ``read_reply``); ``numbers.py``
reads the model's ``[n]`` markers, ``grading.py`` grades a claim against a source, ``claims.py``
splits an answer into claims and re-anchors them, ``check.py`` cuts the sentences the claim check
finds unsupported, ``judging.py`` weighs a whole reading for ask's abstention rules and its part
calls, and ``streams.py`` shows a reply to the reader as it streams.
"""
