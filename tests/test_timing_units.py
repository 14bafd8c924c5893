"""Worker-side helpers of --timing that need torch but not Dynamo."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from compile_lint.confirm.measure import timing  # noqa: E402
from compile_lint.confirm.measure.compare import agreement  # noqa: E402
from compile_lint.confirm.measure.timing import Snapshot, clone, flag_out_of_line, grouped, setup  # noqa: E402
from compile_lint.confirm.run.inputs import Made  # noqa: E402
from compile_lint.confirm.run.targets import Target  # noqa: E402


def test_clone_keeps_strides_and_detaches() -> None:
    wide = torch.randn(4, 8, requires_grad=True)
    view = wide.detach()[:, ::2]
    copied = clone((view, {"w": wide}))
    assert copied[0].stride() == view.stride() and not copied[0].is_contiguous()
    assert torch.equal(copied[0], view)
    assert copied[1]["w"].requires_grad and copied[1]["w"] is not wide
    copied[1]["w"].data.add_(1)
    assert not torch.equal(copied[1]["w"], wide)


def test_agreement_uses_per_dtype_defaults_or_the_given_tolerance() -> None:
    expected = torch.ones(3)
    close = expected + 1e-7
    assert agreement(expected, close, None)["ok"]
    far = expected + torch.tensor([0.0, 0.0, 1e-3])
    result = agreement((expected,), (far,), None)
    assert not result["ok"] and "Mismatched elements" in result["message"]
    assert result["max_abs_error"] == pytest.approx(1e-3, rel=1e-3)
    assert result["max_rel_error"] == pytest.approx(1e-3, rel=1e-3)
    loose = agreement((expected,), (far,), [1e-2, 1e-2])
    assert loose["ok"] and loose["tolerance"] == {"rtol": 1e-2, "atol": 1e-2}


def test_agreement_reports_a_shape_mismatch() -> None:
    result = agreement(torch.ones(3), torch.ones(4), None)
    assert not result["ok"] and result["max_abs_error"] == float("inf")


def test_entries_sharing_a_callable_are_input_sets_of_one_target() -> None:
    model, other = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    made = [Made(Target(fn, (torch.randn(n, 2),)), setup="") for fn, n in ((model, 1), (other, 1), (model, 3))]
    groups = grouped(made)
    assert [(index, [m.target.args[0].shape[0] for m in group]) for index, group in groups] == [(0, [1, 3]), (1, [1])]


def test_snapshot_restores_weights_grads_and_optimizer_state() -> None:
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def train_step(x: Any) -> Any:
        optimizer.zero_grad()
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
        return loss

    before = model.weight.detach().clone()
    snapshot = Snapshot(Target(train_step, (torch.ones(4, 2),)))
    first = train_step(torch.ones(4, 2))
    assert not torch.equal(model.weight, before)
    snapshot.restore()
    assert torch.equal(model.weight, before) and model.weight.grad is None
    assert optimizer.state_dict()["state"] == {}
    assert torch.equal(train_step(torch.ones(4, 2)), first)


def test_setup_records_what_both_modes_share() -> None:
    model = torch.nn.Linear(8, 8).eval()
    described = setup(Target(model, (torch.randn(2, 8, dtype=torch.float64)[:, ::2],)))
    assert described["inputs"] == ["float64[2, 4] non-contiguous cpu"]
    assert described["training"] is False and described["seed"] == 0
    assert described["threads"] == torch.get_num_threads()


def row(index: int, elements: int, median: float | None, **extra: Any) -> dict[str, Any]:
    return {
        "index": index,
        "elements": elements,
        "median_ms": median,
        "recompile_limit_hit": False,
        "rss_growth_mb": 0.0,
        **extra,
    }


def test_input_sets_out_of_line_are_flagged() -> None:
    rows = [
        row(0, 100, 1.0),
        row(1, 200, 1.5),
        row(2, 0, 5.0),  # an empty batch 5x slower than a full one: the fallback path blew up
        row(3, 100, None, error="RuntimeError: dtype"),
        row(4, 100, 1.1, recompile_limit_hit=True),
        row(5, 100, 1.0, rss_growth_mb=500.0),
    ]
    flag_out_of_line(rows)
    assert [r["flags"] for r in rows] == [[], [], ["latency"], ["raised"], ["recompile_limit"], ["memory"]]


def test_the_steady_state_leaves_out_what_switching_modes_costs(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a clock the calls drive: a call right after the other mode's costs 3 ms (its caches hold the
    other mode's code and data), a settled one 1 ms. Timed one call per mode in turn, every sample would
    be 3 ms; the blocks' untimed opening calls take the switch, so every timed call is a settled 1 ms."""
    clock = {"now": 0.0, "last": ""}

    def mode(name: str) -> Any:
        def call(x: torch.Tensor) -> None:
            clock["now"] += 0.001 if clock["last"] == name else 0.003
            clock["last"] = name

        return call

    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock["now"])
    eager, compiled = timing.steady(mode("eager"), mode("compiled"), Target(mode("eager"), (torch.ones(1),)))
    for measured in (eager, compiled):
        assert measured["median_ms"] == pytest.approx(1.0) and measured["iqr_ms"] == pytest.approx(0.0)
        assert measured["calls"] >= timing.MIN_RUN_TIME / 0.001  # at least MIN_RUN_TIME of timed calls


def samples(blocks: list[list[tuple[float, bool]]]) -> timing.Samples:
    made = timing.Samples()
    for calls in blocks:
        made.open_block()
        for seconds, preempted in calls:
            made.add(seconds, preempted)
    return made


def test_the_median_leaves_out_calls_the_scheduler_switched_out() -> None:
    """A third of the calls waited 5 ms for the CPU: all calls' median would be pulled up, the
    uninterrupted calls' median is the call's time."""
    calls = [(0.001, False), (0.001, False), (0.006, True)] * 10
    figure = timing.summary(samples([calls, calls]))
    assert figure["median_ms"] == pytest.approx(1.0) and figure["calls_used"] == 40 and figure["calls"] == 60
    assert figure["preempted"] == pytest.approx(1 / 3) and figure["unreliable"] is None


def test_blocks_that_disagree_make_the_figure_unreliable() -> None:
    quiet, busy = [(0.001, False)] * 12, [(0.002, False)] * 12  # the machine doubled every call's time
    figure = timing.summary(samples([quiet, quiet, busy, busy, quiet, busy]))
    assert figure["blocks"] == 6 and figure["block_spread"] == pytest.approx(2.0)
    assert figure["unreliable"] is not None and "its blocks disagree" in figure["unreliable"]
    steady = timing.summary(samples([quiet] * 6))
    assert steady["block_spread"] == pytest.approx(1.0) and steady["unreliable"] is None
