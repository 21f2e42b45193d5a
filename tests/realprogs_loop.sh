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
#   REALPROGS_ROUNDS   rounds (default 1; 3 with MT_THOROUGH=1, CI's
#                      thorough check: a rare difference needs rounds)
#   REALPROGS_CASES    the cases to run (default: python perl sort gcc make
#                      git; tests/realprogs_threads.sh runs the threaded
#                      ones: xz zstd pigz sort4 gitgc pyfutures gcclto)
# Output: TAP.  Needs MEMTRACE_SO (AM_TESTS_ENVIRONMENT).
set -u

: "${MEMTRACE_SO:?MEMTRACE_SO is not set}"
if [ ! -f "$MEMTRACE_SO" ]; then
	echo "1..0 # SKIP $MEMTRACE_SO not built"
	exit 0
fi
default_rounds=1
[ -n "${MT_THOROUGH:-}" ] && [ "$MT_THOROUGH" != 0 ] && default_rounds=3
rounds=${REALPROGS_ROUNDS:-$default_rounds}
cases=${REALPROGS_CASES:-python perl sort gcc make git}

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

# ---- threaded programs (tests/realprogs_threads.sh) ----------------------

# 6 MB of compressible text, the same every time
prepare_text() {
	awk 'BEGIN { for (i = 0; i < 400000; i++) printf "%08d line %d of the corpus\n", (i * 7919) % 1000003, i }' \
		>"$work/text"
}

# xz with two threads (1 MiB blocks, so both really work), then back
prepare_xz() { prepare_text; }
run_xz() { xz -T2 -3 --block-size=1MiB -c text >text.xz && cksum <text.xz && xz -T2 -d -c text.xz | cksum; }

prepare_zstd() { prepare_text; }
run_zstd() { zstd -q -T2 -3 -c text >text.zst && cksum <text.zst && zstd -q -T2 -d -c text.zst | cksum; }

prepare_pigz() { prepare_text; }
run_pigz() { pigz -n -p 2 -c text >text.gz && cksum <text.gz && pigz -p 2 -d -c text.gz | cksum; }

# sort with four threads over a buffer big enough to keep them all busy
prepare_sort4() { prepare_sort; }
run_sort4() { sort --parallel=4 -S 16M -T . -k1,1 -k2,2n big.txt | cksum; }

# git gc (delta search on two threads) and index-pack --threads=2
run_gitgc() {
	git -c init.defaultBranch=main init -q . &&
	for i in 1 2 3 4 5 6; do
		seq 1 $((i * 2000)) | sed "s/\$/ rev $i/" >"file$((i % 3))" &&
		GIT_AUTHOR_DATE="2020-01-0$i 12:00:00 +0000" \
		GIT_COMMITTER_DATE="2020-01-0$i 12:00:00 +0000" \
			git -c core.autocrlf=false commit -q -a -m "commit $i" --allow-empty ||
			{ git add -A && GIT_AUTHOR_DATE="2020-01-0$i 12:00:00 +0000" \
			  GIT_COMMITTER_DATE="2020-01-0$i 12:00:00 +0000" \
			  git commit -q -m "commit $i"; } || return 1
	done &&
	git -c pack.threads=2 gc -q --aggressive &&
	for p in .git/objects/pack/*.pack; do
		cp "$p" copy.pack && git index-pack --threads=2 copy.pack || return 1
	done &&
	git count-objects -v | grep -v size &&
	git fsck --no-progress && git log --format='%H %s'
}

# python3 concurrent.futures: 16 worker threads, then 4 worker processes
prepare_pyfutures() {
	cat >"$work/case.py" <<'PY'
import concurrent.futures as cf, hashlib
def work(i):
    d = {k: hashlib.sha256(str(k * i).encode()).hexdigest() for k in range(4000)}
    return i, hashlib.sha256(''.join(sorted(d.values())).encode()).hexdigest()[:16]
if __name__ == '__main__':
    with cf.ThreadPoolExecutor(max_workers=16) as ex:
        for i, h in sorted(ex.map(work, range(32))):
            print('thread', i, h)
    with cf.ProcessPoolExecutor(max_workers=4) as ex:
        for i, h in sorted(ex.map(work, range(8))):
            print('process', i, h)
PY
}
run_pyfutures() { python3 case.py; }

# gcc link-time optimisation on two jobs
prepare_gcclto() {
	for i in 1 2 3 4; do
		printf 'int f%d(int x) { return x * %d + %d; }\n' "$i" "$i" "$i" >"$work/f$i.c"
	done
	cat >"$work/main.c" <<'C'
#include <stdio.h>
int f1(int), f2(int), f3(int), f4(int);
int main(void) { printf("%d\n", f1(1) + f2(2) + f3(3) + f4(4)); return 0; }
C
}
run_gcclto() { gcc -O2 -flto=2 -fdiagnostics-color=never main.c f1.c f2.c f3.c f4.c -o prog && ./prog; }

min_records() {
	case $1 in
	python) echo 4 ;; # python, its fork child, the subprocess python, sh
	perl) echo 6 ;;   # perl and five fork children
	sort) echo 2 ;;   # sort and cksum
	gcc) echo 4 ;;    # gcc, cc1, as, collect2/ld, the program
	make) echo 10 ;;  # make, the compilers of 8 files, the program
	git) echo 10 ;;
	xz | zstd | pigz) echo 4 ;; # the compressor twice, cksum twice
	sort4) echo 2 ;;
	gitgc) echo 10 ;;
	pyfutures) echo 5 ;; # python and its 4 worker processes
	gcclto) echo 5 ;;
	esac
}

needs() {
	case $1 in
	python) have python3 ;;
	perl) have perl ;;
	sort) have sort && have awk ;;
	gcc) have gcc ;;
	make) have make && have cc ;;
	git | gitgc) have git ;;
	xz | zstd | pigz) have "$1" && have awk ;;
	sort4) have sort && have awk ;;
	pyfutures) have python3 ;;
	gcclto) have gcc ;;
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
