"""The band picture's small-domain axis names every value, whole, however narrow the column:
Vega hides overlapping labels by default (ESI 2 and 4 vanished) and clips what runs past the
chart's edge ("5 - non-urgent")."""

from fma_bands.agreement.picture import Row, band_spec
from fma_bands.core.actions import sub_action
from fma_bands.core.bands import parse_band


def test_every_small_domain_label_is_drawn_whole():
    rows = [Row("proposal", parse_band("esi_acuity", {"min": 2, "max": 3}))]
    spec = band_spec("esi_acuity", rows)
    axis = spec["encoding"]["x"]["axis"]
    assert axis["labelOverlap"] is False  # never thinned out
    assert axis["labelAngle"] != 0  # slanted, so neighbours never run together
    labels = [sub_action("esi_acuity").label_for(v) for v in range(1, 6)]
    assert spec["encoding"]["x"]["sort"] == labels
    # The last label leans past the last cell: the padding on the right holds it.
    longest = max(len(label.replace(" - ", " ")) for label in labels)
    assert spec["padding"]["right"] >= 5 * longest
    assert axis["labelLimit"] >= 10 * longest


def test_a_yes_no_band_names_its_two_answers_level():
    """Two labels, each over half the chart, cannot run together: level and full size, never
    slanted small."""
    spec = band_spec("admit", [Row("proposal", parse_band("admit", [True]))])
    axis = spec["encoding"]["x"]["axis"]
    assert spec["encoding"]["x"]["sort"] == ["no", "yes"]
    assert (axis["labelAngle"], axis["labelAlign"], axis["labelFontSize"]) == (0, "center", 12)
    assert axis["labelOverlap"] is False


def test_orders_are_drawn_in_the_vignettes_order_of_its_tests():
    """The review form lists a vignette's tests in its own order: the picture beside it too,
    not by name."""
    orderables = ("ecg", "cxr", "ddimer")
    band = parse_band(
        "orders", {"required": ["ecg"], "defensible": ["ecg", "cxr"]}, orderables=orderables
    )
    names = {"ecg": "ECG", "cxr": "Chest X-ray", "ddimer": "D-dimer"}
    spec = band_spec("orders", [Row("proposal", band)], orderables=orderables, names=names)
    assert spec["encoding"]["y"]["sort"] == ["ECG", "Chest X-ray", "D-dimer"]
