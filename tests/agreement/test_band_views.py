"""What the Agreement page says of one band: a disputed span only beside a consensus."""

from fma_bands.agreement.metrics import band_agreements
from fma_bands.agreement.views import band_row, band_view
from tests.agreement.build import rate


def test_a_band_without_consensus_has_no_disputed_span_only_what_some_admit():
    # Two raters whose follow-up bands share no day: nothing agreed, so nothing is disputed
    # beyond an agreement; what each admits is said as what some, not all, admit.
    [apart] = band_agreements(
        [
            rate("v1", "followup_days", "rater-1", {"min": 1, "max": 7}),
            rate("v1", "followup_days", "rater-2", {"min": 14, "max": 30}),
        ]
    )
    row, view = band_row(0, apart), band_view(apart, ())
    assert (row.outcome, row.consensus, row.disputed) == ("no consensus", "none", "none")
    assert view.consensus is None
    assert view.disputed == "Admitted by some raters, by none of them all: 1 to 7 and 14 to 30 days"
    # Beside a consensus, the disputed span is what it always was.
    [met] = band_agreements(
        [
            rate("v1", "followup_days", "rater-1", {"min": 1, "max": 14}),
            rate("v1", "followup_days", "rater-2", {"min": 7, "max": 30}),
        ]
    )
    assert band_row(0, met).disputed == "1 to 6 and 15 to 30 days"
    assert band_view(met, ()).disputed == "Disputed span: 1 to 6 and 15 to 30 days"


def test_an_order_every_rater_finds_defensible_is_disputed_as_required_by_some():
    # Both raters would accept LFT; one requires it. "Admitted by some" would say the opposite.
    [orders] = band_agreements(
        [
            rate(
                "v1",
                "orders",
                "rater-1",
                {"required": ["lft", "lipase"], "defensible": ["lft", "lipase", "cbc", "ct"]},
            ),
            rate(
                "v1",
                "orders",
                "rater-2",
                {"required": ["lipase"], "defensible": ["lft", "lipase", "cbc"]},
            ),
        ]
    )
    names = {"lft": "LFT", "lipase": "Lipase", "cbc": "CBC", "ct": "CT abdomen"}
    assert band_row(0, orders, names).disputed == (
        "required by some raters, not all: LFT; defensible to some raters, not all: CT abdomen"
    )
