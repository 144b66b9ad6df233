"""What the gateway's tests run against: fake orchestrator and retrieval services (``fakes``) and
the real app served in front of them (``harness``). Test support, not part of the package."""
