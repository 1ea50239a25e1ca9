"""`any_flag_may_be_set`: one statement that answers True whenever an OM row's flag reads as set (issue 21: a file's
store-wide findings are kept under its stamp only when no flag, and so no clock, can change them)."""

from __future__ import annotations

import libsql
import pytest

from studio.store import open_store
from studio.store.flags import FLAG_COLUMNS, any_flag_may_be_set
from tests.conftest import copy_fixture


@pytest.mark.parametrize("value", [0, 0.0, 1, 2, -1, 0.5, "1", "true", "0", "", "false", b"\x01"])
@pytest.mark.parametrize("column", FLAG_COLUMNS)
def test_every_value_a_record_reads_as_set_is_found(tmp_path, column, value):
    path = copy_fixture("resource", tmp_path / "db")
    with open_store(path) as store:
        assert not any_flag_may_be_set(store)   # the fixture's rows: no flag set
    conn = libsql.connect(str(path))
    conn.execute(f'UPDATE mastra_observational_memory SET "{column}" = ? WHERE rowid = '
                 '(SELECT max(rowid) FROM mastra_observational_memory)', (value,))
    conn.commit()
    conn.close()
    with open_store(path) as store:
        records = [r for key in store.om_lookup_keys() for r in store.om_history(key["lookupKey"])]
        read_as_set = any(r.flag(column) for r in records)
        found = any_flag_may_be_set(store)
    assert found or not read_as_set   # a superset: never False where a record reads a flag as set
    if value in (0, 1):
        assert found == bool(value)   # Mastra's own values: exact
