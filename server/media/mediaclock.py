"""The broadcast media clock: one time base for audio, visemes, phrases and interrupts.

Media time is a sample position on a 48 kHz counter that starts at 0 when the show starts.
Wall or fused time appears only at the edges (logs, the browser time protocol); everything
inside the stage speaks samples.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

SAMPLE_RATE = 48_000
FRAME_SAMPLES = 960  # 20 ms, one Opus packet


@dataclass
class MediaClock:
    """Maps the local monotonic clock onto the 48 kHz broadcast sample counter.

    `epoch` is the monotonic time (seconds) of sample 0. `rate_ppm` skews the clock on purpose
    (a setting for tests of drift handling); it is 0 in production.
    """

    sample_rate: int = SAMPLE_RATE
    frame_samples: int = FRAME_SAMPLES
    epoch: float = field(default_factory=time.monotonic)
    rate_ppm: float = 0.0

    @property
    def _rate(self) -> float:
        return self.sample_rate * (1.0 + self.rate_ppm * 1e-6)

    def now_sample(self, now: float | None = None) -> int:
        """The sample position that is due now (floor)."""
        t = time.monotonic() if now is None else now
        return int((t - self.epoch) * self._rate)

    def time_of(self, sample: int) -> float:
        """Monotonic time at which `sample` is due."""
        return self.epoch + sample / self._rate

    def frame_index(self, sample: int) -> int:
        """Index of the 20 ms frame that holds `sample`."""
        return sample // self.frame_samples

    def frame_start(self, index: int) -> int:
        return index * self.frame_samples

    def samples(self, seconds: float) -> int:
        return round(seconds * self.sample_rate)

    def seconds(self, samples: int) -> float:
        return samples / self.sample_rate


def unwrap_rtp(rtp_timestamp: int, rtp_base: int, near_sample: int = 0) -> int:
    """Broadcast sample for an RTP timestamp: (rtp - base) mod 2**32, unwrapped near `near_sample`.

    RTP timestamps are 32-bit and wrap every ~24.9 h at 48 kHz; a show that runs all night
    crosses that, so the caller passes a recent sample position to pick the right lap.
    """
    lap = 1 << 32
    low = (rtp_timestamp - rtp_base) % lap
    # choose the lap that puts the result closest to near_sample
    k = round((near_sample - low) / lap)
    return low + k * lap
