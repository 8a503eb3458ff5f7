"""Helper of test_netns.py: hold a 2-host cluster until a signal arrives.

Prints one JSON line (prefix, tracked PIDs, the PID of a process started over
SSH that nobody tracks), then sleeps. SIGINT/SIGTERM must tear it all down;
SIGKILL leaves leftovers for ``--cleanup``.
"""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

# Ctrl-C as in a terminal: a test run started in the background (`cmd &`) hands its children SIGINT
# ignored, and the cluster rightly keeps ignoring what its process ignores.
signal.signal(signal.SIGINT, signal.default_int_handler)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.providers.netns import NetnsCluster  # noqa: E402
from harness.resources import ResourceMonitor, netns_targets  # noqa: E402

c = NetnsCluster(Path(sys.argv[1]), 2)
c.start()
mon = ResourceMonitor(c.work_dir / "prom", netns_targets(c), track=c.track).start()
# a process that only lives in the namespace (as Ansible-started roles do)
stray = subprocess.run(c.ssh_argv("h1") + ["sh -c 'sleep 300 >/dev/null 2>&1 & echo $!'"],
                       capture_output=True, text=True, check=True).stdout.strip()
print(json.dumps({"prefix": c.prefix, "pids": [p["pid"] for p in c._procs], "stray": int(stray),
                  "key": str(c.key_path)}), flush=True)
while True:
    time.sleep(0.2)
