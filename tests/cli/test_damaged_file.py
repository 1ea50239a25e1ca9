"""A partly damaged memory.db: every command whose read meets the damage says so in one sentence and exits 2
(the exit code of a store error, `exit_code_for`); none reports a partial result as success.

The damage: the root page of mastra_messages overwritten (`tests.conftest.damage_table_root`). SQLite
still opens the file and reads the threads, the OM records and the message index; any read of a
message row fails with "database disk image is malformed".
"""

from __future__ import annotations

import json

import pytest

from studio.cli import main
from tests.conftest import damage_table_root, load_oracle

DAMAGE = "the database file is corrupt"


@pytest.fixture
def damaged(fixture_db):
    return damage_table_root(fixture_db("support"))


def test_inspect_refuses_a_status_it_could_not_read(damaged, fixture_db, capsys):
    # inspect read the unobserved messages with `WHERE rowid IN (…)`, which skips rows the damaged
    # table cannot find: it exited 0 with pending_tokens 0 for every thread (support-1: 2,488 in
    # Mastra's oracle). Now the row is reached from its index entry and SQLite reports the damage.
    intact = fixture_db("buffered")
    assert main(["inspect", str(intact), "--json"]) == 0   # the reading path itself works
    capsys.readouterr()
    assert main(["inspect", str(damaged), "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and DAMAGE in err and str(damaged) in err


def test_the_reads_that_do_not_touch_the_damage_still_answer(damaged, capsys):
    oracle = load_oracle("support")
    assert main(["threads", str(damaged), "--all", "--json"]) == 0
    ids = json.loads(capsys.readouterr().out)["thread_ids"]
    assert sorted(ids) == sorted(oracle["threads"])


@pytest.mark.parametrize("argv", [["doctor"], ["tokens", "--thread", "support-1"], ["recall", "--thread", "support-1"],
                                  ["timeline", "--thread", "support-1"], ["speakers", "--thread", "support-1"],
                                  ["context", "--thread", "support-1", "--turn", "2"]])
def test_every_read_of_the_messages_exits_2_with_one_sentence(damaged, capsys, argv):
    assert main([argv[0], str(damaged), *argv[1:], "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.count(DAMAGE) == 1
