"""Command-line mistakes a user makes get a refusal (exit 2) that names what to change, and nothing on disk."""

from __future__ import annotations

import json
from argparse import Namespace

import pytest
from PySide6.QtGui import QImage

from studio.main import main
from studio.ui.app import run_studio
from tests.conftest import make_plain_sqlite


def test_screenshot_into_missing_folder_is_refused_and_creates_nothing(fixture_db, tmp_path, capsys):
    missing = tmp_path / "nonexistent"
    code = main([str(fixture_db("support")), "--screenshot", str(missing / "x.png")])
    assert code == 2
    assert not missing.exists()
    assert "does not exist" in capsys.readouterr().err


def test_screenshot_with_unknown_suffix_is_refused(fixture_db, tmp_path, capsys):
    code = main([str(fixture_db("support")), "--screenshot", str(tmp_path / "x.gif")])
    assert code == 2
    assert not (tmp_path / "x.gif").exists()
    assert ".jpg" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "magic"), [("x.jpg", b"\xff\xd8\xff"), ("x.JPEG", b"\xff\xd8\xff"),
                                             ("x.png", b"\x89PNG\r\n\x1a\n"), ("x.bmp", b"BM")])
def test_screenshot_writes_the_format_its_suffix_names(qapp, fixture_db, tmp_path, name, magic):
    # The magic numbers are the formats' own: JPEG starts FF D8 FF (SOI + marker), PNG its 8-byte
    # signature, BMP "BM".
    out = tmp_path / name
    args = Namespace(path=str(fixture_db("support")), screenshot=str(out), thread=None, tab=None, size="800x600")
    assert run_studio(args) == 0
    assert out.read_bytes()[:len(magic)] == magic
    assert QImage(str(out)).width() == 800


def test_whatif_settings_error_names_the_option(fixture_db, capsys):
    # buffered.db's record stores blockAfter as 4,800 tokens (1.2 × its messageTokens 4,000); a larger
    # --message-tokens makes Mastra's own check (blockAfter >= messageTokens) fail.
    code = main(["whatif", str(fixture_db("buffered")), "--thread", "long-run", "--message-tokens", "8000",
                 "--json"])
    err = capsys.readouterr().err
    assert code == 2
    assert "blockAfter (4800) must be >= messageTokens (8000)" in err
    assert "--block-after" in err and "--message-tokens" in err


def test_threads_per_page_zero_is_refused(fixture_db, capsys):
    path = str(fixture_db("support"))
    assert main(["threads", path, "--per-page", "0", "--json"]) == 2
    assert "--all" in capsys.readouterr().err
    assert main(["threads", path, "--per-page", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["thread_ids"]) == 1 and doc["has_more"] == (doc["total"] > 1)


def test_not_a_mastra_database_error_names_the_path(tmp_path, capsys):
    other = make_plain_sqlite(tmp_path / "other-app.db")
    assert main(["inspect", str(other), "--json"]) == 2
    err = capsys.readouterr().err
    assert str(other) in err and "not a Mastra memory database" in err


def test_unknown_thread_is_spelled_one_way(qapp, fixture_db, tmp_path, capsys):
    path = fixture_db("support")
    assert main(["tokens", str(path), "nope", "--json"]) == 2
    cli_err = capsys.readouterr().err
    args = Namespace(path=str(path), screenshot=str(tmp_path / "y.png"), thread="nope", tab=None, size="800x600")
    assert run_studio(args) == 2
    gui_err = capsys.readouterr().err
    assert cli_err.split(" in ")[0] == gui_err.split(" in ")[0] == "memory-studio: No thread 'nope'"


def test_tokens_takes_the_thread_as_argument_or_option(fixture_db, capsys):
    from studio.cli import main

    path = str(fixture_db("support"))
    assert main(["tokens", path, "support-1", "--json"]) == 0
    positional = capsys.readouterr().out
    assert main(["tokens", path, "--thread", "support-1", "--json"]) == 0
    assert capsys.readouterr().out == positional
    assert main(["tokens", path, "--json"]) == 2
    assert "name the thread" in capsys.readouterr().err
    assert main(["tokens", path, "support-1", "--thread", "support-2"]) == 2
    assert "two thread ids" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "expected"), [
    (["inspct", "{db}"], "'inspct' is not a command (did you mean 'inspect'?) nor a file"),
    (["docter", "{db}", "--json"], "did you mean 'doctor'?"),
    (["delete", "{db}"], "'delete' is not a command nor a file"),
])
def test_a_mistyped_command_is_named_as_such(fixture_db, tmp_path, monkeypatch, capsys, argv, expected):
    # The word stood where the studio takes its PATH, and argparse said "unrecognized arguments: <the db>",
    # blaming the one argument that was right.
    monkeypatch.chdir(tmp_path)
    db = str(fixture_db("support"))
    code = main([a.replace("{db}", db) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err
    assert "unrecognized arguments" not in err and "inspect, tokens" in err


def test_a_file_named_like_a_word_still_opens(fixture_db, tmp_path, monkeypatch, capsys):
    # A memory.db saved without a suffix under a word-like name is a path, not a mistyped command.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "memory").write_bytes(fixture_db("support").read_bytes())
    code = main(["memory", "--screenshot", str(tmp_path / "x.png"), "--size", "640x480"])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "x.png").exists()


def test_the_speakers_tab_is_named_as_the_studio_titles_it(fixture_db, tmp_path, monkeypatch):
    # The tab is titled "Speakers" in the studio; --tab only knew its internal name "participants".
    import studio.ui.app

    seen = []
    monkeypatch.setattr(studio.ui.app, "run_studio", lambda args: seen.append(args.tab) or 0)
    db = str(fixture_db("collab"))
    for name in ("speakers", "participants"):
        assert main([db, "--screenshot", str(tmp_path / "x.png"), "--thread", "room_7", "--tab", name]) == 0
    assert seen == ["participants", "participants"]


@pytest.mark.parametrize(("command", "says"), [
    ("tokens", "token counts of a thread's messages"),
    ("doctor", "check a memory.db for known Mastra memory failures"),
    ("revert", "write a new generation restoring generation N's observations"),
])
def test_each_command_help_says_what_the_command_does(capsys, command, says):
    # `memory-studio tokens --help` showed the usage and options only: the command's one-line help
    # (written for each command) appeared nowhere, since the top-level help lists the names alone.
    assert main([command, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert says in out


@pytest.mark.parametrize("size", ["20000x20000", "8001x700", "1024x8001", "199x700", "1024x149", "1024", "ax700"])
def test_a_window_size_out_of_bounds_is_refused_before_any_window(fixture_db, tmp_path, monkeypatch, capsys, size):
    # `--size 20000x20000` was accepted and rendered for 35 s; each side is bounded (200/150..8000 px) and
    # checked before Qt loads: the studio is never started
    import studio.ui.app

    started = []
    monkeypatch.setattr(studio.ui.app, "run_studio", lambda args: started.append(args) or 0)
    out = tmp_path / "x.png"
    code = main([str(fixture_db("support")), "--screenshot", str(out), "--size", size])
    assert (code, started, out.exists()) == (2, [], False)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--size" in err


def test_the_window_size_bounds_themselves_are_accepted(monkeypatch, tmp_path):
    import studio.ui.app

    seen = []
    monkeypatch.setattr(studio.ui.app, "run_studio", lambda args: seen.append(args.size) or 0)
    for size in ("200x150", "8000x8000", "1024x700"):
        assert main(["--screenshot", str(tmp_path / "x.png"), "--size", size]) == 0
    assert seen == ["200x150", "8000x8000", "1024x700"]


def _help_of(command, capsys):
    assert main([command, "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_json_is_described_one_way_by_every_command(capsys):
    from studio.cli import COMMANDS, JSON_HELP

    for command in COMMANDS:
        text = _help_of(command, capsys)
        assert "--json" in text, command
        assert JSON_HELP in text, command


def test_whatif_budget_and_observe_timeout_say_what_they_do(capsys):
    whatif = _help_of("whatif", capsys)
    assert "--share-token-budget Mastra's shareTokenBudget" in whatif
    assert "--timeout SECONDS longest wait for one model answer (default 120)" in _help_of("observe", capsys)
    assert "longest wait for one model answer (default 300)" in _help_of("reflect", capsys)
