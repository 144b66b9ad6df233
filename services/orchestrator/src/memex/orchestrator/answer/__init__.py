"""What an answer says, and whether it holds (SPEC B1, B2, B7-B10, issues 10 and 35): everything
between the retrieved items and the checked answer, with no I/O.

- The briefing: ``sources`` numbers the retrieved items [1]..[n] and renders them,
  ``briefing`` writes the instructions around them, ``question_parts`` splits a compound
  question, ``lexical`` holds the word-level measures all of this uses.
- Reading the reply: ``reading`` puts the parts together (``Reading``, ``read``,
  ``read_reply``); ``numbers`` reads the model's ``[n]`` markers, ``citations`` polices them,
  ``grading`` grades a claim against a source, ``claims`` splits an answer into claims and
  re-anchors them, ``to_type`` adds the note's own line for a command named in part.
- The claim check: ``claim_check`` finds the specifics an answer states, ``check`` cuts the
  sentences whose specifics no cited source holds, ``numbers`` and ``polarity`` catch wrong
  figures and reversed meanings, ``conflicts`` shows notes that disagree.
- Abstention: ``abstention`` alone decides when an ask abstains and what it says then, from the
  tests in ``judging`` and ``asked_kind``.
- The stream: ``stream_filter`` drops ``<think>`` and the citations tail from the model's
  stream; ``streams`` holds a sentence back until the claim check passes it and shows the
  reply to the reader as it streams.
"""
