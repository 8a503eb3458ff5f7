#!/usr/bin/env bash
# Release check, not CI (issue 46 item 6): does the report's "Run next" estimate hold? For one experiment, a
# smoke run into a results store of its own, its report, then the command the first screen proposes, timed;
# prints the estimate beside the measured wall time, with the load average at each step. Run it on an idle
# machine with the builds in place (a build or a wait for another run's hold on the machine is left out of the
# estimate, not of the wall time).
#
#   scripts/release/estimate-check.sh PAPER EXPERIMENT [OUT]     (OUT default: /var/tmp/fabricrepro-estimates)
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 PAPER EXPERIMENT [OUT]" >&2; exit 2; }
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
P=$1 E=$2 OUT=${3:-/var/tmp/fabricrepro-estimates}/$1.$2
export FABRICREPRO_RESULTS=$OUT/results FABRICREPRO_REPORTS=$OUT/reports
mkdir -p "$OUT"
say() { echo "$*" | tee -a "$OUT/log"; }
say "load before the smoke run: $(cat /proc/loadavg)"
t0=$(date +%s)
invoke reproduce --paper "$P" --experiment "$E" --scale smoke > "$OUT/smoke.out" 2>&1 || { say "smoke run failed: $OUT/smoke.out"; exit 1; }
say "smoke run: $(( $(date +%s) - t0 )) s"
python3 - "$OUT/reports/$P/glance.json" "$E" > "$OUT/next.txt" <<'PY'
import json, sys
for n in json.load(open(sys.argv[1])).get("next") or []:
    if n.get("experiment") == sys.argv[2]:
        print(n["command"]); print(n.get("estimate_s")); print(n.get("how"))
PY
cmd=$(sed -n 1p "$OUT/next.txt")
[ -n "$cmd" ] || { say "no Run next for $E: every claim it carries is judged at smoke"; exit 0; }
estimate=$(sed -n 2p "$OUT/next.txt")
say "Run next: $cmd"
say "estimate: $estimate s ($(sed -n 3p "$OUT/next.txt"))"
say "load before it: $(cat /proc/loadavg)"
t0=$(date +%s)
bash -c "$cmd" > "$OUT/next.out" 2>&1; rc=$?
wall=$(( $(date +%s) - t0 ))
say "measured: $wall s (exit $rc); estimate/measured = $(python3 -c "print(round($estimate / $wall, 2))")"
say "load after: $(cat /proc/loadavg)"
