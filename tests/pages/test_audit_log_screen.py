"""The audit log's details column (app_pages/audit_log_screen.py): an event's record in words."""

from app_pages.audit_log_screen import details, who_words


def test_details_name_sub_actions_by_their_labels_and_nested_records_in_brackets():
    said = details(
        {
            "round": 2,
            "bands": [
                {"vignette_id": "demo_doc_inter_01", "sub_action": "admit", "raters": ["r1", "r2"]}
            ],
            "band": "demo_doc_inter_01/followup_days",
            "reason": None,
            "sub_action": "not_a_sub_action",
        }
    )
    assert said == (
        "round: 2; bands: (vignette id: demo_doc_inter_01; sub-action: Admit to hospital "
        "(admit); raters: r1, r2); band: demo_doc_inter_01 · Follow-up interval (days); "
        "sub-action: not_a_sub_action"
    )
    assert "{" not in said and "'" not in said  # never a Python record


def test_yes_and_no_are_words():
    assert details({"throttled": False, "demo": True, "count": 0}) == (
        "throttled: no; demo: yes; count: 0"
    )


def test_who_is_a_person_or_says_what_else_acted():
    people = {"rater-01", "cli"}  # an account may be named like what else acts
    assert [who_words(a, people) for a in ("rater-01", None, "demo", "cli")] == [
        "rater-01",
        "(the system, or no one signed in)",
        "(fma-bands demo)",
        "cli",
    ]
    assert who_words("cli", set()) == "(the command line)"
    # A refused passphrase names an account it does not prove; it may be typed at sign-in or
    # by someone signed in (to sign), so the words say neither.
    assert who_words(None, people, "passphrase_failed") == (
        "(a refused passphrase, no one's proven act: the details name the account)"
    )
    assert who_words(None, people, "activation_failed").startswith("(a refused activation")
    assert who_words(None, people, "vignettes_synced") == "(the system)"
    assert who_words("rater-01", people, "passphrase_failed") == "rater-01"


def test_a_long_list_is_cut_in_the_grid_and_whole_on_demand():
    payload = {"added": [f"v{n}" for n in range(10)]}
    assert details(payload) == "added: v0, v1, v2, v3, v4, v5, v6, v7 …"
    assert details(payload, whole=True) == "added: " + ", ".join(f"v{n}" for n in range(10))


def test_an_unknown_name_is_said_as_its_keyed_hash_in_words():
    said = details({"unknown_name_hmac": "9786d104de6e84e3", "where": "sign-in"})
    assert said == "unknown name (keyed hash): 9786d104de6e84e3; where: sign-in"
