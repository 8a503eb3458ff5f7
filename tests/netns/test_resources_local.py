"""Per-host metrics with the local provider (one node-exporter on loopback): no root needed."""

import json
import shutil
import time
from pathlib import Path

import pytest

from harness import resources as R

pytestmark = pytest.mark.skipif(not (shutil.which(R.NODE_EXPORTER) and shutil.which(R.PROMETHEUS)),
                                reason="prometheus and prometheus-node-exporter not installed (invoke setup)")


def test_local_collect_and_plot(tmp_path):
    targets = R.local_targets(["orderer", "peer"])
    mon = R.ResourceMonitor(tmp_path / "prom", targets)
    with mon:
        cfg = mon.config()["scrape_configs"][0]["static_configs"][0]
        assert cfg["labels"] == {"host": "localhost", "roles": "orderer,peer"}
        start = time.time_ns()
        time.sleep(3)
        df = mon.collect(start, time.time_ns(), tmp_path / "out")
    for pid in mon.pids():  # stopped and reaped
        assert not Path(f"/proc/{pid}").exists()
    assert set(df.host) == {"localhost"} and set(df.role) == {"orderer,peer"}
    assert (df[df.metric == "net_rx_bytes_per_s"]["value"] > 0).any()   # Prometheus scraping over lo
    summary = json.loads((tmp_path / "out" / "resources.json").read_text())
    assert summary["schema_version"] == 1
    assert summary["hosts"]["localhost"]["device"] == "lo"
    assert 0 <= summary["hosts"]["localhost"]["metrics"]["cpu_util_ratio"]["max"] <= 1
    # the plot is byte-for-byte reproducible from the stored table
    a = R.plot_resources(df, tmp_path / "a.png").read_bytes()
    b = R.plot_resources(df, tmp_path / "b.png").read_bytes()
    assert a == b and a[:8] == b"\x89PNG\r\n\x1a\n"


def test_summarize_means_and_maxima():
    import pandas as pd
    df = pd.DataFrame({"time_ns": [1, 2, 1], "host": ["a", "a", "b"], "role": ["peer", "peer", "orderer"],
                       "metric": ["cpu_util_ratio"] * 3, "value": [0.2, 0.4, 1.0]})
    s = R.summarize(df, 0, 3)
    assert s["hosts"]["a"]["metrics"]["cpu_util_ratio"] == {"mean": pytest.approx(0.3), "max": 0.4, "samples": 2}
    assert s["hosts"]["b"]["roles"] == ["orderer"]
