#!/bin/bash
# Runs Fabric-X's load generator to completion (ours). At its transaction limit the generator cancels its
# own context and `loadgen start` returns "workload done: ..." with exit status 1 (loadgen/client.go Run,
# cmd/loadgen/main.go): that is its normal end, so status 1 with that last line counts as success; any
# other ending fails. Writes loadgen_run.csv: start_ns,end_ns,transactions,exit_status. A fourth argument
# "plant" makes the generator name each transaction it spoiled (our patch 0001: FABRICREPRO_MUTATION_LOG)
# in mutations.log, for the control point (fabric_x_store's dump turns it into mutations.csv).
set -u
loadgen=$1 config=$2 transactions=$3 plant=${4:-}
if [ "$plant" = plant ]; then
  export FABRICREPRO_MUTATION_LOG="$PWD/mutations.log"
fi
start=$(date +%s%N)
"$loadgen" start --config "$config" 2> loadgen.err
status=$?
end=$(date +%s%N)
cat loadgen.err >&2
echo "start_ns,end_ns,transactions,exit_status" > loadgen_run.csv
echo "$start,$end,$transactions,$status" >> loadgen_run.csv
if [ "$status" = 1 ] && tail -n 1 loadgen.err | grep -q '^Error: workload done: '; then
  rm -f loadgen.err; exit 0
fi
rm -f loadgen.err
exit "$status"
