"""Plan expansion, configuration precedence and resume."""

import json

from harness.plan import expand, make_plan, pending


def test_points_are_variants_by_sweep_by_repetition(mini, root):
    plan = make_plan(mini, mini.experiment("bench"), "smoke", environ={}, root=root)
    assert [p.id for p in plan.points] == [
        "slow__batch_timeout_ms=100__r0", "slow__batch_timeout_ms=200__r0",
        "quick__batch_timeout_ms=100__r0", "quick__batch_timeout_ms=200__r0",
        "slow__batch_timeout_ms=100__r1", "slow__batch_timeout_ms=200__r1",
        "quick__batch_timeout_ms=100__r1", "quick__batch_timeout_ms=200__r1",
    ]
    assert plan.resolved["not_runnable_variants"] == {"future": "not built"}
    assert plan.points[2].switches == {"fast": True}
    assert plan.points[0].switches == {"fast": False}


def test_precedence_cli_over_environment_over_experiment_over_defaults(mini, root):
    plan = make_plan(mini, mini.experiment("bench"), "smoke", root=root,
                     environ={"FABRICREPRO_TRANSACTIONS": "70", "FABRICREPRO_BLOCK_SIZE": "20"},
                     overrides={"block_size": 30})
    params = plan.resolved["parameters"]
    assert params["block_size"] == {"value": 30, "source": "cli"}
    assert params["transactions"] == {"value": 70, "source": "environment"}
    assert params["payload_bytes"] == {"value": 100, "source": "experiment"}
    assert params["point_timeout_s"]["source"] == "defaults"
    assert "note" not in params and "citation" not in params


def test_override_of_a_swept_parameter_replaces_the_sweep(mini, root):
    plan = make_plan(mini, mini.experiment("bench"), "smoke", environ={}, root=root,
                     overrides={"batch_timeout_ms": 500}, repeat=1)
    assert [p.id for p in plan.points] == ["slow__batch_timeout_ms=500__r0", "quick__batch_timeout_ms=500__r0"]


def test_expand_rebuilds_the_same_points_from_resolved(mini, root):
    plan = make_plan(mini, mini.experiment("bench"), "local", environ={}, root=root)
    assert expand(plan.resolved) == plan.points
    assert len(plan.points) == 2 * 2 * 3


def test_resume_skips_points_whose_summary_is_complete(mini, root, tmp_path):
    plan = make_plan(mini, mini.experiment("bench"), "smoke", environ={}, root=root)
    for point, status in zip(plan.points[:3], ["complete", "failed", "interrupted"]):
        d = tmp_path / "points" / point.id
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps({"status": status}))
    assert [p.id for p in pending(plan, tmp_path)] == [p.id for p in plan.points[1:]]
