import numpy as np

from server.bench.unchanged import as_unattacked, median_moved, more_outside


def test_a_couple_more_onsets_outside_the_window_among_hundreds_is_chance():
    base = [0.0] * 654
    attacked = [0.0] * 649 + [30.0, 30.0]
    assert 0.2 < more_outside(attacked, base) < 0.3
    assert as_unattacked(attacked, base) == "holds"
    # ten in a hundred outside, against none, is no chance
    assert more_outside([0.0] * 90 + [40.0] * 10, [0.0] * 100) < 0.001
    assert as_unattacked([0.0] * 90 + [40.0] * 10, [0.0] * 100) == "fails"


def test_hundreds_of_onsets_are_judged_by_their_p95():
    base = [(-1) ** k * 5.0 for k in range(300)]
    assert as_unattacked([v * 1.5 for v in base], base) == "holds"  # |p95| 7.5 against 5
    assert as_unattacked([v * 2.5 for v in base], base) == "fails"  # 12.5: the spread grew


def test_a_dozen_line_starts_are_judged_by_their_median_not_their_largest():
    base = [-3.0, 2.0, 5.0, -6.0, 1.0, 0.0, 4.0, -2.0, 3.0, -1.0, 2.0, 6.0, -4.0, 1.0]
    one_late = [*base[:-1], 20.0]  # a line a frame late: the p95 of 14 would read 20
    assert as_unattacked(one_late, base) == "holds"
    assert as_unattacked([v + 8.0 for v in base], base) == "fails"  # all of them later
    assert as_unattacked([], base) == "—"


def test_a_median_moved_by_a_frame_is_chance_where_the_line_starts_spread_that_wide():
    # 35 line starts a phase, each a vsync either side of the sound (±8.3 ms) or on it, plus
    # noise: a few more falling late in one phase part the medians by more than SLACK_MS
    rng = np.random.default_rng(1)

    def phase(early: int, on: int, late: int) -> list[float]:
        starts = [-8.3] * early + [0.0] * on + [8.3] * late
        return list(np.array(starts) + rng.normal(0, 1.5, len(starts)))

    base, other = phase(8, 12, 15), phase(6, 10, 19)
    assert abs(np.median(other) - np.median(base)) > 5.0
    assert median_moved(other, base) >= 0.01
    assert as_unattacked(other, base) == "holds"
    # the same move where the starts are tight is the attack's
    tight = list(rng.normal(0, 1, 35))
    assert median_moved([v + 5.5 for v in tight], tight) < 0.001
    assert as_unattacked([v + 5.5 for v in tight], tight) == "fails"
    # seeded: the same figures give the same verdict twice
    assert median_moved(other, base) == median_moved(other, base)
