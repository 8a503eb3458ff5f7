"""systems/fastfabric/fsync_probe.py: the fsync-latency probe the FastFabric README's explanation cites."""

import json

import pytest

from fabricrepro_systems.fastfabric import fsync_probe


def test_percentile_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert fsync_probe.percentile(values, 50) == 50.0
    assert fsync_probe.percentile(values, 99) == 99.0
    assert fsync_probe.percentile(values, 100) == 100.0
    assert fsync_probe.percentile([3.0], 99) == 3.0


def test_probe_writes_syncs_and_cleans_up(tmp_path, capsys):
    assert fsync_probe.main(["--dir", str(tmp_path), "--bytes", "2048", "--count", "8"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bytes"] == 2048 and out["count"] == 8
    assert 0 < out["median_ms"] <= out["p90_ms"] <= out["p99_ms"] <= out["max_ms"]
    assert out["syncs_per_s_at_median"] == pytest.approx(1000 / out["median_ms"], rel=0.01)
    assert list(tmp_path.iterdir()) == []          # the probe file is removed


@pytest.mark.parametrize("args, message", [
    (["--bytes", "0"], "must be positive"),
    (["--count", "-1"], "must be positive"),
])
def test_bad_sizes_are_refused(tmp_path, capsys, args, message):
    assert fsync_probe.main(["--dir", str(tmp_path), *args]) == 2
    assert message in capsys.readouterr().err


def test_missing_directory_is_refused(tmp_path, capsys):
    assert fsync_probe.main(["--dir", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err
