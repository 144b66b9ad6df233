"""Request and response bodies of the HTTP API, as published in its OpenAPI spec: one module per
surface (``ask``, ``chat``, ``records``, ``conversations``, ``turns``, ``personas``,
``openai_compat``, ``admin``), and what they share, errors and health included, in ``common``.

Field names are the proto field names; enums are lower-case words. Limits mirror the services'
own, so a request the gateway accepts is one the services can serve.
"""
