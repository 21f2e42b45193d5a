#!/bin/bash
# terminal.sh: memsup at a real terminal.  A private tmux server (its own
# socket, no configuration) gives each case a fresh 120x40 window running an
# interactive `bash --norc`; the keys are typed with send-keys and the
# screen read back with capture-pane, polled until the expected text shows
# (up to WAIT_S seconds: a loaded machine is slow, never wrong).  The server
# is killed at the end, pass or fail.  Output: TAP.
# Needs MEMSUP and MT_PROGS (AM_TESTS_ENVIRONMENT), tmux, python3 (the
# REPL cases and the record's checks) and less.
set -u

: "${MEMSUP:?MEMSUP is not set}"
: "${MT_PROGS:?MT_PROGS is not set}"
WAIT_S=${WAIT_S:-20}
NCASES=15

if ! command -v tmux >/dev/null 2>&1; then
	echo "1..0 # SKIP no tmux (Debian: tmux)"
	exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
	echo "1..0 # SKIP no python3: the records cannot be read"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/memsup-terminal.XXXXXX") || exit 99
# the server's socket in $tmp too: nothing is left in /tmp/tmux-UID
export TMUX_TMPDIR="$tmp"
sock="memsup-test-$$"
T() { tmux -L "$sock" -f /dev/null "$@"; }
cleanup() {
	T kill-server >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

n=0
fails=0
echo "1..$NCASES"

# ---- helpers -------------------------------------------------------------

# A fresh window for case $1, running an interactive shell (bash --norc, or
# $2) with the prompt "tsh$ "; waits for the prompt.
start() {
	local s=$1 shell=${2:-bash --norc --noprofile -i}
	T new-session -d -s "$s" -x 120 -y 40 \
		"env PS1='tsh\$ ' HISTFILE=/dev/null LESS= LESSOPEN= LESSCLOSE= $shell" || return 1
	T set-option -t "$s" status off >/dev/null
	wait_for "$s" '^tsh\$'
}

# The screen of window $1, one line per row.
screen() { T capture-pane -p -t "$1"; }

# Wait until a line of window $1's screen matches the extended regex $2
# (for up to $3 seconds, default WAIT_S).
wait_for() {
	local s=$1 re=$2 i
	for ((i = 0; i < ${3:-$WAIT_S} * 10; i++)); do
		screen "$s" | grep -Eq -- "$re" && return 0
		sleep 0.1
	done
	return 1
}

# Type the line $2 into window $1, then Enter.
typeln() {
	T send-keys -t "$1" -l -- "$2"
	T send-keys -t "$1" Enter
}

# A field of the record in evidence directory $1: $2 is a dotted path.
rec() {
	python3 - "$1/resources.json" "$2" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split('.'):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v))
PY
}

# ok NAME / bad NAME WHY [WINDOW]: one TAP line; a failure shows the screen.
ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}
bad() {
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - $1: $2"
	if [ -n "${3:-}" ]; then
		screen "$3" 2>/dev/null | sed -e '/^$/d' -e 's/^/#   | /'
	fi
}
skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}
# check NAME WINDOW CONDITION-TEXT COMMAND...: ok when COMMAND succeeds.
check() {
	local name=$1 s=$2 why=$3
	shift 3
	if "$@"; then ok "$name"; else bad "$name" "$why" "$s"; fi
}
done_with() { T kill-session -t "$1" >/dev/null 2>&1; }

M="$MEMSUP -q"
names="$tmp/names"
mkdir "$names"
for i in $(seq -w 1 60); do : >"$names/f$i"; done
seq -f 'line %03g' 1 300 >"$tmp/lines.txt"

# ---- 1. ls sees a terminal: names in columns -------------------------------
case_ls() {
	local s=c1 ev="$tmp/ev1"
	start "$s" || { bad "ls in columns" "no shell prompt" "$s"; return; }
	typeln "$s" "$M -o $ev -- ls $names; echo rc=\$?"
	if ! wait_for "$s" '^rc=0$'; then
		bad "ls in columns" "no rc=0" "$s"
	elif ! screen "$s" | grep -Eq '^f01 +f0[2-9] '; then
		bad "ls in columns" "one name per line (ls saw no terminal)" "$s"
	elif [ "$(rec "$ev" output.mode)" != '"terminal"' ] || [ "$(rec "$ev" output.log)" != null ] ||
		[ -e "$ev/stdout.log" ]; then
		bad "ls in columns" "record: output $(rec "$ev" output)" "$s"
	else
		ok "ls in columns; output.mode terminal, nothing logged"
	fi
	done_with "$s"
}

# ---- 2. less pages, and quits with q ---------------------------------------
case_less() {
	local s=c2 ev="$tmp/ev2"
	if ! command -v less >/dev/null 2>&1; then
		skip "less pages and quits" "no less"
		return
	fi
	start "$s" || { bad "less pages and quits" "no shell prompt" "$s"; return; }
	typeln "$s" "$M -o $ev -- less $tmp/lines.txt; echo rc=\$?"
	if ! wait_for "$s" '^line 030$'; then
		bad "less pages and quits" "no first page" "$s"
	elif screen "$s" | grep -q '^line 300$\|^rc='; then
		bad "less pages and quits" "the whole file was dumped (less saw no terminal)" "$s"
	else
		T send-keys -t "$s" q
		if ! wait_for "$s" '^rc=0$'; then
			bad "less pages and quits" "q did not end it with rc=0" "$s"
		elif screen "$s" | grep -q '^line 300$'; then
			bad "less pages and quits" "the file was dumped" "$s"
		else
			ok "less pages one screen and quits with q (exit 0)"
		fi
	fi
	done_with "$s"
}

# ---- 3. a Python REPL survives ^C, ends at ^D --------------------------------
case_repl() {
	local s=c3 ev="$tmp/ev3"
	start "$s" || { bad "REPL survives ^C" "no shell prompt" "$s"; return; }
	typeln "$s" "$M -o $ev -- python3 -q; echo rc=\$?"
	if ! wait_for "$s" '^>>> ?$'; then
		bad "REPL survives ^C" "no prompt" "$s"
		done_with "$s"
		return
	fi
	T send-keys -t "$s" C-c
	if ! wait_for "$s" '^KeyboardInterrupt$'; then
		bad "REPL survives ^C" "no KeyboardInterrupt" "$s"
	else
		typeln "$s" "print(6 * 7)"
		if ! wait_for "$s" '^42$'; then
			bad "REPL survives ^C" "the REPL did not go on after ^C" "$s"
		else
			T send-keys -t "$s" C-d
			if ! wait_for "$s" '^rc=0$'; then
				bad "REPL survives ^C" "^D did not end it with rc=0" "$s"
			elif [ "$(rec "$ev" reason)" != null ] || [ "$(rec "$ev" exit_code)" != 0 ]; then
				bad "REPL survives ^C" "record: reason $(rec "$ev" reason), exit_code $(rec "$ev" exit_code)" "$s"
			else
				ok "a Python REPL gets ^C (KeyboardInterrupt), goes on, ends at ^D: exit 0, reason null"
			fi
		fi
	fi
	done_with "$s"
}

# ---- 4. ^Z stops the job (memsup with it); fg continues it -------------------
case_suspend() {
	local s=c4 ev="$tmp/ev4" name="^Z then fg"
	start "$s" || { bad "$name" "no shell prompt" "$s"; return; }
	typeln "$s" "$M -o $ev -- python3 -q"
	if ! wait_for "$s" '^>>> ?$'; then
		bad "$name" "no prompt" "$s"
		done_with "$s"
		return
	fi
	T send-keys -t "$s" C-z
	if ! wait_for "$s" 'Stopped +.*memsup'; then
		bad "$name" "the shell did not see the job stop" "$s"
	elif ! { typeln "$s" "jobs -l; echo jobs-done" && wait_for "$s" '^jobs-done$'; }; then
		bad "$name" "the shell did not take the terminal back" "$s"
	else
		T send-keys -t "$s" C-l
		typeln "$s" "fg"
		sleep 0.3
		typeln "$s" "print(7 * 8)"
		if ! wait_for "$s" '^56$'; then
			bad "$name" "the REPL did not get the terminal back after fg" "$s"
		else
			T send-keys -t "$s" C-d
			wait_for "$s" '^tsh\$ ?$'
			typeln "$s" "echo rc=\$?"
			if ! wait_for "$s" '^rc=0$'; then
				bad "$name" "exit status not 0" "$s"
			elif [ "$(rec "$ev" reason)" != null ] ||
				! rec "$ev" notes | grep -q 'stopped 1 time'; then
				bad "$name" "record: reason $(rec "$ev" reason), notes $(rec "$ev" notes)" "$s"
			elif rec "$ev" blind_spots | grep -q '"sampling_gap"'; then
				# the stop is memsup's own, said in the notes: no gap
				bad "$name" "a sampling_gap for a stop on purpose: $(rec "$ev" blind_spots)" "$s"
			else
				ok "^Z stops the REPL and memsup (the shell's job), fg gives it the terminal back; exit 0, no sampling_gap"
			fi
		fi
	fi
	done_with "$s"
}

# ttyprobe CODE under memsup ARGS at shell $1, its window resized to X x Y
# while it runs, then q: 0 with the last size in $size once the command's
# CODE came back, else 1 after bad() (name $2).  Cases 5 and 13 differ in
# how memsup gives the command its terminal, and in what the record says.
# LOOSE 1: the probe's lines may run on, and rc= need not start its line
# (what the transcript's pty echoes shares the lines).
probe_and_resize() {
	local s=$1 name=$2 code=$3 x=$4 y=$5 eol='$' bol='^'
	[ "$6" = 1 ] && eol='' bol=''
	shift 6
	typeln "$s" "$M $* -- $MT_PROGS/ttyprobe $code; echo rc=\$?"
	size=$(T display-message -p -t "$s" '#{pane_height}x#{pane_width}')
	if ! wait_for "$s" "^probe: tty 1 1 1 devtty ok fg yes group own$eol"; then
		bad "$name" "not a terminal, no /dev/tty, or not the foreground group" "$s"
		return 1
	fi
	if ! wait_for "$s" "^probe: size $size$eol"; then
		bad "$name" "the size is not the pane's ($size)" "$s"
		return 1
	fi
	T resize-window -t "$s" -x "$x" -y "$y"
	size=$(T display-message -p -t "$s" '#{pane_height}x#{pane_width}')
	if ! wait_for "$s" "^probe: size $size$eol"; then
		bad "$name" "no SIGWINCH, or not the new size ($size)" "$s"
		return 1
	fi
	typeln "$s" q
	if ! wait_for "$s" "${bol}rc=$code\$"; then
		bad "$name" "exit status not the command's $code" "$s"
		return 1
	fi
}

# ---- 5. the window's size, and changes of it, reach the command --------------
case_resize() {
	local s=c5 ev="$tmp/ev5" name="window size" size
	start "$s" || { bad "$name" "no shell prompt" "$s"; return; }
	if probe_and_resize "$s" "$name" 3 100 30 0 -o "$ev"; then
		if [ "$(rec "$ev" exit_code)" != 3 ] || [ "$(rec "$ev" output.mode)" != '"terminal"' ]; then
			bad "$name" "record: exit_code $(rec "$ev" exit_code), output $(rec "$ev" output)" "$s"
		else
			ok "isatty, /dev/tty, the foreground group, the size and a resize ($size) reach the command; exit 3"
		fi
	fi
	done_with "$s"
}

# ---- 6, 7. ^C and ^\ end a command that does not catch them ------------------
case_signal() {
	local s=$1 key=$2 sig=$3 ev="$tmp/ev-$1" name="$4"
	start "$s" || { bad "$name" "no shell prompt" "$s"; return; }
	typeln "$s" "$M -o $ev -- sh -c 'echo ready; exec sleep 3000'; echo rc=\$?"
	if ! wait_for "$s" '^ready$'; then
		bad "$name" "the command did not start" "$s"
	else
		T send-keys -t "$s" "$key"
		if ! wait_for "$s" "rc=$((128 + sig))\$"; then
			bad "$name" "exit status not $((128 + sig))" "$s"
		elif [ "$(rec "$ev" reason)" != null ] || [ "$(rec "$ev" signal)" != "$sig" ]; then
			bad "$name" "record: reason $(rec "$ev" reason), signal $(rec "$ev" signal)" "$s"
		else
			ok "$name: the command dies of it, memsup does not: exit $((128 + sig)), reason null"
		fi
	fi
	done_with "$s"
}

# ---- 8. a budget kills a raw-mode command: the terminal comes back cooked ----
case_budget() {
	local s=c8 ev="$tmp/ev8" name="wall budget at a terminal"
	# dash: a shell that does not put the terminal right itself
	start "$s" "sh -i" || { bad "$name" "no shell prompt" "$s"; return; }
	typeln "$s" "$M -o $ev --wall-s 3 -- python3 -q; echo rc=\$?; stty -a | tr ' ' '\\n' | grep -x -- '-\\{0,1\\}icanon'"
	if ! wait_for "$s" 'rc=124$'; then
		bad "$name" "no rc=124" "$s"
	elif ! wait_for "$s" '^-?icanon$'; then
		bad "$name" "stty did not run" "$s"
	elif ! screen "$s" | grep -qx 'icanon'; then
		bad "$name" "the terminal was left in raw mode" "$s"
	elif [ "$(rec "$ev" reason)" != '"wall_budget_exceeded"' ]; then
		bad "$name" "record: reason $(rec "$ev" reason)" "$s"
	else
		ok "$name: the REPL killed (exit 124), the terminal back to memsup's shell, cooked"
	fi
	done_with "$s"
}

# ---- 9. started in the background: stops at its first read, fg resumes it ----
case_background() {
	local s=c9 ev="$tmp/ev9" name="started in the background"
	start "$s" || { bad "$name" "no shell prompt" "$s"; return; }
	typeln "$s" "$M -o $ev -- $MT_PROGS/ttyprobe 5 &"
	if ! wait_for "$s" 'probe: tty 1 1 1 devtty ok fg no group own$'; then
		bad "$name" "the command did not start in the background" "$s"
	else
		# ask the shell until it has seen the job stop (a loaded
		# machine takes its time)
		local i
		for ((i = 0; i < WAIT_S / 2; i++)); do
			typeln "$s" "jobs"
			wait_for "$s" 'Stopped.* +.*memsup' 2 && break
		done
		if ! wait_for "$s" 'Stopped.* +.*memsup' 1; then
			bad "$name" "memsup did not stop when the command read the terminal" "$s"
		else
			typeln "$s" "fg"
			sleep 0.3
			typeln "$s" "q"
			wait_for "$s" '^tsh\$ ?$'
			typeln "$s" "echo rc=\$?"
			if ! wait_for "$s" '^rc=5$'; then
				bad "$name" "after fg, the command did not read its q (exit 5)" "$s"
			else
				ok "$name: its first read stops it and memsup; fg gives it the terminal; exit 5"
			fi
		fi
	fi
	done_with "$s"
}

# ---- 10. the /proc scan at a terminal: the group and session kept right ------
case_procscan() {
	local s=c10 ev="$tmp/ev10" name="--cgroup off at a terminal"
	start "$s" || { bad "$name" "no shell prompt" "$s"; return; }
	typeln "$s" "$M -o $ev --cgroup off -- sh -c 'sleep 3001 & setsid sleep 3002 & echo ready; read x'"
	if ! wait_for "$s" '^ready$'; then
		bad "$name" "the command did not start" "$s"
		done_with "$s"
		return
	fi
	T send-keys -t "$s" C-z
	wait_for "$s" 'Stopped +.*memsup'
	typeln "$s" "fg"
	sleep 0.3
	typeln "$s" "x"
	wait_for "$s" '^tsh\$ ?$'
	typeln "$s" "echo rc=\$?"
	if ! wait_for "$s" '^rc=0$'; then
		bad "$name" "no rc=0 after ^Z, fg and a line" "$s"
	else
		local out
		out=$(python3 - "$ev" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # processes.json with every key: memsup leaves out escaped=false
d = sys.argv[1]
r = json.load(open(d + '/resources.json'))
procs = memsup.read_processes(d)
def esc(arg):
    for q in procs:
        if q.get('argv') == ['sleep', arg]:
            return q.get('escaped')
    return 'missing'
errs = []
if r['containment']['mode'] != 'procscan':
    errs.append('containment %s' % r['containment']['mode'])
if len(r['leftover_processes_killed']) != 2:
    errs.append('%d leftovers' % len(r['leftover_processes_killed']))
if esc('3001') is not False:
    errs.append('sleep 3001 (same session) escaped=%s' % esc('3001'))
if esc('3002') is not True:
    errs.append('sleep 3002 (setsid) escaped=%s' % esc('3002'))
print('; '.join(errs) or 'fine')
PY
)
		if [ "$out" != fine ]; then
			bad "$name" "$out" "$s"
		elif pgrep -f 'sleep 300[12]' >/dev/null; then
			bad "$name" "a leftover is still alive" "$s"
		else
			ok "$name: ^Z/fg, both leftovers killed, only the setsid one escaped"
		fi
	fi
	done_with "$s"
}

# ---- 11. in a pipe, nothing changes -----------------------------------------
case_pipe() {
	local s=c11 ev="$tmp/ev11" name="in a pipe"
	start "$s" || { bad "$name" "no shell prompt" "$s"; return; }
	typeln "$s" "$M -o $ev -- ls $names </dev/null | cat; echo rc=\$?"
	if ! wait_for "$s" '^rc=0$'; then
		bad "$name" "no rc=0" "$s"
	elif ! screen "$s" | grep -qx 'f59' || screen "$s" | grep -q 'f[0-9][0-9] '; then
		bad "$name" "not one name per line" "$s"
	elif [ "$(rec "$ev" output.mode)" != '"tee"' ] || [ "$(wc -l <"$ev/stdout.log")" != 60 ]; then
		bad "$name" "record: output $(rec "$ev" output)" "$s"
	else
		ok "$name (stdin and stdout not a terminal): tee as before, 60 lines in stdout.log"
	fi
	done_with "$s"
}

# ---- 12. --output transcript: a REPL through a pty, ^C, ^Z and fg, logged ------
case_transcript_repl() {
	local s=c12 ev="$tmp/ev12" name="--output transcript, a REPL"
	start "$s" || { bad "$name" "no shell prompt" "$s"; return; }
	typeln "$s" "$M -o $ev --output transcript -- python3 -q"
	if ! wait_for "$s" '^>>> ?$'; then
		bad "$name" "no prompt" "$s"
		done_with "$s"
		return
	fi
	T send-keys -t "$s" C-c
	if ! wait_for "$s" '^KeyboardInterrupt$'; then
		bad "$name" "no KeyboardInterrupt" "$s"
		done_with "$s"
		return
	fi
	typeln "$s" "print(6 * 7)"
	wait_for "$s" '^42$'
	T send-keys -t "$s" C-z
	if ! wait_for "$s" 'Stopped +.*memsup'; then
		bad "$name" "^Z did not stop the job" "$s"
	else
		T send-keys -t "$s" C-l
		typeln "$s" "fg"
		sleep 0.3
		typeln "$s" "print(7 * 8)"
		if ! wait_for "$s" '^56$'; then
			bad "$name" "the REPL did not come back after fg" "$s"
		else
			T send-keys -t "$s" C-d
			wait_for "$s" '^tsh\$ ?$'
			typeln "$s" "echo rc=\$?"
			local out
			out=$(python3 - "$ev" <<'PY'
import json, os, sys
d = sys.argv[1]
r = json.load(open(d + '/resources.json'))
log = open(d + '/stdout.log', 'rb').read().decode('utf-8', 'replace')
o = r['output']
errs = []
if (o['mode'], o['log'], o['logged']) != ('transcript', 'stdout.log', ['stdout', 'stderr']):
    errs.append('output %s' % o)
if o['log_bytes'] != os.path.getsize(d + '/stdout.log'):
    errs.append('log_bytes %s, file %d' % (o['log_bytes'], os.path.getsize(d + '/stdout.log')))
for want in ('KeyboardInterrupt', '42', '56', 'print(7 * 8)'):
    if want not in log:
        errs.append('%r not in stdout.log' % want)
if r['reason'] is not None or r['exit_code'] != 0:
    errs.append('reason %s exit_code %s' % (r['reason'], r['exit_code']))
print('; '.join(errs) or 'fine')
PY
)
			if ! wait_for "$s" '^rc=0$'; then
				bad "$name" "exit status not 0" "$s"
			elif [ "$out" != fine ]; then
				bad "$name" "$out" "$s"
			else
				ok "$name: ^C, ^Z and fg reach the REPL through its pty; the transcript logged"
			fi
		fi
	fi
	done_with "$s"
}

# ---- 13. --output transcript: the command's terminal is the pty, sized -----
case_transcript_probe() {
	local s=c13 ev="$tmp/ev13" name="--output transcript, the pty" size
	start "$s" || { bad "$name" "no shell prompt" "$s"; return; }
	if probe_and_resize "$s" "$name" 6 90 25 1 -o "$ev" --output transcript; then
		if ! grep -q "probe: size $size" "$ev/stdout.log"; then
			bad "$name" "stdout.log lacks the new size" "$s"
		else
			ok "$name: a terminal of its own, sized as memsup's and resized with it; exit 6"
		fi
	fi
	done_with "$s"
}

# ---- 14. memsup run by a script: the command shares the script's job ---------
case_script() {
	local s=c14 ev="$tmp/ev14" name="run by a script"
	start "$s" || { bad "$name" "no shell prompt" "$s"; return; }
	typeln "$s" "bash -c '$M -o $ev -- python3 -q; echo inner-rc=\$?'"
	if ! wait_for "$s" '^>>> ?$'; then
		bad "$name" "no prompt" "$s"
		done_with "$s"
		return
	fi
	T send-keys -t "$s" C-c
	if ! wait_for "$s" '^KeyboardInterrupt$'; then
		bad "$name" "^C did not reach the REPL" "$s"
	else
		T send-keys -t "$s" C-z
		if ! wait_for "$s" 'Stopped +bash -c'; then
			bad "$name" "^Z did not stop the script's job" "$s"
		else
			T send-keys -t "$s" C-l
			typeln "$s" "fg"
			sleep 0.3
			typeln "$s" "print(7 * 8)"
			if ! wait_for "$s" '^56$'; then
				bad "$name" "the REPL did not come back after fg" "$s"
			else
				T send-keys -t "$s" C-d
				if ! wait_for "$s" '^inner-rc=0$'; then
					bad "$name" "the script did not go on with exit 0" "$s"
				else
					ok "$name: the REPL in the script's group gets ^C, stops and resumes with the job"
				fi
			fi
		fi
	fi
	done_with "$s"
}

case_ls
case_less
if command -v python3 >/dev/null 2>&1; then
	case_repl
	case_suspend
else
	skip "REPL" "no python3"
	skip "^Z then fg" "no python3"
fi
case_resize
case_signal c6 C-c 2 "^C"
case_signal c7 'C-\' 3 "^\\"
case_budget
case_background
case_procscan
case_pipe
if command -v python3 >/dev/null 2>&1; then
	case_transcript_repl
	case_script
else
	skip "--output transcript, a REPL" "no python3"
	skip "run by a script" "no python3"
fi
case_transcript_probe
if pgrep -f "$MEMSUP" >/dev/null 2>&1 && pgrep -af "$MEMSUP" | grep -q -- "-o $tmp/"; then
	bad "no memsup left behind" "$(pgrep -af "$MEMSUP" | grep -- "-o $tmp/" | head -3)"
else
	ok "no memsup of these cases left behind"
fi
[ "$n" -eq "$NCASES" ] || echo "# planned $NCASES cases, ran $n"
exit $((fails > 0))
