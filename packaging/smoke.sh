#!/usr/bin/env bash
# Smoke tests of what users install (issue 9 §3-4), run by .ci/run after the test suite:
#
#   packaging/smoke.sh wheel      # wheel → fresh venv outside the checkout → run from another folder
#   packaging/smoke.sh app        # packaging/build.sh → tarball → install.sh → run the installed app
#   packaging/smoke.sh            # both
#
# Each step prints "smoke: …"; any failed step stops the script with a non-zero status.
# PYTHON: interpreter for the fresh venv (default python3). TEST_PYTHON: an interpreter with the
# studio's test dependencies, for the fake LLM server and the checks (default .venv/bin/python).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
test_python=${TEST_PYTHON:-$root/.venv/bin/python}
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$root/studio/__init__.py")
export QT_QPA_PLATFORM=offscreen PIP_DISABLE_PIP_VERSION_CHECK=1
unset PYTHONPATH  # the installed studio must run on its own, not from this checkout
work=$(mktemp -d "${TMPDIR:-/tmp}/memory-studio-smoke.XXXXXX")
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
step() { echo "smoke: $*"; }
fail() { echo "smoke: FAILED: $*" >&2; exit 1; }
check() {  # check PYTHON_EXPR FILE: evaluate an assertion over the JSON document in FILE as `d`
  "$test_python" -c 'import json, sys; d = json.load(open(sys.argv[2], encoding="utf-8")); assert eval(sys.argv[1]), sys.argv[1]' "$1" "$2" \
    || fail "$2: $1"
}
png() { "$test_python" -c 'import sys; b = open(sys.argv[1], "rb").read(); assert b[:8] == b"\x89PNG\r\n\x1a\n" and len(b) > 20000' "$1" \
    || fail "$1 is not a window screenshot"; }

start_fake_llm() {
  "$test_python" "$root/tests/serve_fake_llm.py" > "$work/llm-url" &
  server=$!
  for _ in $(seq 100); do [ -s "$work/llm-url" ] && break; sleep 0.1; done
  [ -s "$work/llm-url" ] || fail "the fake LLM server did not start"
  llm_url=$(cat "$work/llm-url")
}

# run_studio LABEL EXE SAMPLE: the checks both installs must pass, from a folder outside the checkout.
run_studio() {
  local label=$1 exe=$2 sample=$3 out="$work/$1-out"
  mkdir -p "$out"
  cd "$out"
  step "$label: --version"
  [ "$("$exe" --version)" = "memory-studio $version" ] || fail "$label --version"
  step "$label: inspect --json on the bundled sample ($sample)"
  "$exe" inspect "$sample" --json > inspect.json
  check 'len(d["threads"]) >= 5 and any(s for om in d["observational_memory"] for s in om["status"].values())' inspect.json
  step "$label: tokens (exact o200k counts from the bundled ranks)"
  "$exe" tokens "$sample" support-1 --json > tokens.json
  check 'd["exact"]["per_message"] and all(isinstance(n, int) and n > 0 for n in d["exact"]["per_message"].values())' tokens.json
  step "$label: no-argument start (the sample) with --screenshot"
  "$exe" --screenshot "$out/window.png"
  png "$out/window.png"
  step "$label: reflect --strategy llm --dry-run against a local fake LLM (the bundled prompts)"
  local before after
  before=$(sha256sum "$sample")
  "$exe" reflect "$sample" --thread support-1 --strategy llm --model openai-compatible/fake --base-url "$llm_url" \
      --dry-run --json > reflect.json
  check 'd["dry_run"] is True and d["reflected"] is False and d["observations"].strip()' reflect.json
  after=$(sha256sum "$sample")
  [ "$before" = "$after" ] || fail "$label: the dry run changed the sample"
  cd "$root"
}

smoke_wheel() {
  step "wheel: build"
  "$test_python" -m pip wheel -q --no-deps -w "$work/wheel" "$root" > "$work/wheel.log" 2>&1 \
    || { tail -20 "$work/wheel.log" >&2; fail "building the wheel"; }
  local wheel
  wheel=$(ls "$work"/wheel/memory_studio-*.whl)
  step "wheel: install $(basename "$wheel") into a fresh venv"
  "$python" -m venv "$work/venv"
  "$work/venv/bin/pip" install -q "$wheel" > "$work/pip.log" 2>&1 || { tail -20 "$work/pip.log" >&2; fail "pip install"; }
  local sample
  sample=$(cd "$work" && "$work/venv/bin/python" -c 'from studio.paths import SAMPLE_DATABASE; print(SAMPLE_DATABASE)')
  case "$sample" in "$work/venv/"*) ;; *) fail "wheel: the sample is not inside the installed package: $sample" ;; esac
  run_studio wheel "$work/venv/bin/memory-studio" "$sample"
}

smoke_app() {
  step "app: packaging/build.sh"
  "$root/packaging/build.sh" "$work/dist" > "$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; fail "build.sh"; }
  tail -1 "$work/build.log"
  local tarball="$work/dist/memory-studio-$version-linux-$(uname -m).tar.gz"
  [ -x "$work/dist/memory-studio/memory-studio" ] || fail "no $work/dist/memory-studio/memory-studio"
  step "app: unpack $(basename "$tarball") and install.sh --prefix"
  mkdir -p "$work/unpacked" "$work/prefix"
  tar -C "$work/unpacked" -xzf "$tarball"
  "$work/unpacked/memory-studio/install.sh" --prefix "$work/prefix" > /dev/null
  local exe="$work/prefix/bin/memory-studio" lib="$work/prefix/lib/memory-studio"
  for f in share/applications/memory-studio.desktop share/icons/hicolor/256x256/apps/memory-studio.png \
           share/icons/hicolor/scalable/apps/memory-studio.svg share/metainfo/io.memorystudio.MemoryStudio.metainfo.xml; do
    [ -s "$work/prefix/$f" ] || fail "install.sh did not install $f"
  done
  grep -qx "Exec=\"$lib/memory-studio\" %f" "$work/prefix/share/applications/memory-studio.desktop" || fail "desktop Exec"
  grep -qx "Icon=memory-studio" "$work/prefix/share/applications/memory-studio.desktop" || fail "desktop Icon"
  # the sample inside the app is read-only in spirit: run the checks on a copy of it
  mkdir -p "$work/app-data"
  cp "$lib/_internal/resources/sample/memory.db" "$work/app-data/memory.db"
  run_studio app "$exe" "$work/app-data/memory.db"
  step "app: one write (clone) with its row backup and a whole-file copy (--full-backup), then undo, on a copy"
  (cd "$work/app-data" && XDG_DATA_HOME="$work/xdg-data" "$exe" clone memory.db --thread support-2 --full-backup \
    --yes --json) > "$work/clone.json"
  check '__import__("pathlib").Path(d["backup"]).is_file() and d["thread"]["id"] != "support-2"' "$work/clone.json"
  "$test_python" - "$work/clone.json" "$work/app-data" <<'PY' || fail "the app's backups are not complete"
import glob, json, sqlite3, sys
doc = json.load(open(sys.argv[1]))
rows = json.load(open(doc["backup"]))   # the row backup: the clone's inserted thread among its rows
assert [doc["thread"]["id"]] == [r["id"] for r in rows["rows"] if r["table"] == "mastra_threads"]
[copy] = glob.glob(sys.argv[2] + "/memory.backup-*.db")   # the whole-file copy, made before the write
con = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
assert con.execute("SELECT count(*) FROM mastra_threads WHERE id = ?", (doc["thread"]["id"],)).fetchone()[0] == 0
assert con.execute("SELECT count(*) FROM mastra_threads").fetchone()[0] >= 5
PY
  ls -a "$work/app-data" | grep -q partial && fail "a partial backup file was left beside the database"
  (cd "$work/app-data" && XDG_DATA_HOME="$work/xdg-data" "$exe" undo memory.db --yes --json) > "$work/undo.json"
  check 'd["undone"] is True and d["deleted"] > 0' "$work/undo.json"
  step "app: the helper process (--studio-child helper)"
  "$test_python" "$root/packaging/smoke_helper.py" "$exe" "$work/app-data/memory.db"
  step "app: appstreamcli validate"
  appstreamcli validate --no-net "$work/prefix/share/metainfo/io.memorystudio.MemoryStudio.metainfo.xml"
  step "app: install.sh --uninstall"
  "$lib/install.sh" --uninstall --prefix "$work/prefix" > /dev/null
  [ ! -e "$exe" ] && [ ! -e "$lib" ] && [ ! -e "$work/prefix/share/applications/memory-studio.desktop" ] || fail "uninstall"
}

start_fake_llm
case "${1:-all}" in
  wheel) smoke_wheel ;;
  app) smoke_app ;;
  all) smoke_wheel; smoke_app ;;
  *) fail "unknown part ${1} (wheel, app or nothing for both)" ;;
esac
step "all passed"
