"""`studio.store.warmup`: a server target's slow imports start in the background; a local file needs none."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import json, sys
from studio.store.warmup import warm_up
thread = warm_up(sys.argv[1])
if thread is not None:
    thread.join(60)
print(json.dumps({"thread": thread is not None, "psycopg": "psycopg" in sys.modules,
                  "httpx": "httpx" in sys.modules, "keyring": "keyring" in sys.modules}))
"""


def _warm(target: str) -> dict:
    # a fresh interpreter: this test process may have imported the drivers already
    done = subprocess.run([sys.executable, "-c", SCRIPT, target], capture_output=True, text=True, timeout=120,
                          env={"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", "PATH": ""})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_postgresql_url_loads_psycopg_only():
    # nothing listens on port 9: warming up connects to nothing; the keyring is left to the open (its
    # backend choice beside Qt's start crashed the studio)
    assert _warm("postgresql://someone@127.0.0.1:9/db?schema=x") == {
        "thread": True, "psycopg": True, "httpx": False, "keyring": False}


def test_a_libsql_server_url_loads_httpx_only():
    assert _warm("http://127.0.0.1:9") == {"thread": True, "psycopg": False, "httpx": True, "keyring": False}


def test_a_local_file_loads_nothing(tmp_path):
    assert _warm(str(tmp_path / "memory.db")) == {"thread": False, "psycopg": False, "httpx": False,
                                                 "keyring": False}
