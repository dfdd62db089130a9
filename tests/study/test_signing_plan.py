"""What the Sign attestation page lists of a signature's reviews (fma_bands/study/signing_plan.py):
each band by its case, and what an AMEND corrected besides the band, since that is signed too."""

from fma_bands.study.signing_plan import SigningPlan, covered_rows


def entry(vid: str, verdict: str, **more) -> dict:
    return {
        "vignette_id": vid,
        "sub_action": "esi_acuity",
        "verdict": verdict,
        "attested_band": [2, 3],
        "round": 1,
        "revision": 1,
        "origin": "app",
    } | more


def test_the_sign_page_says_what_each_amend_corrected():
    signing = SigningPlan(
        reviews=[
            entry(
                "a",
                "AMEND",
                proposed_band=[2, 3],
                corrections={"clause": "New.", "disputed_span": None},
            ),
            entry("b", "ACCEPT"),
            entry("c", "AMEND", proposed_band=[2]),
            entry("d", "AMEND", proposed_band=[2, 3]),  # kept the band and every text
            entry("e", "AMEND", proposed_band=[3], corrections={"clause": "New."}),
        ],
        carried=["c/esi_acuity"],
    )
    rows = covered_rows(signing, {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    # Every cell says something in words: no empty column, no tick box that looks editable.
    assert [(r["case"], r["corrected"], r["already signed"], r["origin"]) for r in rows] == [
        (
            "Case 1 of 5",
            "clause, disputed span",
            "no, new or changed since signed",
            "reviewed in the app",
        ),
        ("Case 2 of 5", "nothing", "no, new or changed since signed", "reviewed in the app"),
        ("Case 3 of 5", "the band", "yes, unchanged", "reviewed in the app"),
        (
            "Case 4 of 5",
            "nothing: the reason says what is wrong",
            "no, new or changed since signed",
            "reviewed in the app",
        ),
        (
            "Case 5 of 5",
            "the band, clause",
            "no, new or changed since signed",
            "reviewed in the app",
        ),
    ]
    assert rows[0]["band attested"] == "2 - emergent, 3 - urgent"
    # Which round each review is of: a round-2 review is said so, whatever its revision.
    assert [r["round"] for r in rows] == [1] * 5
    again = covered_rows(SigningPlan(reviews=[entry("a", "ACCEPT", round=2, revision=3)]), {})
    assert (again[0]["round"], again[0]["revision"]) == (2, 3)
