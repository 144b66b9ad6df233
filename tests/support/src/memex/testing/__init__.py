"""Helpers for tests of memex services: real servers on free loopback ports.

Used by every service's tests, so they live in a distribution of their own (memex-testing,
installed for development and CI only) rather than in one conftest or in the library. The
common helpers are named here; the modules beside them hold them by kind (``ports``, ``paths``,
``postgres``, ``serving``), and ``stack``, ``reasoner``, ``retrieval`` and ``weaviate_cluster``
(imported by name, as they load a surface's or a stage's code) help the tests of one part.
"""

from memex.testing.paths import REPO_ROOT, SHARED_DATA, require, shared_data
from memex.testing.ports import free_port, free_ports, port_block
from memex.testing.postgres import private_postgres
from memex.testing.serving import serving

__all__ = [
    "REPO_ROOT",
    "SHARED_DATA",
    "free_port",
    "free_ports",
    "port_block",
    "private_postgres",
    "require",
    "serving",
    "shared_data",
]
