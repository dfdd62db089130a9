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
        ]
    )
    rows = covered_rows(signing, {"a": 1, "b": 2})
    assert [(r["case"], r["corrected"]) for r in rows] == [
        ("Case 1 of 2", "clause, disputed span"),
        ("Case 2 of 2", ""),
    ]
    assert rows[0]["band attested"] == "2 - emergent, 3 - urgent"
