"""The record filter language, evaluated in Python (shared by every backend).

A filter is a list of ``Condition(field, op, value)``; all must hold. ``field`` is ``id``,
``date`` or a dotted path into ``Record.fields`` (``status``, ``address.city``); it must match
``FIELD_PATTERN``. Operators:

* ``eq`` / ``ne``: equality (``ne`` also holds when the field is missing).
* ``lt`` / ``lte`` / ``gt`` / ``gte``: ordering between two numbers or two strings (dates are
  strings); any other pairing, or a missing field, is false.
* ``contains``: a string field contains the string value (case-insensitive), or a list field
  has the value as an element.
* ``in``: the value is a list and the field equals one of its elements.

Nothing here builds query strings; a backend that pushes conditions down must bind values as
parameters and agree with ``matches``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memex.retrieval.store.base import Condition, JsonValue, Record, Sort
from memex.shared.errors import InvalidArgument

FIELD_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}(\.[A-Za-z_][A-Za-z0-9_]{0,63}){0,3}$")
OPS = ("eq", "ne", "lt", "lte", "gt", "gte", "contains", "in")
_MISSING = object()


def check_field(name: str) -> str:
    """Returns ``name`` if it is a valid field path, else raises InvalidArgument."""
    if not FIELD_PATTERN.match(name):
        raise InvalidArgument(
            f"invalid field {name!r}: use a name of letters, digits and _ (dotted for nesting, "
            "e.g. address.city)"
        )
    return name


def check_condition(condition: Condition) -> Condition:
    """Validates a condition's field, operator and value shape."""
    check_field(condition.field)
    if condition.op not in OPS:
        raise InvalidArgument(f"invalid operator {condition.op!r}: use one of {', '.join(OPS)}")
    if condition.op == "in" and not isinstance(condition.value, list):
        raise InvalidArgument(f"operator 'in' on {condition.field!r} needs a list value")
    return condition


def field_value(record: Record, path: str) -> Any:
    """The value at ``path`` (``id`` and ``date`` are the record's own), or a sentinel."""
    if path == "id":
        return record.id
    if path == "date" and "date" not in record.fields:
        return record.date if record.date is not None else _MISSING
    value: Any = record.fields
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _ordered(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    return (isinstance(a, numbers) and isinstance(b, numbers)) or (
        isinstance(a, str) and isinstance(b, str)
    )


def _holds(value: Any, op: str, target: JsonValue) -> bool:
    if value is _MISSING:
        return op == "ne"
    if op == "eq":
        return bool(value == target)
    if op == "ne":
        return bool(value != target)
    if op == "in":
        return isinstance(target, list) and value in target
    if op == "contains":
        if isinstance(value, str) and isinstance(target, str):
            return target.casefold() in value.casefold()
        return isinstance(value, list) and target in value
    if not _ordered(value, target):
        return False
    if op == "lt":
        return bool(value < target)
    if op == "lte":
        return bool(value <= target)
    if op == "gt":
        return bool(value > target)
    return bool(value >= target)  # gte


def matches(record: Record, conditions: Sequence[Condition]) -> bool:
    """Whether every condition holds for the record."""
    return all(_holds(field_value(record, c.field), c.op, c.value) for c in conditions)


def sort_records(records: list[Record], sort: Sort | None) -> list[Record]:
    """Orders records by ``sort``: numbers, then strings (each group in the asked direction),
    then records where the field is missing or not a number or string; ties by id."""
    if sort is None:
        return sorted(records, key=lambda r: r.id)
    numbers: list[tuple[Any, Record]] = []
    strings: list[tuple[Any, Record]] = []
    rest: list[Record] = []
    for record in sorted(records, key=lambda r: r.id):
        value = field_value(record, sort.field)
        if isinstance(value, int | float) and not isinstance(value, bool):
            numbers.append((value, record))
        elif isinstance(value, str):
            strings.append((value, record))
        else:
            rest.append(record)
    out: list[Record] = []
    for group in (numbers, strings):
        group.sort(key=lambda pair: pair[0], reverse=sort.descending)  # stable: ties keep id order
        out += [record for _, record in group]
    return out + rest


def apply_query(
    records: Sequence[Record], conditions: Sequence[Condition], sort: Sort | None, limit: int
) -> list[Record]:
    """Filter, sort and cap: the reference semantics of ``Store.query_records``."""
    kept = [r for r in records if matches(r, conditions)]
    return sort_records(kept, sort)[: max(limit, 0)]
