"""gpuobs.names.gpu: the one NVML clock-event (throttle) reason table and its decoder/encoder."""

from __future__ import annotations

import pytest

from gpuobs.names import gpu as g


def test_decode_names_every_bit_set_in_bit_order() -> None:
    assert g.clock_event_reasons(0) == ()
    assert g.clock_event_reasons(0x1 | 0x40) == ("gpu_idle", "hw_thermal_slowdown")
    assert g.clock_event_reasons(float(0x8)) == ("hw_slowdown",)  # /api/history stores it as a float
    assert g.clock_event_reasons(0x200) == ()  # a bit this table does not know is not a reason
    every = sum(bit for bit, _ in g.CLOCK_EVENT_REASONS)
    assert g.clock_event_reasons(every) == tuple(reason for _, reason in g.CLOCK_EVENT_REASONS)


def test_encode_is_the_inverse_and_hw_reasons_are_table_entries() -> None:
    for bit, reason in g.CLOCK_EVENT_REASONS:
        assert g.clock_event_mask([reason]) == bit
        assert g.clock_event_reasons(bit) == (reason,)
    assert g.clock_event_mask({"sw_power_cap", "hw_power_brake_slowdown"}) == 0x84
    assert g.HW_SLOWDOWN_REASONS.issubset(reason for _, reason in g.CLOCK_EVENT_REASONS)
    with pytest.raises(KeyError):
        g.clock_event_mask(["too_hot"])
