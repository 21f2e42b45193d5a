#!/usr/bin/env bash
# tests/vm/run.sh: memsup in real kernels.  Boots Debian 12 under
# qemu-system-x86_64 (TCG; KVM when /dev/kvm is there) once per cgroup
# layout and runs tests/vm/guest/cases.sh inside, as root, from a systemd
# oneshot service: memsup in a service's cgroup shared with the shell that
# started it, in a scope, as a lingering user (alice, uid 1001), as a user
# without a manager (bob, uid 1002), in a container whose cgroup file
# system is read-only, with --mem-max and with a fork bomb.
#
#   v2  pure cgroup v2 under systemd (Debian 12's default)
#   v1  cgroup v1 only (systemd.unified_cgroup_hierarchy=0
#       systemd.legacy_systemd_cgroup_controller=1: no unified hierarchy)
#
# How: mmdebstrap builds a bookworm root file system (minbase, with systemd,
# python3 and the users) from the host's apt sources; the kernel is Debian's
# cloud kernel (linux-image-cloud-amd64's linux-image-6.1.*-cloud-amd64,
# fetched with apt-get download).  Both are cached in $MT_VM_CACHE, the root
# keyed by its recipe, the kernel by its version, so a second run fetches
# nothing.  A copy of the root gets `make install DESTDIR=` of the build,
# the programs of tests/progs (/opt/memtrace/progs) and tests/vm/guest/
# (/opt/memtrace/vm), and is booted whole as an uncompressed newc cpio
# initramfs (rdinit=/sbin/init).  The guest prints its TAP lines behind the
# marker "MTVM: " on the serial console; this script takes them out of the
# serial log and prints them as one TAP stream, each case named
# "<boot>: <case>", then one line "N passed, N failed, N skipped".
#
# Needs root (mmdebstrap, the image's owners), qemu-system-x86_64
# (qemu-system-x86), mmdebstrap and cpio: installed with apt-get when
# missing.  Without them, or without the package registry, it prints
# "1..0 # SKIP <why>" and exits 0.  Exit status 1 when a case failed or a
# boot gave no plan or fewer results than its plan (the serial log's tail
# is printed then).  qemu is always killed when this script ends, and its
# temporary directory removed (the cache is kept).
#
# Environment:
#   MT_VM_BOOTS     boots to run, in order (default "v2 v1")
#   MT_VM_CASES     extended regex: run only the guest cases it matches
#                   (e.g. MT_VM_CASES='^(root_scope|nothing_left)$')
#   MT_VM_CACHE     cache directory (default tests/vm/.cache, gitignored)
#   MT_VM_BUILDDIR  the configured build to install (default: this tree);
#                   `make check TESTS=` is run there first
#   MT_VM_TIMEOUT   seconds a boot may take before qemu is killed (1200)
#   MT_VM_KEEP      a directory: keep the serial logs there
#
# Measured on the 2-core CI VM (no KVM, TCG): the root file system 100-130 s
# and the kernel download 3 s, both once; the image (make install, a 180 MB
# cpio) about 10 s; the v2 boot with its 17 cases 97 s from qemu's start to
# its exit, the v1 boot 78 s.  About 3.5 minutes in all with the cache, 2
# more without (HACKING.md, "Real kernels").
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case ${1:-} in
-h | --help) usage; exit 0 ;;
"") ;;
*) echo "run.sh: no arguments (see --help), got: $*" >&2; exit 2 ;;
esac

top=$(cd "$(dirname "$0")/../.." && pwd)
vmdir=$top/tests/vm
builddir=${MT_VM_BUILDDIR:-$top}
cache=${MT_VM_CACHE:-$vmdir/.cache}
boots=${MT_VM_BOOTS:-v2 v1}
filter=${MT_VM_CASES:-}
boot_timeout=${MT_VM_TIMEOUT:-1200}
marker='MTVM: '
t0=$SECONDS

say() { echo "# vm: $* ($((SECONDS - t0)) s)"; }
skip() { echo "1..0 # SKIP $*"; exit 0; }

for b in $boots; do
	case $b in v1 | v2) ;; *) echo "run.sh: unknown boot '$b' in MT_VM_BOOTS (v1, v2)" >&2; exit 2 ;; esac
done

# --- tools ---------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "needs root (mmdebstrap builds the image's owners as root)"
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v cpio >/dev/null || need+=(cpio)
if ((${#need[@]})); then
	say "installing ${need[*]}"
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${need[@]}"; } >/dev/null 2>&1; then
		skip "could not install ${need[*]} with apt-get (no package registry?)"
	fi
fi
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64"

# --- the work directory and its end --------------------------------------
work=$(mktemp -d /tmp/memtrace-vm.XXXXXX) || exit 1
qpid=
cleanup() {
	if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
		kill "$qpid" 2>/dev/null
		sleep 1
		kill -9 "$qpid" 2>/dev/null
		wait "$qpid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

mkdir -p "$cache" || exit 1
chmod 755 "$work" # apt-get download runs as _apt where it can

# The registry is needed only for what the cache lacks; ask it once for a
# small package first, so that "no registry" is a skip and not a failure.
registry_ok() {
	[ -n "${registry_checked:-}" ] && return "$registry_checked"
	(cd "$work" && apt-get download -q linux-image-cloud-amd64 >/dev/null 2>&1)
	registry_checked=$?
	return "$registry_checked"
}

# --- the kernel ----------------------------------------------------------
kpkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null \
	| awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
kdir=
if [ -n "$kpkg" ] && [ -f "$cache/$kpkg/vmlinuz" ]; then
	kdir=$cache/$kpkg
elif [ -n "$kpkg" ] && registry_ok; then
	say "fetching $kpkg"
	ts=$SECONDS
	rm -rf "$cache/$kpkg.tmp" && mkdir -p "$cache/$kpkg.tmp/x"
	if (cd "$work" && apt-get download -q "$kpkg" >/dev/null 2>&1) &&
		dpkg-deb -x "$work/$kpkg"_*.deb "$cache/$kpkg.tmp/x" &&
		cp "$cache/$kpkg.tmp"/x/boot/vmlinuz-* "$cache/$kpkg.tmp/vmlinuz"; then
		rm -rf "${cache:?}/$kpkg.tmp/x" "${cache:?}/${kpkg:?}"
		mv "$cache/$kpkg.tmp" "$cache/$kpkg" && kdir=$cache/$kpkg
		find "$cache" -maxdepth 1 -name 'linux-image-*' ! -name "$kpkg" -exec rm -rf {} +
		say "kernel fetched in $((SECONDS - ts)) s"
	fi
	rm -f "$work"/*.deb
else # an older cached kernel will do without the registry
	kdir=$(find "$cache" -maxdepth 2 -path '*/linux-image-*/vmlinuz' -printf '%h\n' 2>/dev/null | sort | tail -1)
fi
[ -n "$kdir" ] || skip "no kernel: linux-image-cloud-amd64 could not be fetched (no package registry?)"

# --- the root file system ------------------------------------------------
packages=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,python3,util-linux,procps,mount,coreutils
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -s "$f" ] && sources+=("$f")
done
# Run in the new root by mmdebstrap: the users, lingering for alice only,
# no getty on the serial console (its prompt would only add noise).
# shellcheck disable=SC2016 # $1 is mmdebstrap's, expanded by its shell
hook='chroot "$1" useradd -m -u 1001 -s /bin/bash alice &&
chroot "$1" useradd -m -u 1002 -s /bin/bash bob &&
mkdir -p "$1/var/lib/systemd/linger" && touch "$1/var/lib/systemd/linger/alice" &&
chroot "$1" systemctl mask serial-getty@ttyS0.service getty@tty1.service apt-daily.timer apt-daily-upgrade.timer >/dev/null &&
echo memtrace-vm >"$1/etc/hostname"'
dpkgopts=(--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
	--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*')
key=$( { echo "bookworm minbase $packages"; printf '%s\n' "${dpkgopts[@]}" "$hook";
	cat "${sources[@]}" 2>/dev/null; } | sha256sum | cut -c1-16)
rootfs=$cache/rootfs-$key.tar
if [ ! -s "$rootfs" ]; then
	registry_ok || skip "no package registry: cannot build the root file system"
	say "building root fs (mmdebstrap, key $key)..."
	ts=$SECONDS
	if ! mmdebstrap --format=tar --variant=minbase --include="$packages" "${dpkgopts[@]}" \
		--customize-hook="$hook" bookworm "$rootfs.tmp" "${sources[@]}" \
		>"$work/mmdebstrap.log" 2>&1; then
		echo "not ok 1 - vm: mmdebstrap failed"
		tail -25 "$work/mmdebstrap.log" | sed 's/^/# /'
		rm -f "$rootfs.tmp"
		echo "0 passed, 1 failed, 0 skipped"
		exit 1
	fi
	mv "$rootfs.tmp" "$rootfs"
	find "$cache" -maxdepth 1 -name 'rootfs-*.tar' ! -name "rootfs-$key.tar" -delete
	say "root fs built in $((SECONDS - ts)) s"
fi

# --- the image: root + this build + the cases ----------------------------
say "installing the build from $builddir"
if ! make -C "$builddir" -j"$(nproc)" check TESTS= >"$work/make.log" 2>&1; then
	echo "not ok 1 - vm: make check TESTS= failed in $builddir"
	tail -25 "$work/make.log" | sed 's/^/# /'
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
root=$work/root
mkdir "$root" && tar -xf "$rootfs" -C "$root" || exit 1
if ! make -C "$builddir" install DESTDIR="$root" >"$work/install.log" 2>&1; then
	echo "not ok 1 - vm: make install DESTDIR= failed"
	tail -25 "$work/install.log" | sed 's/^/# /'
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
mkdir -p "$root/opt/memtrace/progs" "$root/opt/memtrace/vm" "$root/etc/mtvm"
find "$builddir/tests/progs" -maxdepth 1 -type f -perm -u+x ! -name '*.sh' ! -name '*.py' \
	-exec cp -t "$root/opt/memtrace/progs" {} +
cp "$vmdir"/guest/* "$root/opt/memtrace/vm/"
printf '%s\n' "$filter" >"$root/etc/mtvm/cases"
# The run: after the boot's units, its output on the serial console, and
# the machine off at the end whatever happens.  Straight to reboot(2)
# (poweroff -ff): the root is RAM, nothing to save, and systemd's own
# poweroff (SuccessAction=poweroff-force) never reached the kernel's power
# off here; a second for the UART to send the last lines first.  qemu
# -no-reboot exits then.
cat >"$root/etc/systemd/system/mtvm-cases.service" <<'EOF'
[Unit]
Description=memsup real-kernel cases (tests/vm)
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/opt/memtrace/vm/cases.sh
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
TTYReset=no
TTYVHangup=no
TimeoutStartSec=infinity
ExecStopPost=/bin/sh -c 'sleep 1; exec systemctl poweroff -ff'
[Install]
WantedBy=multi-user.target
EOF
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf ../mtvm-cases.service "$root/etc/systemd/system/multi-user.target.wants/mtvm-cases.service"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) >"$work/root.cpio" || exit 1
rm -rf "$root"
say "image: $(($(stat -c %s "$work/root.cpio") / 1048576)) MB cpio, kernel $(basename "$kdir")"

# --- the boots -------------------------------------------------------------
accel=(-accel tcg)
[ -w /dev/kvm ] && accel=(-accel kvm -cpu host)
n=0 passed=0 failed=0 skipped=0
tap() { # status name [directive]
	n=$((n + 1))
	case $1 in
	ok) passed=$((passed + 1)) ;;
	skip) skipped=$((skipped + 1)); echo "ok $n - $2 # SKIP ${3:-}"; return ;;
	*) failed=$((failed + 1)) ;;
	esac
	echo "$1 $n - $2${3:+ $3}"
}
serial_tail() { sed 's/\r$//; s/\x1b\[[0-9;]*m//g' "$1" | grep -av "^$marker" | tail -"${2:-40}" | sed 's/^/#   | /'; }

for b in $boots; do
	extra=
	[ "$b" = v1 ] && extra="systemd.unified_cgroup_hierarchy=0 systemd.legacy_systemd_cgroup_controller=1"
	log=$work/serial-$b.log
	say "booting $b (${accel[*]})..."
	ts=$SECONDS
	qemu-system-x86_64 "${accel[@]}" -m 2048 -smp 2 -display none -no-reboot \
		-monitor none -nic none -serial "file:$log" \
		-kernel "$kdir/vmlinuz" -initrd "$work/root.cpio" \
		-append "console=ttyS0 rdinit=/sbin/init panic=-1 loglevel=4 memsup_vm.boot=$b $extra" \
		</dev/null >"$work/qemu-$b.out" 2>&1 &
	qpid=$!
	timed_out=0 next=60
	while kill -0 "$qpid" 2>/dev/null; do
		if ((SECONDS - ts >= boot_timeout)); then
			timed_out=1
			kill "$qpid" 2>/dev/null; sleep 1; kill -9 "$qpid" 2>/dev/null
			break
		fi
		if ((SECONDS - ts >= next)); then
			say "$b running, $((SECONDS - ts)) s, $(grep -ac "^${marker}\(not \)\{0,1\}ok" "$log" 2>/dev/null) results so far"
			next=$((next + 60))
		fi
		sleep 1
	done
	wait "$qpid" 2>/dev/null
	qpid=
	say "$b ended after $((SECONDS - ts)) s"
	[ -n "${MT_VM_KEEP:-}" ] && mkdir -p "$MT_VM_KEEP" && cp "$log" "$MT_VM_KEEP/"
	# The guest's lines: "MTVM: ok 3 - name", "MTVM: # ...", "MTVM: 1..N".
	plan='' got=0
	while IFS= read -r line; do
		case $line in
		"1.."*) plan=${line#1..} ;;
		"#"*) echo "$line" ;;
		"ok "* | "not ok "*)
			got=$((got + 1))
			st=ok
			[ "${line#not }" != "$line" ] && st="not ok"
			rest=${line#"$st" }
			rest=${rest#* - }
			name=${rest%% \#*} directive=
			[ "$name" != "$rest" ] && directive="#${rest#* \#}"
			if [ "$st" = ok ] && [[ $directive =~ ^\#\ *(SKIP|skip) ]]; then
				tap skip "$b: $name" "${directive#*SKIP}"
			else
				tap "$st" "$b: $name" "$directive"
			fi
			;;
		esac
	done < <(sed 's/\r$//' "$log" 2>/dev/null | grep -ao "${marker}.*" | sed "s/^$marker//")
	# A case's failure says why in its own comments; a boot that hung or
	# ended early, only in the serial log.
	why=
	if [ -z "$plan" ]; then
		why="no plan from the guest ($got results)"
	elif [ "$got" -lt "$plan" ]; then
		why="$got results of a plan of $plan"
	fi
	if [ -n "$why" ]; then
		((timed_out)) && why="$why, qemu killed after $boot_timeout s"
		tap "not ok" "$b: boot" "# $why"
		echo "# $b: the serial log's last lines (without the guest's TAP):"
		serial_tail "$log" 40
	fi
done
echo "1..$n"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
