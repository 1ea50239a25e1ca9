#!/usr/bin/env bash
# Install Memory Studio from its unpacked tarball (run from the memory-studio/ folder):
#
#   ./install.sh [--prefix DIR]          # default DIR: ~/.local
#   ./install.sh --uninstall [--prefix DIR]
#
# The app goes to DIR/lib/memory-studio, the command to DIR/bin/memory-studio (a link), the
# desktop entry, icons and AppStream file under DIR/share. Nothing outside DIR is touched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix="$HOME/.local"
action=install
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a folder}; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --uninstall) action=uninstall; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
lib="$prefix/lib/memory-studio"
files=(share/applications/memory-studio.desktop share/metainfo/io.memorystudio.MemoryStudio.metainfo.xml
       share/icons/hicolor/scalable/apps/memory-studio.svg)
for png in "$here"/share/icons/hicolor/*x*/apps/memory-studio.png; do files+=("${png#"$here"/}"); done

refresh() {  # desktop caches: the menu's, and an icon cache only where one already exists (a new one could go stale)
  command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$prefix/share/applications" || true
  local icons="$prefix/share/icons/hicolor"
  [ -d "$icons" ] && touch "$icons"
  if [ -f "$icons/icon-theme.cache" ] && command -v gtk-update-icon-cache >/dev/null 2>&1; then
    gtk-update-icon-cache -q -t "$icons" || true
  fi
}

if [ "$action" = uninstall ]; then
  for f in "${files[@]}"; do rm -f "$prefix/$f"; done
  [ -L "$prefix/bin/memory-studio" ] && rm -f "$prefix/bin/memory-studio"
  rm -rf "$lib"
  refresh
  echo "Memory Studio removed from $prefix"
  exit 0
fi

[ -x "$here/memory-studio" ] || { echo "install.sh: run it from the unpacked memory-studio folder" >&2; exit 1; }
if [ "$here" != "$lib" ]; then
  rm -rf "$lib.new"
  mkdir -p "$prefix/lib"
  cp -a "$here" "$lib.new"
  rm -rf "$lib"
  mv "$lib.new" "$lib"
fi
mkdir -p "$prefix/bin"
ln -sfn "$lib/memory-studio" "$prefix/bin/memory-studio"
for f in "${files[@]}"; do
  mkdir -p "$(dirname "$prefix/$f")"
  cp "$here/$f" "$prefix/$f"
done
# The desktop session may not have DIR/bin on its PATH: the entry names the app by its full path.
sed -i "s|^Exec=memory-studio |Exec=\"$lib/memory-studio\" |" "$prefix/share/applications/memory-studio.desktop"
refresh
echo "Memory Studio installed: $prefix/bin/memory-studio (menu entry: Memory Studio)"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "Add $prefix/bin to your PATH to run memory-studio from a terminal." ;; esac
