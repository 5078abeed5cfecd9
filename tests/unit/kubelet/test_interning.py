"""One held object per distinct value (interning.py), bounded."""

from __future__ import annotations

from services.kubelet.interning import InternTable


def test_the_first_value_is_held_for_its_key_until_the_table_starts_again() -> None:
    table: InternTable[str, list[int]] = InternTable(limit=2)
    first, same, other = [1], [1], [2]
    assert table.held("a", first) is first
    assert table.held("a", same) is first
    assert table.held("b", other) is other
    # Full: a new key starts the table again; what was handed out stays as it was.
    newcomer = [3]
    assert table.held("c", newcomer) is newcomer
    assert table.held("a", same) is same
    assert first == [1]
