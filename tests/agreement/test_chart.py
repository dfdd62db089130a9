"""The alpha chart: its axis runs from -1 to 1, widened to hold an interval that reaches below
-1 whole (one did on the demo, and the chart drew nothing but clipped labels)."""

from fma_bands.agreement.chart import alpha_chart, axis_start


def point(alpha: float, lo: float | None, hi: float | None) -> dict:
    return {"scope": "pooled", "alpha": alpha, "lo": lo, "hi": hi, "bands": 9, "reading": "x"}


def domain(points: list[dict]) -> list:
    chart = alpha_chart(points)
    assert chart is not None
    spec = chart.to_dict()
    return [layer["encoding"]["x"]["scale"]["domain"] for layer in spec["layer"][:2]]


def test_the_axis_is_minus_one_to_one_while_every_value_is_on_it():
    assert domain([point(0.5, 0.2, 0.8), point(-0.9, -1.0, 0.1)]) == [[-1.0, 1], [-1.0, 1]]


def test_an_interval_below_minus_one_widens_the_axis_to_hold_it():
    found = [point(0.12, -3.109, 0.946)]
    assert domain(found) == [[-4.0, 1], [-4.0, 1]]
    assert axis_start([point(-1.5, None, None)]) == -2.0  # an alpha without an interval too
    assert alpha_chart([]) is None
