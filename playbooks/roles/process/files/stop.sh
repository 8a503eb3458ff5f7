#!/bin/sh
# Stop started processes by their PID files, in the order given.
#
#   stop.sh GRACE_S PID_FILE...                    those PID files
#   stop.sh GRACE_S --components WORK_DIR ROLE...  every started component of ROLE, in order: its
#                                                  WORK_DIR/ROLE/ROLE.pid, then (after every role's own)
#                                                  its instances' WORK_DIR/ROLE/<instance>/ROLE.pid
#   stop.sh GRACE_S --note-logs WORK_DIR           only note how far each log had got (below)
#
# Each process first leaves the point's watcher (its .watch marker is removed:
# stopped on purpose), has the CPU it used in its life recorded (utime + stime of
# all its threads, /proc/<pid>/stat fields 14-15) in cpu_<name>.csv beside its
# PID file for the harness's work check (harness/validity.py), gets SIGTERM, and
# SIGKILL if it is still there after GRACE_S seconds. A PID file whose process is
# gone is skipped.
set -u
grace=$1
shift

stop_one() {
  pid_file=$1
  dir=$(dirname "$pid_file")
  name=$(basename "$pid_file" .pid)
  rm -f "$dir/$name.watch"
  pid=$(cat "$pid_file" 2>/dev/null) || return 0
  if [ -r "/proc/$pid/stat" ]; then
    base=$(basename "$dir")
    [ "$base" = "$name" ] || name="${name}_${base}"  # an instance (<role>/<instance>/<role>.pid)
    ticks=$(getconf CLK_TCK)
    sed 's/^.*) //' "/proc/$pid/stat" | awk -v n="$name" -v p="$pid" -v t="$ticks" \
      'BEGIN { print "component,pid,user_s,system_s" } { printf "%s,%s,%.2f,%.2f\n", n, p, $12 / t, $13 / t }' \
      > "$dir/cpu_${name}.csv" || true
  fi
  kill -TERM "$pid" 2>/dev/null || return 0
  i=0
  while [ "$i" -lt $((grace * 10)) ]; do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
    i=$((i + 1))
  done
  kill -KILL "$pid" 2>/dev/null || true
}

# How far each log had got when the stop began (log_bytes_at_stop.csv, fetched with the raw
# data): what a component logs because it or a peer of it is being stopped (e.g. a peer losing
# its chaincode's stream, a deliver client its orderer on another host) is not evidence about the
# run (harness/validity.py scan_logs). Teardown notes it on every host before any host stops
# (--note-logs), since hosts stop at once; --components notes it where nobody did.
note_logs() {
  { echo log,bytes
    find "$1" -type f \( -name '*.log' -o -name '*.out' \) ! -name '[0-9][0-9][0-9][0-9][0-9][0-9].log' \
      -printf '%f,%s\n' 2>/dev/null; } > "$1/log_bytes_at_stop.csv" || true
}

if [ "${1:-}" = --note-logs ]; then
  [ -d "$2" ] && note_logs "$2"
elif [ "${1:-}" = --components ]; then
  work=$2
  shift 2
  [ -f "$work/log_bytes_at_stop.csv" ] || note_logs "$work"
  for role in "$@"; do
    [ -f "$work/$role/$role.pid" ] && stop_one "$work/$role/$role.pid"
  done
  for role in "$@"; do
    for pid_file in "$work/$role"/*/"$role.pid"; do
      [ -f "$pid_file" ] && stop_one "$pid_file"
    done
  done
else
  for pid_file in "$@"; do
    stop_one "$pid_file"
  done
fi
exit 0
