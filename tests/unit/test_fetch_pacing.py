"""The fetch wait rule: short while records flow, long after a quiet spell, short again at
the first record."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from patchstream.config.settings import KafkaSettings
from patchstream.streams.fetch_pacing import FetchPacer, pace, pacer_for


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_wait_lengthens_after_a_quiet_spell_and_shortens_at_the_first_record() -> None:
    clock = Clock()
    pacer = FetchPacer(active_ms=50, idle_ms=500, idle_after_s=30.0, clock=clock)
    assert pacer.next_wait_ms(received=False) == 50  # a consumer starts short
    clock.now += 29.9
    assert pacer.next_wait_ms(received=False) == 50
    clock.now += 0.2
    assert pacer.next_wait_ms(received=False) == 500
    clock.now += 600
    assert pacer.next_wait_ms(received=False) == 500
    assert pacer.next_wait_ms(received=True) == 50
    clock.now += 10
    assert pacer.next_wait_ms(received=False) == 50  # quiet, but not for long yet
    assert pacer.answers == 6 and pacer.wait_ms == 50


def test_an_idle_wait_no_longer_than_the_active_one_turns_pacing_off() -> None:
    clock = Clock()
    pacer = FetchPacer(active_ms=200, idle_ms=100, idle_after_s=1.0, clock=clock)
    clock.now += 3600
    assert pacer.next_wait_ms(received=False) == 200


def test_the_settings_build_the_pacer() -> None:
    pacer = pacer_for(KafkaSettings(fetch_max_wait_ms=40, idle_fetch_wait_ms=900,
                                    idle_after_s=12))  # fmt: skip
    assert (pacer.active_ms, pacer.idle_ms, pacer.idle_after_s) == (40, 900, 12)


def test_a_consumer_without_the_known_fetcher_keeps_its_fixed_wait() -> None:
    class Stranger:
        _fetcher = object()

    assert pace(Stranger(), FetchPacer(50, 500, 30)) is False


@pytest.mark.parametrize("field", ["idle_fetch_wait_ms", "idle_after_s"])
@pytest.mark.parametrize("value", [0, -1, "soon"])
def test_the_settings_refuse_a_wait_or_a_quiet_spell_that_is_not_positive(
    field: str, value: object
) -> None:
    with pytest.raises(ValidationError):
        KafkaSettings(**{field: value})
