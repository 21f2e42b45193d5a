# shellcheck shell=bash
# fuzz-options.sh: the command line of scripts/fuzz.sh and bench/fuzz-long.sh,
# parsed in one place.  Not run: sourced.
#
#   [--seconds N] [--build-dir DIR] [harness...]
#
# The caller sets `me` (its name, for messages), `seconds` and `build` (its
# defaults), then calls fuzz_options "$@", which sets seconds, build and the
# array harnesses (the names given, in order; empty: the caller's default).
# -h/--help prints the caller's own header comment (from its second line to
# the line before `set`) and exits 0; a bad option or a --seconds that is not
# a whole number is one line on stderr and exit 2.

# shellcheck disable=SC2034,SC2154 # me, seconds, build, harnesses: the caller's
fuzz_options() {
	harnesses=()
	while (($#)); do
		case $1 in
		--seconds) seconds=${2:?--seconds needs a value}; shift 2 ;;
		--seconds=*) seconds=${1#*=}; shift ;;
		--build-dir) build=${2:?--build-dir needs a value}; shift 2 ;;
		--build-dir=*) build=${1#*=}; shift ;;
		-h|--help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
		-*) echo "$me: unknown option '$1'" >&2; exit 2 ;;
		*) harnesses+=("$1"); shift ;;
		esac
	done
	case $seconds in
	'' | *[!0-9]*) echo "$me: --seconds wants a whole number" >&2; exit 2 ;;
	esac
}
