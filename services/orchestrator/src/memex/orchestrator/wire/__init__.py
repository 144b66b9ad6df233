"""The wire: the only package that touches protobuf and gRPC.

``servicer`` is the ``OrchestratorService`` (proto ⇄ domain translation only), with the reads'
(``reads_servicer``, ``reads_pb``) and the learning loop's (``beliefs_servicer``) halves beside it;
``answers_pb`` translates answers, conversations and threads; ``clients`` implements the ports
(``memex.orchestrator.ports``) over the retrieval and reasoner stages' gRPC contracts.
"""
