#!/bin/sh
# svg-check.sh: render an SVG (timeline.svg) to PNG with headless Chromium and
# print the PNG's path, so a person can look at what a browser really draws.
# A manual check, not part of `make check` (Chromium is large and optional).
#
# Usage: scripts/svg-check.sh FILE.svg [OUT.png]
#   OUT.png defaults to FILE.png beside the SVG.  The window is the SVG's own
#   width x height (read from its root element), so nothing is cropped.
#   Needs the Debian package `chromium` (apt-get update && apt-get install
#   chromium); CHROMIUM=/path/to/browser picks another one.
set -eu

die() { echo "svg-check: $*" >&2; exit 1; }

if [ $# -lt 1 ] || [ $# -gt 2 ]; then die "usage: svg-check.sh FILE.svg [OUT.png]"; fi
svg=$1
[ -f "$svg" ] || die "$svg: no such file"
case $svg in /*) ;; *) svg=$(pwd)/$svg ;; esac
png=${2:-${svg%.svg}.png}
case $png in /*) ;; *) png=$(pwd)/$png ;; esac

browser=${CHROMIUM:-}
if [ -z "$browser" ]; then
	for b in chromium chromium-browser google-chrome; do
		if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
	done
fi
[ -n "$browser" ] || die "no chromium found: apt-get update && apt-get install chromium"

# width="N" height="N" of the root <svg> element (the first ones in the file)
size=$(python3 - "$svg" <<'EOF'
import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
print("%d,%d" % (int(float(r.get("width", 960))), int(float(r.get("height", 540)))))
EOF
) || die "$svg is not well-formed XML"

# A profile of its own: no state from (or left in) the user's browser.
prof=$(mktemp -d)
trap 'rm -rf "$prof"' EXIT
rm -f "$png"
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--user-data-dir="$prof" --window-size="$size" --default-background-color=ffffffff \
	--screenshot="$png" "file://$svg" >"$prof/log" 2>&1 || {
	cat "$prof/log" >&2
	die "$browser failed"
}
[ -s "$png" ] || { cat "$prof/log" >&2; die "no screenshot written"; }
echo "$png"
