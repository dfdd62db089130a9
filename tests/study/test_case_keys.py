"""Case tokens (what a rater's address bar shows for a vignette) and case numbers ("Case 7 of
12") are keyed with a random secret of the study, kept in its store: no one can compute a token,
or tell which number is which case, from the vignette ids (ids carry their stratum), and another
study's tokens and numbers are other ones."""

import hashlib

import pytest

from fma_bands.core.labels import address, case_numbers, case_token, from_address, shelf
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study.case_keys import case_key
from tests.conftest import DEMO_VIGNETTES

VID = "demo_doc_border_01"
# Two keys drawn at random once (secrets.token_hex(32)) and fixed, so the test is the same on
# every run: the chance that two keys number 12 cases alike is 1 in 12! (about 2e-9).
KEY_A = bytes.fromhex("9e3b68548af9f647d176d73721adc5fcba583a858bc8a03afa261f9eeb494f14")
KEY_B = bytes.fromhex("1d02af0467ff409374375a92dc3ae91b0afc7015fc391909c4f744ed0441e2db")


def test_the_key_is_the_studys_own_and_tokens_find_their_case(engine, tmp_path):
    library = load_library([DEMO_VIGNETTES])
    with session_scope(engine) as s:
        key = case_key(s)
    with session_scope(engine) as s:
        assert case_key(s) == key  # made once, then read back
    assert len(key) == 32
    other = make_engine(f"sqlite:///{tmp_path / 'other.db'}")
    upgrade(other)
    with session_scope(other) as s:
        another = case_key(s)
    other.dispose()
    assert another != key
    token = case_token(VID, key)
    # Not the unsalted digest of the id, nor any token another study's key makes.
    assert token not in hashlib.sha256(VID.encode()).hexdigest()
    assert token != case_token(VID, another)
    rater = UserPublic(id=2, pseudonym="rater-01", role="rater")
    assert from_address(library, address(VID, "admit", key=key), rater, key=key) == VID
    assert from_address(library, address(VID, "admit", key=another), rater, key=key) is None
    assert len({case_token(v.id, key) for v in library}) == len(library)


def test_a_token_is_never_made_without_a_key():
    with pytest.raises(ValueError, match="secret key"):
        case_token(VID, b"")


def test_case_numbers_follow_the_studys_key_not_the_ids(engine, tmp_path):
    library = load_library([DEMO_VIGNETTES])
    assert len(library) == 12
    ids = sorted(library.vignettes)
    order_a, order_b = (sorted(ids, key=case_numbers(library, k).get) for k in (KEY_A, KEY_B))
    # Another study with the same vignette ids numbers them otherwise.
    assert order_a != order_b
    # Stable for one key: every page and every reload reads the same numbers.
    assert case_numbers(library, KEY_A) == case_numbers(load_library([DEMO_VIGNETTES]), KEY_A)
    assert sorted(case_numbers(library, KEY_A).values()) == list(range(1, 13))
    # Neither the order of the ids nor of their unkeyed digests, which anyone can compute.
    unkeyed = sorted(ids, key=lambda vid: hashlib.sha256(vid.encode()).hexdigest())
    for order in (order_a, order_b):
        assert order not in (ids, unkeyed)
    # The shelf follows the keyed numbers; nothing is numbered without a key.
    assert [v.id for v in shelf(library, key=KEY_A)] == order_a
    with pytest.raises(ValueError, match="secret key"):
        case_numbers(library, b"")
    # Two studies' stored keys: each its own numbering.
    other = make_engine(f"sqlite:///{tmp_path / 'other.db'}")
    upgrade(other)
    with session_scope(engine) as s, session_scope(other) as t:
        mine, theirs = case_numbers(library, case_key(s)), case_numbers(library, case_key(t))
    other.dispose()
    assert mine != theirs
