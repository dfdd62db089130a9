"""The alpha chart: its axis runs from -1 to 1 whatever the figures; an alpha or an interval
reaching below -1 is drawn to -1 and marked there (one on the demo reached -2,521, and an axis
widened to hold it drew every other alpha as one dot)."""

from fma_bands.agreement.chart import LOWEST, alpha_chart, on_axis


def point(alpha: float, lo: float | None, hi: float | None) -> dict:
    return {"scope": "pooled", "alpha": alpha, "lo": lo, "hi": hi, "bands": 9, "reading": "x"}


def layers(points: list[dict]) -> list[dict]:
    chart = alpha_chart(points)
    assert chart is not None
    return chart.to_dict()["layer"]


def test_the_axis_is_minus_one_to_one_whatever_the_figures():
    for found in ([point(0.5, 0.2, 0.8)], [point(0.734, -2521.368, 1.0), point(-1.5, None, None)]):
        drawn = layers(found)
        assert [layer["encoding"]["x"]["scale"]["domain"] for layer in drawn[:3]] == [
            [LOWEST, 1]
        ] * 3


def test_what_reaches_below_minus_one_is_drawn_to_it_and_marked():
    assert on_axis(point(0.734, -2521.368, 1.0)) == {
        **point(0.734, -2521.368, 1.0),
        "computed": 0.734,
        "lo_shown": -1.0,
        "hi_shown": 1.0,
        "below": True,
        "lowest": -1.0,
    }
    below = on_axis(point(-1.5, None, None))
    assert (below["alpha"], below["computed"], below["lo_shown"], below["below"]) == (
        -1.0,
        -1.5,
        None,
        True,
    )
    inside = on_axis(point(0.5, -1.0, 0.8))
    assert (inside["alpha"], inside["lo_shown"], inside["below"]) == (0.5, -1.0, False)
    # The marks read the values held at -1; the tooltip the values as computed.
    interval, alpha, marker, _ = layers([point(0.734, -2521.368, 1.0)])
    assert interval["encoding"]["x"]["field"] == "lo_shown"
    assert alpha["encoding"]["x"]["field"] == "alpha"
    assert marker["mark"]["shape"] == "triangle-left"
    assert {"field": "lo", "type": "quantitative", "title": "interval from"} in alpha["encoding"][
        "tooltip"
    ]
    assert alpha_chart([]) is None


def test_an_interval_wholly_below_minus_one_is_drawn_at_it():
    drawn = on_axis(point(-3.0, -9.0, -2.0))
    assert (drawn["alpha"], drawn["lo_shown"], drawn["hi_shown"], drawn["below"]) == (
        -1.0,
        -1.0,
        -1.0,
        True,
    )
    interval, *_ = layers([point(-3.0, -9.0, -2.0)])
    assert interval["encoding"]["x2"]["field"] == "hi_shown"
