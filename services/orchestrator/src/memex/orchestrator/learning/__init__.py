"""The learning loop (issue 37, docs/reflect.md): beliefs (``beliefs``) derived from the person's
notes by ``reflect``, with the prompt and the reading of its reply in ``reflect_prompt``.
"""
