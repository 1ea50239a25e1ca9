#!/usr/bin/env bash
# Build the desktop app (PyInstaller, one folder) and its tarball:
#
#   packaging/build.sh [OUT_DIR]        # default: dist/ in the repository
#
# makes OUT_DIR/memory-studio/memory-studio (the app; it needs no Python) and
# OUT_DIR/memory-studio-VERSION-linux-ARCH.tar.gz, whose install.sh puts the app under ~/.local
# with its .desktop entry, icons and AppStream file. The build environment (the studio's
# dependencies and PyInstaller, from PyPI) is a venv in build/app-venv, reused by later builds;
# PYTHON chooses the interpreter (default python3, 3.11 or newer).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)
python=${PYTHON:-python3}
venv=${MEMORY_STUDIO_BUILD_VENV:-$root/build/app-venv}
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$root/studio/__init__.py")
arch=$(uname -m)
[ -n "$version" ] || { echo "build.sh: no __version__ in studio/__init__.py" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The build environment: the runtime dependencies of pyproject.toml plus the `app` extra (PyInstaller).
"$python" - "$root/pyproject.toml" > "$work/requirements.txt" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["app"]))
PY
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install -q -r "$work/requirements.txt"

# The app. PyInstaller's own output goes to the log; its last lines are shown if it fails.
rm -rf "$out/memory-studio"
if ! (cd "$root" && "$venv/bin/python" -m PyInstaller --noconfirm --log-level WARN \
        --distpath "$out" --workpath "$work/build" packaging/memory-studio.spec) > "$work/pyinstaller.log" 2>&1; then
  tail -40 "$work/pyinstaller.log" >&2
  echo "build.sh: PyInstaller failed" >&2
  exit 1
fi
app="$out/memory-studio"
[ -x "$app/memory-studio" ] || { echo "build.sh: $app/memory-studio was not built" >&2; exit 1; }

# Desktop integration files, installed by install.sh.
share="$app/share"
mkdir -p "$share/applications" "$share/metainfo" "$share/icons/hicolor/scalable/apps"
cp "$root/packaging/memory-studio.desktop" "$share/applications/"
cp "$root/packaging/io.memorystudio.MemoryStudio.metainfo.xml" "$share/metainfo/"
cp "$root/resources/icons/memory-studio.svg" "$share/icons/hicolor/scalable/apps/memory-studio.svg"
for png in "$root"/resources/icons/memory-studio-*.png; do
  size=${png##*-}; size=${size%.png}
  mkdir -p "$share/icons/hicolor/${size}x${size}/apps"
  cp "$png" "$share/icons/hicolor/${size}x${size}/apps/memory-studio.png"
done
install -m 755 "$root/packaging/install.sh" "$app/install.sh"

tarball="$out/memory-studio-$version-linux-$arch.tar.gz"
tar -C "$out" -czf "$tarball" memory-studio
echo "$app/memory-studio"
echo "$tarball ($(du -sh "$app" | cut -f1) unpacked, $(du -h "$tarball" | cut -f1) packed)"
