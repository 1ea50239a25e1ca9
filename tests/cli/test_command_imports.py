"""A command loads only what it needs: a read of a local file imports neither Qt nor a server driver nor httpx.

`memory-studio COMMAND` goes through the entry module (studio.main) to the command line's package;
the studio (Qt) and the drivers of server stores (psycopg, pymongo, httpx) stay out of a local read, which
is what keeps a command's start-up cost where it was (benchmarks/cli_ratio_benchmark.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

HEAVY = ("PySide6", "shiboken6", "pyqtgraph", "psycopg", "pymongo", "bson", "httpx", "tiktoken", "keyring")
CODE = """
import contextlib, io, json, sys
from studio.main import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def _loaded(argv: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", CODE, *argv], capture_output=True, text=True, check=True,
                          cwd=REPO, timeout=120)
    return json.loads(done.stdout)


@pytest.mark.parametrize("command", [["threads", "{db}", "--all", "--json"], ["inspect", "{db}", "--json"],
                                     ["recall", "{db}", "--thread", "support-1", "--json"],
                                     ["timeline", "{db}", "--thread", "support-1", "--json"],
                                     ["doctor", "{db}", "--json"], ["sample-path"]])
def test_a_local_read_loads_no_qt_no_driver_no_http(fixture_db, command):
    db = str(fixture_db("support"))
    got = _loaded([a.replace("{db}", db) for a in command])
    assert got["code"] == 0
    assert [m for m in HEAVY if m in got["modules"]] == []


def test_a_refused_write_before_any_model_loads_no_http(fixture_db):
    """`revert` needs neither the Reflector nor a model client (it stops here at "add --yes", exit 2)."""
    got = _loaded(["revert", str(fixture_db("support")), "--thread", "support-1", "--to-generation", "0"])
    assert got["code"] == 2
    assert [m for m in HEAVY if m in got["modules"]] == []
