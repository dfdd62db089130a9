"""Signing ready on the demo, under streamlit's AppTest: a rater of a study `fma-bands demo` made
signs from the Sign attestation page with nothing done by the coordinator (the demo recorded
every rater's identity), and a rater of a real study whose identity is not recorded is told what
is missing and whom to ask, not merely refused."""

import json
import os

import pytest
from click.testing import CliRunner
from sqlmodel import col, select

from fma_bands.cli import cli
from fma_bands.core.actions import SUB_ACTIONS, sub_action
from fma_bands.core.labels import case_label, case_numbers
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import make_engine, session_scope
from fma_bands.store.models import LogRecord
from fma_bands.study.assignment import load as load_assignments
from fma_bands.study.case_keys import case_key
from fma_bands.study.reviews import ReviewForm, save
from fma_bands.study.users import require_user
from tests import page_helpers
from tests.conftest import DEMO_VIGNETTES, ROOT
from tests.page_helpers import GOOD_ANSWERS, as_read, click, open_app, title

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)
ORDERS = ("demo_order_clear_01", "orders")
MISSING = (
    "You cannot sign yet: your private identity (full name, qualifications, registration, "
    "institution and email) is not recorded. Ask the study's coordinator to record it on the "
    'page "Rater identities"; you can sign as soon as it is, with nothing else to do.'
)


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """A study made by `fma-bands demo`, which the app under test reads; its URL."""
    for name in [n for n in os.environ if n.startswith("FMA_BANDS_")]:
        monkeypatch.delenv(name)
    url = f"sqlite:///{tmp_path / 'fma-bands.db'}"
    settings = {
        "FMA_BANDS_DATABASE_URL": url,
        "FMA_BANDS_VIGNETTES": str(DEMO_VIGNETTES),
        "FMA_BANDS_ATTESTATIONS": str(tmp_path / "attestations"),
        "FMA_BANDS_IDENTITY_KEY": str(tmp_path / "fma-bands-identity.key"),
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(ROOT)
    made = CliRunner().invoke(cli, ["demo"], prog_name="fma-bands", catch_exceptions=False)
    assert made.exit_code == 0, made.output
    return url


def sign(at, passphrase: str):
    for box in at.checkbox:
        if box.key.startswith("declare:"):
            box.check()
    at.text_input(key="attest:passphrase").input(passphrase)
    return click(at, "Sign attestation")


def test_a_demo_rater_signs_with_nothing_done_by_the_coordinator(demo):
    library = load_library([DEMO_VIGNETTES])
    engine = make_engine(demo)
    try:
        with session_scope(engine) as s:
            rater = require_user(s, "rater-01")
            numbers = case_numbers(library, case_key(s))
            bands = sorted(load_assignments(s).bands_of(library, "rater-01"), reverse=True)
            for band in bands:
                form = ReviewForm(verdict="ACCEPT", answers=GOOD_ANSWERS)
                save(s, library, rater, *band, form, expected_version=0, submit=True)
    finally:
        engine.dispose()
    assert ORDERS in bands  # a band of tests, whose names the table must show
    at = open_app(rater, "app_pages/attest.py")
    assert title(at) == "Sign your attestation"
    assert not at.warning, [w.value for w in at.warning]
    [button] = [b for b in at.button if b.label == "Sign attestation"]
    assert not button.disabled
    # The reviews it covers, in case order and then in the protocol's order of sub-actions,
    # every band in words with the vignette's test names (never a raw key such as xray_ankle).
    [covered] = [f.value for f in at.dataframe if "band attested" in f.value.columns]
    order = {name: i for i, name in enumerate(SUB_ACTIONS)}
    expected = sorted(bands, key=lambda b: (numbers[b[0]], order[b[1]]))
    assert list(covered["case"]) == [case_label(numbers, vid) for vid, _ in expected]
    assert list(covered["sub-action"]) == [sub_action(name).label for _, name in expected]
    [orders] = [
        row["band attested"]
        for row, band in zip(covered.to_dict("records"), expected, strict=True)
        if band == ORDERS
    ]
    assert orders == "required: X-ray ankle; nothing else defensible"
    # Every column set in pixels, together within a 1280-pixel window beside the sidebar (the
    # last ones were off its right edge), and rows tall enough for the longest cell whole.
    [grid] = [f for f in at.dataframe if "band attested" in f.value.columns]
    widths = {n: c["width"] for n, c in json.loads(grid.proto.columns).items() if "width" in c}
    assert set(widths) == set(covered.columns) and sum(widths.values()) <= 780
    longest = max(
        -(-len(str(text)) // int(widths[name] * 0.13))
        for row in covered.to_dict("records")
        for name, text in row.items()
    )
    assert grid.proto.row_height >= 20 * max(3, longest) + 16
    # Every row the signature covers is in sight: no scrolling inside the table.
    assert len(covered) > 12
    assert "scroll inside it for the rest" not in " ".join(c.value for c in at.caption)
    sign(at, "rater-01-demo")
    assert "Signed. Your signature and your receipt:" in [s.value for s in at.success]
    assert not at.error, [e.value for e in at.error]
    # The key's fingerprint and the head are whole, in code blocks that wrap: never cut off.
    codes = {c.value: c.proto.wrap_lines for c in at.code}
    with session_scope(engine := make_engine(demo)) as s:
        head = s.exec(select(LogRecord).order_by(col(LogRecord.sequence).desc())).first()
        assert head is not None
        assert codes.get(f"{head.sequence}:{head.digest}") is True, codes
    engine.dispose()
    assert len(codes) == 2 and all(codes.values()), codes
    fields = [as_read(m.value) for m in at.markdown]
    assert "**Printed name:** rater-01" in fields
    assert "**Meaning:** adjudication" in fields
    assert "**Key fingerprint**" in fields and "**Head after signing**" in fields


def test_a_rater_without_a_recorded_identity_is_told_what_is_missing_and_whom_to_ask(study):
    study.save(study.rater, page_helpers.DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    at = open_app(study.rater, "app_pages/attest.py")
    assert [as_read(w.value) for w in at.warning] == [MISSING]
    [button] = [b for b in at.button if b.label == "Sign attestation"]
    assert button.disabled
