"""Search channels by name, as settings, surfaces and logs spell them, read off the contract's enum
so that a channel added to ``memex.common.v1.Channel`` is known everywhere at once."""

from __future__ import annotations

from memex.common.v1 import common_pb2

CHANNELS: dict[str, common_pb2.Channel.ValueType] = {
    name.removeprefix("CHANNEL_").lower(): value
    for name, value in common_pb2.Channel.items()
    if value != common_pb2.CHANNEL_UNSPECIFIED
}
"""Channel name ("vector", "keyword", ...) to its enum value."""

CHANNEL_NAMES: dict[common_pb2.Channel.ValueType, str] = {
    value: name for name, value in CHANNELS.items()
}
"""Enum value to channel name."""
