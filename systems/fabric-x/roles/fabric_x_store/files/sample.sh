#!/bin/bash
# Fabric-X store sampler (ours): every INTERVAL seconds, the wall clock and the count of each status in
# tx_status (status 1 = COMMITTED, fabric-x-common api/committerpb/status.proto), as store_samples.csv
# rows t_ns,committed,total. Before the committer has made the table, it writes nothing.
set -u
host=$1 port=$2 interval=$3 out=$4
echo "t_ns,committed,total" > "$out"
q="SELECT count(*) FILTER (WHERE status = 1), count(*) FROM tx_status"
while true; do
  t=$(date +%s%N)
  if row=$(psql -X -q -A -t -F, -h "$host" -p "$port" -U postgres -d postgres -c "$q" 2>/dev/null) && [ -n "$row" ]; then
    echo "$t,$row" >> "$out"
  fi
  sleep "$interval"
done
