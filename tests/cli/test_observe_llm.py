"""`memory-studio observe --model`: the in-process LLM Observer against a local fake provider, on fixture copies.

First principles: the model's answer is the only input a model adds, so the write of `--model`
must equal the write of `--answer-file` holding the same answer, cell for cell (write times and
per-run marker ids aside; that write itself is checked against real Mastra in
tests/interop/test_observe_interop.py). The request must carry the unobserved window as
Mastra's formatMessagesForObserver renders it (studio.engine.observer_format, itself checked
against Mastra), the prior hints, and our own system prompt.
"""

from __future__ import annotations

import json

from studio.cli import main
from studio.engine.observer import load_observation_window
from studio.engine.observer_format import format_messages_for_observer
from studio.engine.observer_prompt import system_prompt
from tests.conftest import copy_fixture
from tests.fake_llm import Reply
from tests.interop.conftest import dump_tables, file_state
from tests.interop.test_observe_interop import _comparable
from tests.observe_cases import above_everything, observable_copy, raw_thread_om

ANSWER = ("<observations>\nDate: Dec 2, 2026\n* 🔴 (10:00) User said the launch moved to Friday.\n"
          "* 🟡 (10:02) Assistant suggested a QA checklist.\n</observations>\n\n"
          "<current-task>\n- Primary: plan the Friday launch\n</current-task>\n\n"
          "<suggested-response>\nOffer the QA checklist.\n</suggested-response>\n")


def resource_answer(first: str, second: str) -> str:
    """A multi-thread answer: a block for thread FIRST (with a current task) and one for SECOND (with a title)."""
    return (f'<observations>\n<thread id="{first}">\nDate: Dec 2, 2026\n* 🔴 (10:00) Erin prefers tea.\n'
            "<current-task>\n- Primary: first thread task\n</current-task>\n</thread>\n"
            f'<thread id="{second}">\nDate: Dec 2, 2026\n* 🟡 (10:05) Erin asked about trains.\n'
            "<thread-title>Train questions</thread-title>\n</thread>\n</observations>\n")


def _run(capsys, argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip().startswith("{") else None), err


def _same_write(before: dict, a, b) -> int:
    """Assert copies A and B changed the same cells to the same values; return how many cells changed."""
    after_a, after_b = dump_tables(a), dump_tables(b)
    changed = {}
    for name in (a, b):
        tables = after_a if name is a else after_b
        cells = {}
        for table, rows in tables.items():
            assert set(rows) == set(before[table]), table
            for key, row in rows.items():
                cells.update({(table, key, c): v for c, v in row.items() if before[table][key].get(c) != v})
        changed[name] = cells
    assert set(changed[a]) == set(changed[b])
    for cell, value in changed[a].items():
        assert _comparable(cell, changed[b][cell]) == _comparable(cell, value), cell
    return len(changed[a])


def test_model_write_equals_the_answer_file_write_and_the_request_carries_the_window(fake_llm, capsys, tmp_path):
    (a, thread_id), (b, _) = observable_copy("support", tmp_path / "a"), observable_copy("support", tmp_path / "b")
    before = dump_tables(a)
    window = load_observation_window(str(a), thread_id)
    prior = raw_thread_om(a, thread_id).get("currentTask")
    assert prior, f"the case needs a thread with a prior current task; {thread_id} has none"
    fake_llm.push(Reply(text=ANSWER))
    code, doc, err = _run(capsys, ["observe", a, "--thread", thread_id, "--model", "openai-compatible/observer",
                                   "--base-url", fake_llm.base_url, "--yes", "--json"])
    assert code == 0, err
    assert doc["observed"] is True and doc["strategy"] == "llm" and doc["model"] == "openai-compatible/observer"
    assert doc["current_task"] == "- Primary: plan the Friday launch"
    (request,) = fake_llm.requests
    assert request.system == system_prompt()
    transcript = format_messages_for_observer(window.messages).strip()
    assert transcript and transcript in request.prompt
    assert prior.strip() in request.prompt  # the thread's prior current task
    answer = tmp_path / "answer.txt"
    answer.write_text(ANSWER, encoding="utf-8")
    code, doc_b, err = _run(capsys, ["observe", b, "--thread", thread_id, "--answer-file", answer, "--yes", "--json"])
    assert code == 0, err
    assert doc_b["observation_token_count"] == doc["observation_token_count"] == doc["observation_tokens_after"]
    assert _same_write(before, a, b) > 3


def test_resource_scope_model_write_equals_the_answer_file_write(fake_llm, capsys, tmp_path):
    # a threshold above everything: observe() then takes every thread with unobserved messages (below the gate,
    # so --below-threshold), and the answer holds a block for two of them
    a, b = copy_fixture("resource", tmp_path / "a"), copy_fixture("resource", tmp_path / "b")
    for path in (a, b):
        above_everything(path, "resource", "resource:user-erin")
    before = dump_tables(a)
    window = load_observation_window(str(a), "res-a")
    picked = [t for t, _, _ in window.threads]
    assert len(picked) >= 2, f"the case needs two threads with unobserved messages, the window has {picked}"
    answer_text = resource_answer(picked[0], picked[1])
    fake_llm.push(Reply(text=answer_text))
    code, doc, err = _run(capsys, ["observe", a, "--thread", "res-a", "--model", "openai-compatible/observer",
                                   "--base-url", fake_llm.base_url, "--below-threshold", "--yes", "--json"])
    assert code == 0, err
    assert doc["threads"][picked[1]]["thread_title"] == "Train questions"
    (request,) = fake_llm.requests
    for thread_id, messages, _ in window.threads:   # every picked thread's window, in its own block
        block = f'<thread id="{thread_id}">\n{format_messages_for_observer(messages).strip()}\n</thread>'
        assert block in request.prompt
    answer = tmp_path / "answer.txt"
    answer.write_text(answer_text, encoding="utf-8")
    code, _, err = _run(capsys, ["observe", b, "--thread", "res-a", "--answer-file", answer, "--below-threshold",
                                 "--yes", "--json"])
    assert code == 0, err
    assert _same_write(before, a, b) > 3


def test_degenerate_or_empty_model_answers_write_nothing(fake_llm, capsys, tmp_path):
    path, thread_id = observable_copy("support", tmp_path / "db")   # at the threshold: only the answer can stop it
    state = file_state(path)
    argv = ["observe", path, "--thread", thread_id, "--model", "openai-compatible/observer",
            "--base-url", fake_llm.base_url, "--yes", "--json"]
    fake_llm.push(Reply(text="<observations>\n" + "* the same line again and again\n" * 400 + "</observations>"))
    code, _, err = _run(capsys, argv)
    assert code == 1 and "degenerate" in err and file_state(path) == state
    fake_llm.push(Reply(text="I have nothing to add."))
    code, _, err = _run(capsys, argv)
    assert code == 1 and "no observations" in err and file_state(path) == state
    fake_llm.push(Reply(status=401, body={"error": {"message": "bad key"}}))
    code, _, err = _run(capsys, argv)
    assert code == 1 and file_state(path) == state


def test_dry_run_shows_the_proposal_and_writes_nothing(fake_llm, capsys, tmp_path):
    path = copy_fixture("support", tmp_path / "db")
    state = file_state(path)
    fake_llm.push(Reply(text=ANSWER))
    code, doc, err = _run(capsys, ["observe", path, "--thread", "support-1", "--model", "openai-compatible/observer",
                                   "--base-url", fake_llm.base_url, "--dry-run", "--json"])
    assert code == 0, err
    assert doc["observed"] is False and doc["observations"].startswith("Date: Dec 2, 2026\n* 🔴 (10:00)")
    assert doc["observation_tokens_after"] > doc["observation_tokens_before"]
    assert file_state(path) == state
    # no model named and none stored that we can call (the fixture's Observer is a scripted test model)
    code, _, err = _run(capsys, ["observe", path, "--thread", "support-1", "--yes"])
    assert code == 2 and "--model" in err and file_state(path) == state
