"""Each netns host's sshd: its configuration, its start inside the host's namespace, the wait until it answers.

The hosts are reached over SSH, as real servers are, so that Ansible and the
roles take the same path on netns as on the ssh provider's servers.
"""

from __future__ import annotations

import concurrent.futures
import subprocess
import time
from pathlib import Path

from ..errors import HarnessError
from .netns_namespaces import SSHD

SSHD_TEMPLATE = Path(__file__).resolve().parents[2] / "infra" / "netns" / "sshd_config.template"


def sshd_config(cluster, host: str) -> str:
    """The sshd_config of ``host``: its address only, the cluster's key only, its own host key and PID file."""
    d = cluster.host_dir(host)
    return SSHD_TEMPLATE.read_text().format(
        host=host, prefix=cluster.prefix, ip=cluster.ip(host), host_key=d / "ssh_host_ed25519_key",
        pid_file=d / "sshd.pid", authorized_keys=cluster.key_path.parent / "authorized_keys")


def start_sshds(cluster) -> None:
    """Start every host's sshd in its namespace, with the host's own hostname, as a tracked process."""
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation directory
    for h in cluster.hosts:
        d = cluster.host_dir(h)
        # ip netns exec, unshare (no --fork) and sh all exec: the PID we get is sshd's
        argv = ["ip", "netns", "exec", cluster.netns(h), "unshare", "--uts", "sh", "-c",
                f'hostname "$0" && exec {SSHD} -D -e -f "$1"', h, str(d / "sshd_config")]
        cluster.popen(h, argv, name="sshd", log=d / "sshd.log", in_netns=False)


def wait_ready(cluster, timeout_s: float) -> None:
    """Wait until every host answers ``ssh ... hostname`` with its own name; raise naming the first that did not."""
    deadline = time.monotonic() + timeout_s

    def probe(h: str) -> str | None:
        reason = "no answer"
        sshd = cluster.tracked(f"sshd@{h}")
        while True:
            if sshd["popen"].poll() is not None:
                tail = (cluster.host_dir(h) / "sshd.log").read_text(errors="replace").strip().splitlines()[-3:]
                return f"its sshd exited with code {sshd['popen'].returncode}: {' | '.join(tail) or 'no log'}"
            try:
                r = subprocess.run(cluster.ssh_argv(h) + ["hostname"], capture_output=True, text=True,
                                   timeout=max(1.0, min(5.0, deadline - time.monotonic())))
                if r.returncode == 0 and r.stdout.strip() == h:
                    return None
                reason = (r.stderr.strip() or f"hostname returned {r.stdout.strip()!r}")
            except subprocess.TimeoutExpired:
                reason = "ssh timed out"
            if time.monotonic() >= deadline:
                return reason
            time.sleep(0.1)

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(cluster.hosts))) as pool:
        results = dict(zip(cluster.hosts, pool.map(probe, cluster.hosts)))
    failed = {h: r for h, r in results.items() if r}
    if failed:
        h, why = next(iter(failed.items()))
        others = f" (also: {', '.join(list(failed)[1:])})" if len(failed) > 1 else ""
        raise HarnessError(f"netns host {h} ({cluster.ip(h)}) not reachable by SSH within {timeout_s:.0f}s: "
                           f"{why}{others}", log=str(cluster.host_dir(h) / "sshd.log"))
