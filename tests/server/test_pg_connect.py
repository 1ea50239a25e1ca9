"""File ▸ Connect… and the keyring on a real PostgreSQL written by real Mastra (tests/server/conftest.py).

A login role with a password is added to the throwaway server (pg_hba: scram-sha-256 for that role
only, every other login stays `trust`), so a wrong password is really refused by the server. The
keyring is an in-memory backend (`keyring.set_keyring`), never the machine's.
"""

from __future__ import annotations

import urllib.parse

import psycopg
import pytest

from studio.store import credentials as cred
from studio.store.probe import check_connection
from tests.conftest import copy_fixture

ROLE, PASSWORD = "studio_reader", "right-horse-battery"
SCENARIO = "support"


def mastra_thread_count(oracle: dict) -> int:
    """Threads Mastra lists: the `total` of each resource's listThreads({filter: {resourceId}}), summed."""
    total = 0
    for resource in oracle["resources"].values():
        plain = [c for c in resource["listThreads"] if set(c["args"].get("filter") or {}) == {"resourceId"}]
        assert plain, "the oracle has an unfiltered listThreads call per resource"
        total += plain[0]["total"]
    return total


@pytest.fixture(scope="module")
def password_url(pg_corpus) -> str:
    """The URL (no password) of SCENARIO's schema for ROLE, a login the server checks with scram-sha-256."""
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        hba = conn.execute("SHOW hba_file").fetchone()[0]
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone():
            conn.execute(f"SET password_encryption = 'scram-sha-256'; CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'")
            conn.execute(f"GRANT USAGE ON SCHEMA {SCENARIO} TO {ROLE}")
            conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {SCENARIO} TO {ROLE}")
        with open(hba, encoding="utf-8") as f:
            rules = f.read()
        line = f"host all {ROLE} 127.0.0.1/32 scram-sha-256\n"
        if line not in rules:
            with open(hba, "w", encoding="utf-8") as f:
                f.write(line + rules)   # first match wins: only ROLE needs a password
            conn.execute("SELECT pg_reload_conf()")
    port = urllib.parse.urlsplit(pg_corpus.url).port
    return f"postgresql://{ROLE}@127.0.0.1:{port}/postgres?schema={SCENARIO}"


@pytest.fixture
def clean_env(monkeypatch, tmp_path, password_url):
    """No PGPASSWORD / password file from the machine, no secret typed earlier in the session."""
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "no-pgpass"))
    cred.forget_for_session(password_url)
    yield
    cred.forget_for_session(password_url)


def test_test_connection_reports_mastras_thread_count(pg_corpus):
    expected = mastra_thread_count(pg_corpus.oracles[SCENARIO])
    assert expected >= 5   # support: 5 OM threads at least
    check = check_connection(pg_corpus.target(SCENARIO))
    assert check.ok and check.threads == expected
    assert check.sentence == f"Connected: a Mastra database with {expected} threads (schema {SCENARIO})."


def test_a_schema_without_mastra_tables_is_not_a_mastra_database(pg_corpus):
    check = check_connection(f"{pg_corpus.url}?schema=information_schema")
    assert check.outcome == "not-mastra", check


def test_the_server_s_answers_are_sorted_by_the_driver_s_state(pg_corpus, password_url, clean_env):
    """StoreError.kind from psycopg: libpq's PQconnectionNeedsPassword is "no-secret", a
    password the server refused "auth", a missing database "no-database"; a refused port "unreachable" (exit 6)."""
    import socket

    from studio.app.failures import EXIT_SERVER_DOWN, exit_code_for
    from studio.errors import StoreError
    from studio.store import open_store

    def kind_and_cause(url):
        with pytest.raises(StoreError) as caught:
            open_store(url)
        return caught.value.kind, caught.value.__cause__

    kind, cause = kind_and_cause(password_url)
    assert kind == "no-secret" and cause.pgconn.needs_password
    cred.remember_for_session(password_url, "wrong-horse")
    kind, cause = kind_and_cause(password_url)
    assert kind == "auth" and cause.pgconn.used_password and not cause.pgconn.needs_password
    cred.forget_for_session(password_url)
    missing = pg_corpus.url.rsplit("/", 1)[0] + f"/no_such_database?schema={SCENARIO}"
    assert kind_and_cause(missing)[0] == "no-database" and check_connection(missing).outcome == "no-database"
    with socket.socket() as held:   # bound and never listening: every connect is refused
        held.bind(("127.0.0.1", 0))
        dead = f"postgresql://{ROLE}@127.0.0.1:{held.getsockname()[1]}/postgres?schema={SCENARIO}"
        with pytest.raises(StoreError) as caught:
            open_store(dead)
    assert caught.value.kind == "unreachable" and exit_code_for(caught.value) == EXIT_SERVER_DOWN


def test_a_refused_user_and_a_full_server_have_their_kind_and_sentence(pg_corpus, capsys):
    """The server's refusals that are no password matter: a role that does not exist and a NOLOGIN role (SQLSTATE
    28000) are "login-refused", a login past its role's CONNECTION LIMIT (53300, the same code and check as a
    server at max_connections) "too-many-connections"; each says what happened in one sentence, on the command
    line too (exit 2 for the user, exit 3 for the full server: nothing was done, try again)."""
    from studio.app.failures import EXIT_BAD_INPUT, EXIT_REFUSED, exit_code_for
    from studio.cli import main
    from studio.errors import StoreError
    from studio.store import open_store

    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        for role, rights in (("studio_full", "LOGIN CONNECTION LIMIT 0"), ("studio_nologin", "NOLOGIN")):
            if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                conn.execute(f"CREATE ROLE {role} {rights}")
    port = urllib.parse.urlsplit(pg_corpus.url).port
    cases = [("studio_no_such_role", "login-refused", EXIT_BAD_INPUT,
              "The server refused this user (not a password matter)",
              "the server has no user (role) named studio_no_such_role (check the URL's USER)"),
             ("studio_nologin", "login-refused", EXIT_BAD_INPUT,
              "The server refused this user (not a password matter)",
              "the user (role) studio_nologin may not log in (it has no LOGIN right; check the URL's USER)"),
             ("studio_full", "too-many-connections", EXIT_REFUSED,
              "The server answered but took no new connection",
              f'the server at 127.0.0.1:{port} has no connection free for this login (too many connections for '
              f'role "studio_full"): try again when other clients have closed theirs, or raise the limit')]
    for role, kind, code, checked, said in cases:
        url = f"postgresql://{role}@127.0.0.1:{port}/postgres?schema={SCENARIO}"
        with pytest.raises(StoreError) as caught:
            open_store(url)
        assert caught.value.kind == kind and exit_code_for(caught.value) == code, caught.value
        assert str(caught.value).endswith(said)
        check = check_connection(url)
        assert check.outcome == kind and check.sentence.startswith(checked) and check.sentence.endswith(said)
        assert main(["threads", url, "--json"]) == code
        assert said in capsys.readouterr().err


def test_the_password_comes_from_the_session_or_the_keyring_and_a_wrong_one_is_said(
        pg_corpus, password_url, clean_env, memory_keyring):
    assert check_connection(password_url).outcome == "no-secret"
    cred.remember_for_session(password_url, "wrong-horse")
    wrong = check_connection(password_url)
    assert wrong.outcome == "auth" and wrong.sentence.startswith("Wrong password: the server refused the login")
    assert "wrong-horse" not in wrong.sentence
    cred.forget_for_session(password_url)
    cred.save_secret(password_url, PASSWORD)
    ok = check_connection(password_url)
    assert ok.ok and ok.threads == mastra_thread_count(pg_corpus.oracles[SCENARIO])
    userinfo_url = password_url.replace(f"{ROLE}@", f"{ROLE}:wrong-horse@")   # the URL's own password comes first
    assert check_connection(userinfo_url).outcome == "auth"


def test_a_write_transaction_logs_in_with_the_password_that_opened_the_store(
        pg_corpus, password_url, clean_env, memory_keyring):
    """Each write opens its own connection: it must find the password the read session found (typed in
    Connect… this session, or kept in the keyring), not only one libpq finds by itself."""
    from studio.errors import StoreError
    from studio.store.target import parse_target
    from studio.store.write.backends.pg import pg_write_transaction

    # nothing gives a password: one sentence, nothing written
    with pytest.raises(StoreError) as refused, pg_write_transaction(parse_target(password_url)):
        pass
    assert str(refused.value).startswith("Cannot connect to ") and "for writing" in str(refused.value)
    for give in (lambda: cred.remember_for_session(password_url, PASSWORD),
                 lambda: (cred.forget_for_session(password_url), cred.save_secret(password_url, PASSWORD))):
        give()
        with pg_write_transaction(parse_target(password_url)) as tx:   # an empty transaction: logged in
            assert tx is not None


def _settings_text(ctx, tmp_path) -> str:
    ctx.settings.sync()
    return (tmp_path / "settings.ini").read_text(encoding="utf-8")


@pytest.mark.parametrize("remember", [True, False])
def test_connect_keeps_the_password_out_of_settings_and_open_recent_reopens(
        pg_corpus, password_url, clean_env, memory_keyring, studio, studio_ctx, qtbot, tmp_path, remember):
    window = studio()
    dialog = window.connect_controller.show_dialog()
    if remember:   # pasted with the password in it: the dialog moves it into the hidden field
        dialog.url_edit.setText(password_url.replace(f"{ROLE}@", f"{ROLE}:{PASSWORD}@"))
        dialog.url_edit.editingFinished.emit()
        assert PASSWORD not in dialog.url_edit.text() and dialog.schema_edit.text() == SCENARIO
    else:
        dialog.url_edit.setText(password_url.split("?")[0])
        dialog.schema_edit.setText(SCENARIO)
        dialog.secret_edit.setText(PASSWORD)
    with qtbot.waitSignal(dialog.checked, timeout=60_000) as tested:
        dialog.test_button.click()
    expected = mastra_thread_count(pg_corpus.oracles[SCENARIO])
    assert tested.args[0].threads == expected
    assert dialog.result_label.text() == f"Connected: a Mastra database with {expected} threads (schema {SCENARIO})."
    dialog.remember_check.setChecked(remember)
    with qtbot.waitSignal(window.database_opened, timeout=60_000):
        dialog.connect_button.click()
    assert studio_ctx.runner.wait_idle(120)
    assert window.thread_model.rowCount() == expected
    assert dialog.secret_edit.text() == ""
    assert window.windowTitle() == f"Memory Studio — {password_url}"
    key = ("memory-studio", f"postgresql://{ROLE}@127.0.0.1:{urllib.parse.urlsplit(password_url).port}/postgres")
    assert memory_keyring.secrets == ({key: PASSWORD} if remember else {})
    text = _settings_text(studio_ctx, tmp_path)
    assert PASSWORD not in text and password_url in text
    assert studio_ctx.recent_files()[0] == password_url

    # Open Recent: open a local file, then the URL again from the menu (its password not typed again)
    local = copy_fixture("history", tmp_path / "fx")
    window.open_database(local)
    assert studio_ctx.runner.wait_idle(120) and window.database_path == str(local)
    if remember:
        cred.forget_for_session(password_url)   # a new session: only the keyring has it
    window._rebuild_recent_menu()
    entry = next(a for a in window.recent_menu.actions() if a.text() == password_url)
    with qtbot.waitSignal(window.database_opened, timeout=60_000):
        entry.trigger()
    assert studio_ctx.runner.wait_idle(120)
    assert window.database_path == password_url and window.thread_model.rowCount() == expected
    assert PASSWORD not in _settings_text(studio_ctx, tmp_path)


def test_a_reconnect_without_the_password_asks_for_it(pg_corpus, password_url, clean_env, memory_keyring, studio,
                                                     studio_ctx, qtbot):
    window = studio()
    with qtbot.waitSignal(window.database_failed, timeout=60_000):
        window.open_database(password_url)   # Open Recent in a new session: no PGPASSWORD, nothing in the keyring
    dialog = window.connect_controller.dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.url_edit.text() == password_url.split("?")[0] and dialog.schema_edit.text() == SCENARIO
    assert dialog.result_label.text().startswith("The server asks for a password and none was given")
    assert window.error_box is None or not window.error_box.isVisible()
    dialog.secret_edit.setText("wrong-horse")
    with qtbot.waitSignal(dialog.checked, timeout=60_000):
        dialog.test_button.click()
    assert dialog.result_label.text() == f"Wrong password: the server refused the login to {password_url}"
    assert cred.pg_password(password_url)[1] == "none", "a refused password is not kept for the session"
    dialog.secret_edit.setText(PASSWORD)
    with qtbot.waitSignal(window.database_opened, timeout=60_000):
        dialog.connect_button.click()
    assert studio_ctx.runner.wait_idle(120) and window.database_path == password_url


def test_the_helper_process_opens_the_url_with_its_password(pg_corpus, password_url, clean_env, studio_ctx):
    """Big databases load in the helper process: it opens the URL as given (not its display form, whose
    password is ***), and gets the password typed this session (the helper is another process)."""
    from studio.app.helper_process import HelperProcess
    from studio.app.listing import load_listing

    expected = mastra_thread_count(pg_corpus.oracles[SCENARIO])
    cred.remember_for_session(password_url, PASSWORD)
    helper = HelperProcess()
    try:
        assert len(helper.call(password_url, 1, load_listing).rows) == expected
    finally:
        helper.close()
    cred.forget_for_session(password_url)
    runner, got = studio_ctx.runner, []
    runner.open_store(password_url.replace(f"{ROLE}@", f"{ROLE}:{PASSWORD}@"), on_error=got.append)
    assert runner.wait_idle(120) and got == []
    runner.submit_call(load_listing, helper=True, on_done=got.append, on_error=got.append)
    assert runner.wait_idle(120)
    assert runner.helper.pid is not None, "the call ran in the helper process"
    assert len(got) == 1 and len(got[0].rows) == expected, got


def test_the_keyring_is_asked_only_when_the_server_wants_a_password(pg_corpus, password_url, clean_env,
                                                                   memory_keyring, monkeypatch):
    """Choosing the keyring's backend costs ~0.1–0.2 s before the first paint: a login the server trusts
    never asks it; a login it checks asks it once, after the server said it wants a password."""
    from studio.store import open_store

    asked = []
    get = memory_keyring.get_password
    monkeypatch.setattr(memory_keyring, "get_password", lambda service, user: asked.append(user) or get(service, user))
    with open_store(pg_corpus.target(SCENARIO)) as store:   # `trust` for the corpus's login
        assert len(store.list_threads()) == mastra_thread_count(pg_corpus.oracles[SCENARIO])
    assert asked == []
    cred.save_secret(password_url, PASSWORD)
    with open_store(password_url) as store:                  # scram-sha-256 for ROLE: the keyring's password
        assert len(store.list_threads()) == mastra_thread_count(pg_corpus.oracles[SCENARIO])
    assert asked == [cred.keyring_target(password_url)]


def test_a_password_of_any_characters_connects_and_a_wrong_one_is_said_the_same_way(pg_corpus, password_url,
                                                                                    clean_env):
    """Issue 22.2 on the real server: a password holding @ ? # / : % & (percent-encoded, or a raw @) reaches
    libpq whole; a wrong password's message does not depend on what was typed."""
    from studio.errors import StoreError
    from studio.store import open_store
    from tests.store.test_redaction import random_secrets

    odd = "a@b?c#d/e:f%g&h p"
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        conn.execute(f"ALTER ROLE {ROLE} PASSWORD %s".replace("%s", "'" + odd.replace("'", "''") + "'"))
    try:
        base = password_url.replace(f"{ROLE}@", f"{ROLE}:{{}}@")
        store = open_store(base.format(urllib.parse.quote(odd, safe="")))
        assert store.list_threads() is not None
        store.close()
        with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {ROLE} PASSWORD 'pass@en99'")
        store = open_store(base.format("pass@en99"))   # a raw @: the last one ends the password
        store.close()
        said = set()
        for secret in random_secrets(40, seed=5):
            with pytest.raises(StoreError) as refused:
                open_store(base.format(urllib.parse.quote(secret, safe="")))
            said.add(str(refused.value))
        assert len(said) == 1 and f"refused the password for user {ROLE}" in said.pop()
    finally:
        with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {ROLE} PASSWORD '{PASSWORD}'")


def test_a_password_in_the_url_warns_once_and_password_stdin_needs_none(pg_corpus, password_url, clean_env,
                                                                        monkeypatch, capsys):
    """Issue 22.4: `threads` with the password in the URL warns once (naming the alternatives); the same command
    with `--password-stdin` reads it from a pipe, says nothing of it, and holds no secret in its arguments."""
    import io
    import json

    from studio.cli import main

    monkeypatch.setattr(cred, "_warned", set())
    with_password = password_url.replace(f"{ROLE}@", f"{ROLE}:{PASSWORD}@")
    assert main(["threads", with_password, "--json"]) == 0
    out, err = capsys.readouterr()
    threads = json.loads(out)
    assert err.count("warning: ") == 1 and PASSWORD not in err
    for word in ("$PGPASSWORD", "~/.pgpass", "keyring", "Connect…", "--password-stdin", password_url):
        assert word in err, word
    cred.forget_for_session(password_url)
    argv = ["threads", password_url, "--json", "--password-stdin"]
    assert PASSWORD not in " ".join(argv)
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == threads and err == ""


def test_postgresql_errors_on_the_command_line_are_sentences(pg_corpus, password_url, clean_env, memory_keyring,
                                                              capsys):
    """libpq's own words ("fe_sendauth: no password supplied", "password authentication failed …") become what
    happened and what to do: where the studio takes a password from, and where the wrong one came from."""
    from studio.cli import main

    assert main(["threads", password_url, "--json"]) == 2
    err = capsys.readouterr().err
    assert "fe_sendauth" not in err and f"asks for a password for user {ROLE} and none was found" in err
    assert "$PGPASSWORD" in err and "~/.pgpass" in err and "system keyring" in err and "URL" in err
    wrong = password_url.replace(f"{ROLE}@", f"{ROLE}:wrong-horse@")
    assert main(["threads", wrong, "--json"]) == 2
    err = capsys.readouterr().err
    assert f"refused the password for user {ROLE} (wrong password; it came from the URL)" in err
    assert "wrong-horse" not in err and "FATAL" not in err
    port = urllib.parse.urlsplit(password_url).port
    missing = password_url.replace(f":{port}/postgres", f":{port}/no_such_db")
    cred.remember_for_session(missing, PASSWORD)
    assert main(["threads", missing, "--json"]) == 2
    assert "the server has no database named no_such_db" in capsys.readouterr().err


def test_connect_is_prefilled_with_the_open_server_url(pg_corpus, studio, studio_ctx):
    """File ▸ Connect… over an open server store starts from its URL (no secret), not an empty form."""
    from studio.store.target import strip_secrets

    target = pg_corpus.target(SCENARIO)
    window = studio(target)
    assert studio_ctx.runner.wait_idle(120) and window.thread_model.rowCount() > 0
    dialog = window.connect_controller.show_dialog()
    assert dialog.schema_edit.text() == SCENARIO and dialog.url_edit.text()
    assert dialog.target() == strip_secrets(target)
    dialog.close()
