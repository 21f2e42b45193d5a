#!/bin/sh
# realprogs_loop.sh: real programs with threads, fork and signals, over and
# over, must behave exactly the same under libmemtrace.so.
#
# Each round runs every case twice in the same fresh directory: bare, then
# with LD_PRELOAD=$MEMTRACE_SO (MEMTRACE_QUIET=1, MEMTRACE_DIR=<fresh dir>),
# and compares stdout, stderr and the exit status byte for byte.  Nothing is
# normalised: every case is written to be deterministic (fixed dates and
# identities for git, LC_ALL=C, `make -s` so that -j2 prints no command
# lines in racy order, signal counts that cannot coalesce).  The shim must
# also have left at least a minimum of record files, so that a case cannot
# pass because the preload did not load.
#
#   REALPROGS_ROUNDS   rounds (default 3)
# Output: TAP.  Needs MEMTRACE_SO (AM_TESTS_ENVIRONMENT).
set -u

: "${MEMTRACE_SO:?MEMTRACE_SO is not set}"
if [ ! -f "$MEMTRACE_SO" ]; then
	echo "1..0 # SKIP $MEMTRACE_SO not built"
	exit 0
fi
rounds=${REALPROGS_ROUNDS:-3}
cases="python perl sort gcc make git"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/realprogs_loop.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
work=$tmp/work
# One environment for both runs and every case: no user configuration.
LC_ALL=C
HOME=$tmp/home
GIT_CONFIG_NOSYSTEM=1
GIT_AUTHOR_NAME=memtrace GIT_AUTHOR_EMAIL=memtrace@example.org
GIT_COMMITTER_NAME=memtrace GIT_COMMITTER_EMAIL=memtrace@example.org
export LC_ALL HOME GIT_CONFIG_NOSYSTEM GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL \
	GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
unset MAKEFLAGS MFLAGS MAKELEVEL LD_PRELOAD MEMTRACE_DIR MEMTRACE_OUT MEMTRACE_PARENT
mkdir -p "$HOME"

have() { command -v "$1" >/dev/null 2>&1; }

# ---- the cases: prepare_X makes $work afresh, run_X runs in it -----------

# python3: four threads hashing while SIGUSR1 (to itself) and SIGALRM (an
# interval timer) arrive, a fork child that reports through a pipe and
# signals its parent, subprocess with a pipeline.  Each signal is awaited
# before the next is sent, so the counts cannot coalesce.
prepare_python() {
	cat >"$work/case.py" <<'PY'
import hashlib, os, signal, subprocess, sys, threading, time
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append('usr1'))
signal.signal(signal.SIGALRM, lambda s, f: got.append('alrm'))
def await_count(what, n):
    while got.count(what) < n:
        time.sleep(0.001)
res = {}
def work(i):
    d = {k: hashlib.sha256(str(k * i).encode()).hexdigest() for k in range(20000)}
    res[i] = hashlib.sha256(''.join(sorted(d.values())).encode()).hexdigest()[:16]
threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads: t.start()
os.kill(os.getpid(), signal.SIGUSR1)
await_count('usr1', 1)
for k in range(1, 4):
    signal.setitimer(signal.ITIMER_REAL, 0.003)
    await_count('alrm', k)
for t in threads: t.join()
for i in sorted(res): print('thread', i, res[i])
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.write(w, str(sum(i * i for i in range(200000))).encode())
    os.kill(os.getppid(), signal.SIGUSR1)
    os._exit(7)
os.close(w)
data = b''
while True:
    b = os.read(r, 100)
    if not b: break
    data += b
_, st = os.waitpid(pid, 0)
await_count('usr1', 2)
print('child', data.decode(), 'exit', os.waitstatus_to_exitcode(st))
print('signals', sorted(got))
print(subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True, text=True).stdout.strip())
print(subprocess.check_output(['sh', '-c', 'seq 1 5000 | sort -r | head -2'], text=True).split())
print('to stderr', file=sys.stderr)
sys.exit(3)
PY
}
run_python() { python3 case.py; }

# perl: five fork children one after the other, each computing, writing to
# a pipe, sending SIGUSR2 to its parent and exiting with its own status;
# SIGUSR1 to itself and a ualarm SIGALRM, each awaited.
run_perl() {
	perl -e '
use strict; use warnings; use Time::HiRes qw(ualarm usleep);
my %n = (USR1 => 0, USR2 => 0, ALRM => 0);
$SIG{$_} = do { my $s = $_; sub { $n{$s}++ } } for keys %n;
kill "USR1", $$; usleep(1000) until $n{USR1} == 1;
ualarm(3000); usleep(1000) until $n{ALRM} == 1;
for my $i (1 .. 5) {
	pipe(my $r, my $w) or die;
	my $pid = fork() // die "fork: $!";
	if (!$pid) {
		close $r; my %h; $h{$_} = $_ * $i for 1 .. 20000;
		my $s = 0; $s += $_ for values %h;
		print $w "$s\n"; close $w; kill "USR2", getppid(); exit $i;
	}
	close $w; my $line = <$r>; close $r; waitpid($pid, 0);
	usleep(1000) until $n{USR2} == $i;
	chomp $line; print "child $i sum $line exit ", $? >> 8, "\n";
}
print join(" ", map { "$_=$n{$_}" } sort keys %n), "\n";
warn "to stderr\n"; exit 4'
}

# sort: 300000 lines with two threads and a 1 MiB buffer (temporary files)
prepare_sort() {
	awk 'BEGIN { for (i = 0; i < 300000; i++) printf "%08d %s\n", (i * 7919) % 1000003, i }' \
		>"$work/big.txt"
}
run_sort() { sort --parallel=2 -S 1M -T . -k1,1 -k2,2n big.txt | cksum; }

# gcc: compile with a warning (stderr), link, run, and show the object's sum
prepare_gcc() {
	cat >"$work/m.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
	int unused;
	long s = 0;
	for (int i = 0; i < 1000; i++)
		s += (long)i * i;
	char *p = malloc(64);
	printf("%ld\n", s);
	free(p);
	return 5;
}
C
}
run_gcc() {
	gcc -O2 -Wall -fdiagnostics-color=never -c m.c -o m.o && gcc -o m m.o && cksum m.o && ./m
}

# make -j2 on a generated project of 8 files (-s: no command lines)
prepare_make() {
	for i in 1 2 3 4 5 6 7; do
		printf 'int f%d(int x) { return x * %d + %d; }\n' "$i" "$i" "$i" >"$work/f$i.c"
	done
	cat >"$work/main.c" <<'C'
#include <stdio.h>
int f1(int), f2(int), f3(int), f4(int), f5(int), f6(int), f7(int);
int main(void)
{
	printf("%d %d %d %d %d %d %d\n", f1(9), f2(9), f3(9), f4(9), f5(9), f6(9), f7(9));
	return 0;
}
C
	printf 'prog: main.o f1.o f2.o f3.o f4.o f5.o f6.o f7.o\n\t$(CC) -o $@ $^\n' \
		>"$work/Makefile"
}
run_make() { make -s -j2 && ./prog && make -s -j2 && echo "second make: nothing to do"; }

# git: init, three commits at fixed dates, log, diff, repack (threads)
run_git() {
	git -c init.defaultBranch=main init -q . &&
	for i in 1 2 3; do
		seq 1 $((i * 300)) >"file$i" &&
		echo "change $i" >>README &&
		git add -A &&
		GIT_AUTHOR_DATE="2020-01-0$i 12:00:00 +0000" \
		GIT_COMMITTER_DATE="2020-01-0$i 12:00:00 +0000" \
			git commit -q -m "commit $i" || return 1
	done &&
	git log --stat &&
	git diff HEAD~2 --stat &&
	git repack -a -d -q &&
	git rev-list --all --objects | wc -l &&
	git status --porcelain
}

min_records() {
	case $1 in
	python) echo 4 ;; # python, its fork child, the subprocess python, sh
	perl) echo 6 ;;   # perl and five fork children
	sort) echo 2 ;;   # sort and cksum
	gcc) echo 4 ;;    # gcc, cc1, as, collect2/ld, the program
	make) echo 10 ;;  # make, the compilers of 8 files, the program
	git) echo 10 ;;
	esac
}

needs() {
	case $1 in
	python) have python3 ;;
	perl) have perl ;;
	sort) have sort && have awk ;;
	gcc) have gcc ;;
	make) have make && have cc ;;
	git) have git ;;
	esac
}

# run_once NAME OUT [preload]: a fresh $work, the case run in it.
run_once() {
	rm -rf "$work" && mkdir -p "$work" || exit 99
	if command -v "prepare_$1" >/dev/null 2>&1; then "prepare_$1"; fi
	if [ $# -ge 3 ]; then
		(cd "$work" && LD_PRELOAD=$MEMTRACE_SO MEMTRACE_QUIET=1 MEMTRACE_DIR=$3 \
			"run_$1") >"$2.out" 2>"$2.err"
	else
		(cd "$work" && "run_$1") >"$2.out" 2>"$2.err"
	fi
	echo $? >"$2.rc"
}

total=0
for c in $cases; do total=$((total + rounds)); done
echo "1..$total"
n=0
round=1
while [ "$round" -le "$rounds" ]; do
	for c in $cases; do
		n=$((n + 1))
		name="round $round: $c"
		if ! needs "$c"; then
			echo "ok $n - $name # SKIP not installed"
			continue
		fi
		rec=$tmp/rec.$n
		mkdir -p "$rec"
		run_once "$c" "$tmp/bare"
		run_once "$c" "$tmp/shim" "$rec"
		records=$(find "$rec" -name '*.mtr' | wc -l)
		min=$(min_records "$c")
		if ! cmp -s "$tmp/bare.rc" "$tmp/shim.rc"; then
			echo "not ok $n - $name: exit $(cat "$tmp/bare.rc") bare, $(cat "$tmp/shim.rc") traced"
			sed 's/^/# /' "$tmp/shim.err" | head -20
		elif ! cmp -s "$tmp/bare.out" "$tmp/shim.out"; then
			echo "not ok $n - $name: stdout differs"
			diff "$tmp/bare.out" "$tmp/shim.out" | head -20 | sed 's/^/# /'
		elif ! cmp -s "$tmp/bare.err" "$tmp/shim.err"; then
			echo "not ok $n - $name: stderr differs"
			diff "$tmp/bare.err" "$tmp/shim.err" | head -20 | sed 's/^/# /'
		elif [ "$records" -lt "$min" ]; then
			echo "not ok $n - $name: only $records records (want >= $min): shim not active?"
		else
			echo "ok $n - $name (exit $(cat "$tmp/bare.rc"), $(wc -c <"$tmp/bare.out")+$(wc -c <"$tmp/bare.err") bytes, $records records)"
		fi
		rm -rf "$rec"
	done
	round=$((round + 1))
done
