#!/usr/bin/env bash
# Release check, not CI (issue 46): the README's set-up command, and with TESTS=1 its test command, on a
# stock Debian 12 and a stock Ubuntu 24.04, each a fresh debootstrap root entered with chroot; prints the
# wall time and the disk of each. Run as root:
#
#   UBUNTU_MIRROR=<an Ubuntu archive URL, .../ubuntu> scripts/release/fresh-roots.sh [debian12] [ubuntu2404]
#
# DEBIAN_MIRROR, DEBIAN_SECURITY: Debian archives (default: this machine's apt sources). UBUNTU_MIRROR: an
# Ubuntu archive (needed for ubuntu2404; the archive key comes from it, checked against UBUNTU_KEYRING_SHA256).
# ROOTS: where the roots go (default /var/tmp/fabricrepro-roots). TESTS=1: also the test command (~40 min and
# more on 2 cores). KEEP=1: keep the checked root. Each root is built once (NAME.pristine), then copied fresh.
# AS_USER=NAME: the set-up as a user who is not root but may sudo (a desktop install's first user: sudo
# installed, the user in group sudo, no password asked), the clone in that user's home; the test command
# stays root's (its network namespaces need root).
#
# What the roots have that a stock install does not: this machine's resolv.conf, the extra CA certificates
# of /usr/local/share/ca-certificates (a TLS-intercepting egress proxy, where there is one), and a
# policy-rc.d that keeps package scripts from starting services (sshd, prometheus) on this machine's ports.
set -euo pipefail

REPO=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
ROOTS=${ROOTS:-/var/tmp/fabricrepro-roots}
# the README's "Start" commands, verbatim (checked below)
SETUP_CMD='./setup'
TEST_CMD='. .venv/bin/activate && invoke test'
UBUNTU_KEYRING=ubuntu-keyring_2023.11.28.1_all.deb   # noble's, from its main/binary-amd64/Packages
UBUNTU_KEYRING_SHA256=${UBUNTU_KEYRING_SHA256:-36de43b15853ccae0028e9a767613770c704833f82586f28eb262f0311adb8a8}

say() { printf 'fresh-roots: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot, mount)"
for cmd in "$SETUP_CMD" "$TEST_CMD"; do
  grep -qF "    $cmd" "$REPO/README.md" || die "README.md's Start no longer shows \`$cmd\`: update this script"
done
command -v debootstrap >/dev/null || { say "apt-get install debootstrap"; apt-get install -y -q debootstrap >&2; }
# an archive URL of this machine's apt sources whose path matches $1
host_uri() { grep -hoE '^(URIs:|deb) +https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
               2>/dev/null | awk '{print $2}' | grep -E "$1" | head -n 1 || true; }
DEBIAN_MIRROR=${DEBIAN_MIRROR:-$(host_uri '/debian/?$')}
DEBIAN_SECURITY=${DEBIAN_SECURITY:-$(host_uri '/debian-security/?$')}
mkdir -p "$ROOTS"

root=""
cleanup() {
  [ -n "$root" ] || return 0
  # processes still running inside the root (started by this check) end first
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill "${p#/proc/}" 2>/dev/null || true
  done
  # every mount in the root (the root itself, proc, dev, the tests' network namespaces), deepest first
  awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r |
    while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
  [ -n "${KEEP:-}" ] || rm -rf --one-file-system "$root"
  root=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pristine() {  # NAME: the stock root, built once
  local name=$1 dir=$ROOTS/$1.pristine
  [ -d "$dir/etc/apt" ] && [ -f "$dir/.complete" ] && return 0
  rm -rf --one-file-system "$dir"
  case $name in
    debian12)
      [ -n "$DEBIAN_MIRROR" ] || die "set DEBIAN_MIRROR (no Debian archive in this machine's apt sources)"
      say "debootstrap bookworm from $DEBIAN_MIRROR"
      nice debootstrap --arch=amd64 bookworm "$dir" "$DEBIAN_MIRROR" >&2
      # as Debian 12's installer writes it
      { echo "deb $DEBIAN_MIRROR bookworm main non-free-firmware"
        echo "deb $DEBIAN_MIRROR bookworm-updates main non-free-firmware"
        [ -z "$DEBIAN_SECURITY" ] || echo "deb $DEBIAN_SECURITY bookworm-security main non-free-firmware"
      } > "$dir/etc/apt/sources.list" ;;
    ubuntu2404)
      [ -n "${UBUNTU_MIRROR:-}" ] || die "set UBUNTU_MIRROR to an Ubuntu archive (.../ubuntu) for ubuntu2404"
      local kr=$ROOTS/ubuntu-keyring script=/usr/share/debootstrap/scripts/noble
      [ -e "$script" ] || script=/usr/share/debootstrap/scripts/gutsy   # Debian 12's debootstrap predates noble
      curl -fsS -o "$ROOTS/$UBUNTU_KEYRING" "$UBUNTU_MIRROR/pool/main/u/ubuntu-keyring/$UBUNTU_KEYRING"
      echo "$UBUNTU_KEYRING_SHA256  $ROOTS/$UBUNTU_KEYRING" | sha256sum -c --quiet - || die "Ubuntu keyring: wrong sha256"
      rm -rf "$kr" && dpkg-deb -x "$ROOTS/$UBUNTU_KEYRING" "$kr"
      say "debootstrap noble from $UBUNTU_MIRROR"
      nice debootstrap --arch=amd64 --keyring="$kr/usr/share/keyrings/ubuntu-archive-keyring.gpg" \
        noble "$dir" "$UBUNTU_MIRROR" "$script" >&2
      # as Ubuntu 24.04's installer writes it
      rm -f "$dir/etc/apt/sources.list"
      printf 'Types: deb\nURIs: %s\nSuites: noble noble-updates noble-security\nComponents: main restricted universe multiverse\nSigned-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n' \
        "$UBUNTU_MIRROR" > "$dir/etc/apt/sources.list.d/ubuntu.sources" ;;
    *) die "unknown root $name (debian12, ubuntu2404)" ;;
  esac
  touch "$dir/.complete"
}

USER_NAME=${AS_USER:-}
HOME_DIR=/root
[ -z "$USER_NAME" ] || HOME_DIR=/home/$USER_NAME
CLONE=$HOME_DIR/fabricrepro

in_root() {  # COMMAND [USER]: run in the clone inside the root, with a login's plain environment
  local home=/root userspec=()
  [ -z "${2:-}" ] || { home=$HOME_DIR; userspec=(--userspec="$2:$2" --groups=sudo); }
  nice -n "${NICENESS:-0}" chroot "${userspec[@]}" "$root" /usr/bin/env -i HOME="$home" USER="${2:-root}" \
    TERM=dumb LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd $CLONE && $1"
}

as_user_root() {  # a desktop install's first user: may sudo without a password
  chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -c \
    "apt-get update -q && apt-get install -y -q sudo" >&2
  chroot "$root" useradd -m -s /bin/bash -G sudo "$USER_NAME"
  echo "$USER_NAME ALL=(ALL) NOPASSWD:ALL" > "$root/etc/sudoers.d/$USER_NAME"
  chmod 0440 "$root/etc/sudoers.d/$USER_NAME"
}

gib() { du -sxk "$@" 2>/dev/null | awk '{ s += $1 } END { printf "%.1f", s / 1048576 }'; }

check() {  # NAME
  local name=$1 log=$ROOTS/$1.log t0 t1 rc
  pristine "$name"
  root=$ROOTS/$name
  rm -rf --one-file-system "$root" && cp -a "$ROOTS/$name.pristine" "$root"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mkdir -p "$root/usr/local/share/ca-certificates"   # ca-certificates, once installed, takes them in
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
  [ ! -x "$root/usr/sbin/update-ca-certificates" ] || chroot "$root" update-ca-certificates >/dev/null
  printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d" && chmod +x "$root/usr/sbin/policy-rc.d"
  mount --bind "$root" "$root"   # a mount point, as / is: ip netns makes it rslave
  mount -t proc proc "$root/proc"
  mount -t sysfs sys "$root/sys"
  mount --bind /dev "$root/dev"
  mount --bind /dev/pts "$root/dev/pts"
  mount -t tmpfs shm "$root/dev/shm"
  # the root shares this machine's network: its tests' fixed loopback ports take this machine's network lock
  lock=${FABRICREPRO_NETWORK_LOCK:-/tmp/fabricrepro-network.lock}
  touch "$lock" "$root/tmp/fabricrepro-network.lock" && mount --bind "$lock" "$root/tmp/fabricrepro-network.lock"
  [ -z "$USER_NAME" ] || as_user_root
  git clone -q --no-hardlinks "$REPO" "$root$CLONE"
  [ -z "$USER_NAME" ] || chroot "$root" chown -R "$USER_NAME:$USER_NAME" "/home/$USER_NAME"
  local stock; stock=$(gib "$ROOTS/$name.pristine")
  say "$name: $SETUP_CMD${USER_NAME:+ as $USER_NAME, with sudo} (log $log)"
  t0=$(date +%s); rc=0
  in_root "$SETUP_CMD" "$USER_NAME" > "$log" 2>&1 || rc=$?
  t1=$(date +%s)
  printf '%s: `%s` exit %s in %d min %02d s; disk %s GiB (stock root %s GiB; the clone %s, .venv %s, Go module and build caches %s, the rest: apt packages)\n' \
    "$name" "$SETUP_CMD" "$rc" $(((t1 - t0) / 60)) $(((t1 - t0) % 60)) "$(gib "$root")" "$stock" \
    "$(gib "$root$CLONE" --exclude=.venv)" "$(gib "$root$CLONE/.venv")" \
    "$(gib "$root$HOME_DIR/go" "$root$HOME_DIR/.cache/go-build")"
  if [ "$rc" = 0 ] && [ -n "${TESTS:-}" ]; then
    say "$name: $TEST_CMD (log $ROOTS/$name.test.log)"
    t0=$(date +%s); rc=0
    NICENESS=19 in_root "$TEST_CMD" > "$ROOTS/$name.test.log" 2>&1 || rc=$?
    t1=$(date +%s)
    printf '%s: `%s` exit %s in %d min %02d s: %s; disk %s GiB\n' "$name" "$TEST_CMD" "$rc" \
      $(((t1 - t0) / 60)) $(((t1 - t0) % 60)) "$(tail -n 1 "$ROOTS/$name.test.log")" "$(gib "$root")"
  fi
  cleanup
  return "$rc"
}

status=0
for name in "${@:-debian12 ubuntu2404}"; do
  for n in $name; do check "$n" || status=1; done
done
exit "$status"
