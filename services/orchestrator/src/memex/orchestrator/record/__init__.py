"""What memex records of each answer (SPEC B4, B12, issue 37): the one audited path of every model
call (``audit``), redaction before the LLM log (``redaction``), telemetry and the LLM log
(``telemetry``), and evidence bundles (``evidence``, ``evidence_store``).
"""
