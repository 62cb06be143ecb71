"""harness/conditions.py: the knobs `twinbench tune` sets, conditions, and the background meter."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from brokers.core.errors import UserError
from harness import conditions

HALTPOLL = "sys/module/haltpoll/parameters/guest_halt_poll_ns"


def fake_root(tmp_path: Path, haltpoll: str | None = "0", governors: list[str] | None = None
              ) -> Path:
    root = tmp_path / "root"
    if haltpoll is not None:
        (root / HALTPOLL).parent.mkdir(parents=True)
        (root / HALTPOLL).write_text(haltpoll + "\n")
    for i, gov in enumerate(governors or []):
        path = root / f"sys/devices/system/cpu/cpu{i}/cpufreq/scaling_governor"
        path.parent.mkdir(parents=True)
        path.write_text(gov + "\n")
    (root / "proc").mkdir(parents=True)
    (root / "proc/loadavg").write_text("0.50 1.25 2.00 1/100 4242\n")
    (root / "proc/cpuinfo").write_text("processor : 0\nflags : fpu hypervisor sse\n")
    return root


@pytest.mark.filesystem
def test_read_knobs_reports_absent_and_mixed_values(tmp_path: Path) -> None:
    root = fake_root(tmp_path, haltpoll=None, governors=["powersave", "performance"])
    assert conditions.read_knobs(root) == {"guest_halt_poll_ns": None,
                                        "cpufreq_governor": "performance,powersave"}
    assert not conditions.tuned(conditions.read_knobs(root))
    assert conditions.tuned({"guest_halt_poll_ns": None, "cpufreq_governor": None})


@pytest.mark.filesystem
def test_apply_then_reset_restores_what_was_there(tmp_path: Path) -> None:
    root = fake_root(tmp_path, governors=["powersave", "performance"])
    state = tmp_path / "state" / "tune.json"
    changed = conditions.apply(root, state)
    # Only what differed changed; cpu1 was already at performance.
    assert changed == {str(root / HALTPOLL): "0",
                       str(root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"):
                           "powersave"}
    assert conditions.tuned(conditions.read_knobs(root))
    # Applying again saves nothing new: reset still restores the original values.
    assert conditions.apply(root, state) == {}
    restored = conditions.reset(state)
    assert restored == changed
    assert conditions.read_knobs(root) == {"guest_halt_poll_ns": "0",
                                        "cpufreq_governor": "performance,powersave"}
    assert not state.exists()


@pytest.mark.filesystem
def test_restore_undoes_one_apply_and_keeps_earlier_state(tmp_path: Path) -> None:
    root = fake_root(tmp_path, governors=["powersave"])
    state = tmp_path / "tune.json"
    gov = str(root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    # The user tuned the governor by hand earlier (state saved); a run then tunes haltpoll.
    (root / HALTPOLL).write_text("200000\n")
    assert conditions.apply(root, state) == {gov: "powersave"}
    (root / HALTPOLL).write_text("0\n")
    run_changed = conditions.apply(root, state)
    assert run_changed == {str(root / HALTPOLL): "0"}
    conditions.restore(run_changed, state)
    assert (root / HALTPOLL).read_text().strip() == "0"
    # The governor stays tuned and remembered for `twinbench tune reset`.
    assert Path(gov).read_text().strip() == "performance"
    assert conditions.reset(state) == {gov: "powersave"}


@pytest.mark.filesystem
def test_apply_without_permission_is_one_line(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    (root / HALTPOLL).unlink()
    # Readable, and refused to anyone writing it (root included), like sysfs to a user.
    (root / HALTPOLL).symlink_to("/proc/version")
    with pytest.raises(UserError, match=r"cannot set guest_halt_poll_ns .*needs root"):
        conditions.apply(root, tmp_path / "tune.json")


@pytest.mark.filesystem
def test_a_foreign_state_file_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "tune.json"
    state.write_text('{"something": "else"}')
    with pytest.raises(UserError, match="not a twinbench tune state file"):
        conditions.reset(state)


@pytest.mark.filesystem
def test_conditions_snapshot(tmp_path: Path) -> None:
    c = conditions.snapshot(fake_root(tmp_path))
    assert c["knobs"] == {"guest_halt_poll_ns": "0", "cpufreq_governor": None}
    assert c["tuned"] is False and c["virtual_machine"] is True
    assert c["loadavg"] == [0.5, 1.25, 2.0]


def test_describe_says_what_to_set() -> None:
    lines = conditions.describe({"guest_halt_poll_ns": "0", "cpufreq_governor": None})
    assert lines[0].startswith("guest_halt_poll_ns=0 (recommended 200000)")
    assert lines[1] == "cpufreq_governor: absent on this machine"


def test_parse_proc_stat_counts_busy_and_steal() -> None:
    text = ("cpu  100 20 30 400 50 6 4 10 0 0\n"
            "cpu0 50 10 15 200 25 3 2 5 0 0\n")
    busy, steal = conditions.parse_proc_stat(text, 100.0)
    assert busy == pytest.approx((100 + 20 + 30 + 6 + 4) / 100)
    assert steal == pytest.approx(0.1)
    with pytest.raises(ValueError):
        conditions.parse_proc_stat("intr 1 2 3\n", 100.0)


def test_background_is_the_busy_time_that_was_not_ours() -> None:
    before = conditions.CpuSample(busy_s=10.0, steal_s=1.0, wall_s=100.0)
    after = conditions.CpuSample(busy_s=13.0, steal_s=1.4, wall_s=102.0)
    # 2 CPUs x 2 s = 4 CPU-seconds; 3 busy, 2 of them ours: others took 1 (25%).
    bg, steal = conditions.background(before, after, ours_s=2.0, cpus=2)
    assert bg == pytest.approx(0.25) and steal == pytest.approx(0.1)
    # Our CPU can exceed the machine's count by a tick's rounding: never negative.
    assert conditions.background(before, after, ours_s=5.0, cpus=2)[0] == 0.0
    assert conditions.background(None, after, 1.0, 2) == (None, None)
    assert conditions.background(before, after, None, 2) == (None, pytest.approx(0.1))


def test_cpu_change_skips_restarted_and_vanished_processes() -> None:
    before = {"driver": 1.0, "zk/broker-0:10": 2.0, "zk/broker-1:11": 3.0}
    after = {"driver": 1.5, "zk/broker-0:10": 2.25, "zk/broker-1:12": 0.1,
             "zk/broker-2:13": math.nan}
    assert conditions.cpu_change(before, after) == pytest.approx(0.75)


def test_background_meter_keeps_a_summary() -> None:
    samples = iter([conditions.CpuSample(0.0, 0.0, 0.0), conditions.CpuSample(3.0, 0.2, 2.0)])
    ours = iter([{"driver": 0.0}, {"driver": 2.0}])

    class Meter(conditions.CpuMeter):
        def __init__(self) -> None:
            self.cpus = 2

        def sample(self) -> conditions.CpuSample | None:
            return next(samples)

    meter = conditions.BackgroundMeter(lambda: next(ours), Meter())
    assert meter.summary() is None
    bg, steal = meter.stop(meter.start())
    assert bg == pytest.approx(0.25) and steal == pytest.approx(0.05)
    assert meter.summary() == {"sessions": 1, "background_cpu_mean": pytest.approx(0.25),
                               "background_cpu_max": pytest.approx(0.25),
                               "steal_mean": pytest.approx(0.05)}
