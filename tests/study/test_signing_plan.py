"""What the Sign attestation page lists of a signature's reviews (fma_bands/study/signing_plan.py):
each band by its case, and what an AMEND corrected besides the band, since that is signed too."""

from fma_bands.study.signing_plan import SigningPlan, covered_rows


def entry(vid: str, verdict: str, **more) -> dict:
    return {
        "vignette_id": vid,
        "sub_action": "esi_acuity",
        "verdict": verdict,
        "attested_band": [2, 3],
        "revision": 1,
        "origin": "app",
    } | more


def test_the_sign_page_says_what_each_amend_corrected():
    signing = SigningPlan(
        reviews=[
            entry("a", "AMEND", corrections={"clause": "New.", "disputed_span": None}),
            entry("b", "ACCEPT"),
            entry("c", "AMEND"),
        ],
        carried=["c/esi_acuity"],
    )
    rows = covered_rows(signing, {"a": 1, "b": 2, "c": 3})
    # Every cell says something in words: no empty column, no tick box that looks editable.
    assert [(r["case"], r["corrected"], r["as signed before"], r["origin"]) for r in rows] == [
        ("Case 1 of 3", "clause, disputed span", "no: new or changed", "reviewed in the app"),
        ("Case 2 of 3", "nothing", "no: new or changed", "reviewed in the app"),
        ("Case 3 of 3", "the band only", "yes, unchanged", "reviewed in the app"),
    ]
    assert rows[0]["band attested"] == "2 - emergent, 3 - urgent"
