"""The queue of chat turns (SPEC B13): its records (``turns``), the store of threads, turns and
workers' claims (``store``), the change feed that wakes watchers (``events``), and the worker
that answers queued turns (``worker``, ``python -m memex.orchestrator.queue.worker``).
"""
