"""The bodies of the record reads: POST /v1/records/query, a person's timeline and the inbox."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from memex.gateway.models.common import Date, Int, Strict
from memex.gateway.present import Record, Timeline


class FieldFilter(Strict):
    """`field op value`; see the retrieval contract for the operators' meaning."""

    field: str = Field(min_length=1, max_length=128)
    op: Literal["eq", "ne", "lt", "lte", "gt", "gte", "contains", "in"]
    value: Any = Field(description="Any JSON value; a list for `in`.")


class RecordsQuery(Strict):
    collection: str = Field(min_length=1, max_length=64)
    filters: list[FieldFilter] = Field(default_factory=list, max_length=32)
    sort: str = Field("", max_length=128, description='Field to sort by; "-field" descends.')
    limit: Int = Field(0, ge=0, le=1000, description="0: 50.")
    since: Date = Field("", description="Only records dated on or after.")
    until: Date = Field("", description="Only records dated on or before.")
    tags: list[str] = Field(default_factory=list, max_length=16, description="All must hold.")
    include_sensitive: bool = Field(
        False, description="Include sensitive records: needs a key granted it (or loopback)."
    )
    as_of: Date = Field(
        "",
        description="The records as they stood at the end of this day (UTC), each as the "
        "version that held then; empty: now. A day after today is a 400 (docs/as-of.md).",
    )


class RecordsResponse(BaseModel):
    records: list[Record]


TimelineResponse = Timeline


class InboxResponse(BaseModel):
    items: list[Record]
