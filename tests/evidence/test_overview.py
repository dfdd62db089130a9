"""The registry as an overview (issue 24, point 6): one short row per band in words, what many
bands share said once for the study (demo accounts by name, what the harness cannot check yet, each
reason), filters, and one band's reasons and warnings as sentences beside their codes."""

from fma_bands.core.bands import band_from_values, parse_band
from fma_bands.core.labels import HARNESS_WORDS, REASON_WORDS, WARNING_WORDS
from fma_bands.core.vignettes import load_library
from fma_bands.evidence.overview import (
    COLUMNS,
    filtered,
    reason_lines,
    registry_rows,
    status,
    study_notes,
    tags_of,
    warning_lines,
)
from fma_bands.evidence.policy import Policy
from fma_bands.evidence.provenance import ADJUDICATED, REASONS, WARNINGS, Decision, Reason
from fma_bands.evidence.registry import Registry
from tests.conftest import DEMO_VIGNETTES


def demo_account(who: str) -> Reason:
    return Reason("demo_account", f"{WARNINGS['demo_account']}: {who}")


def granted(name: str, values: list, warnings: list[Reason]) -> Decision:
    """A band of demo_med_border_01 granted to both demo raters."""
    return Decision(
        "demo_med_border_01",
        name,
        ADJUDICATED,
        band=parse_band(name, values),
        adjudicated_by=("rater-01", "rater-02"),
        warnings=warnings,
    )


def decisions() -> list[Decision]:
    """Three bands of the demo: two granted to demo accounts (one a yes/no band), one not."""
    return [
        granted("analgesia_tier", [1], [demo_account("rater-01"), demo_account("rater-02")]),
        granted("controlled_substance_caution", [True], [demo_account("rater-01")]),
        Decision(
            "demo_order_border_01",
            "orders",
            provenance="author-derived",
            band=parse_band("orders", ["ecg", "troponin"], required=["ecg"]),
            reasons=[Reason("no_attestation", REASONS["no_attestation"])],
        ),
    ]


def registry() -> Registry:
    return Registry(decisions(), Policy(1, "warn"))


def test_each_band_is_one_row_in_words():
    rows = registry_rows(registry(), load_library([DEMO_VIGNETTES]))
    assert [tuple(r.cells()) for r in rows] == [COLUMNS] * 3
    first, boolean, orders = (r.cells() for r in rows)
    assert first == {
        "case": "demo_med_border_01",
        "sub-action": "Analgesia tier",
        "status": "clinician-adjudicated",
        "band": "1 - NSAID",
        "raters": "rater-01, rater-02",
        "warnings": "demo account",
    }
    assert boolean["warnings"] == "demo account, harness cannot check yet"
    assert orders["status"] == "not adjudicated: no signed review"
    # Not adjudicated: the band is the proposal's, and says so.
    assert orders["band"] == "as proposed: required: ECG; also defensible: Troponin"
    assert orders["raters"] == "none"
    assert rows[0].title == "demo_med_border_01 · Analgesia tier"


def test_a_band_granted_with_a_disputed_span_says_it_in_the_table():
    # Raters who met on one value of a wide dispute: the table must not read as settled.
    met = Decision(
        "demo_med_border_01",
        "followup_days",
        ADJUDICATED,
        band=parse_band("followup_days", {"min": 60, "max": 60}),
        disputed_span=band_from_values("followup_days", [*range(40, 60), *range(61, 86)]),
        adjudicated_by=("rater-01", "rater-02"),
    )
    [row] = registry_rows(Registry([met], Policy(1, "warn")), load_library([DEMO_VIGNETTES]))
    assert row.cells()["band"] == "60 days; disputed span: 40 to 59 and 61 to 85 days"
    # With the study's case numbers, each case also by the number raters read it by.
    numbered = registry_rows(registry(), load_library([DEMO_VIGNETTES]), {"demo_med_border_01": 7})
    assert numbered[0].cells()["case"] == "7 · demo_med_border_01"
    assert numbered[0].title == "7 · demo_med_border_01 · Analgesia tier"
    # In the order of the numbers, each case's bands in the registry's order.
    ordered = registry_rows(
        registry(),
        load_library([DEMO_VIGNETTES]),
        {"demo_med_border_01": 7, "demo_order_border_01": 2},
    )
    assert [(r.number, r.sub_action) for r in ordered] == [
        (2, "orders"),
        (7, "analgesia_tier"),
        (7, "controlled_substance_caution"),
    ]


def test_what_many_bands_share_is_said_once_with_whom_and_how_many():
    notes = study_notes(decisions())
    texts = [n.text(3) for n in notes]
    assert texts == [
        f"No signed review, 1 of 3 bands: {REASON_WORDS['no_attestation'].sentence} "
        "(code: no_attestation)",
        f"Demo account (rater-01, rater-02), 2 of 3 bands: "
        f"{WARNING_WORDS['demo_account'].sentence} (code: demo_account)",
        f"Harness cannot check yet: yes/no bands, 1 of 3 bands: "
        f"{HARNESS_WORDS['boolean'].sentence}",
        f"Harness cannot check yet: orders bands, 1 of 3 bands: "
        f"{HARNESS_WORDS['multilabel'].sentence}",
    ]
    assert "every band" in notes[1].text(2)


def test_a_bands_reasons_and_warnings_are_sentences_beside_their_codes():
    granted, _, refused = decisions()
    assert reason_lines(refused) == [
        f"{REASON_WORDS['no_attestation'].sentence} (code: no_attestation)"
    ]
    # One line per code, naming each account it holds for.
    assert warning_lines(granted) == [
        f"{WARNING_WORDS['demo_account'].sentence} (code: demo_account) Details: rater-01; "
        "rater-02."
    ]
    assert status(refused) == "not adjudicated: no signed review"
    # A message that is not the code's standard text is kept whole as the detail.
    odd = Decision("v", "admit", "author-derived", band=granted.band)
    odd.reasons.append(Reason("malformed", "rater-01: attested band unreadable: bad"))
    [line] = reason_lines(odd)
    assert line.endswith("(code: malformed) Details: rater-01: attested band unreadable: bad.")


def test_the_filters_keep_what_is_asked_for():
    rows = registry_rows(registry(), load_library([DEMO_VIGNETTES]))
    assert tags_of(rows) == ["demo account", "harness cannot check yet"]
    assert [r.sub_action for r in filtered(rows, adjudicated=False)] == ["orders"]
    assert len(filtered(rows, adjudicated=True)) == 2
    assert [r.sub_action for r in filtered(rows, actions=["analgesia_tier"])] == ["analgesia_tier"]
    assert [r.sub_action for r in filtered(rows, tag="harness cannot check yet")] == [
        "controlled_substance_caution",
        "orders",
    ]
    assert filtered(rows, tag="") == []  # every band carries a tag
    assert filtered(rows) == rows
