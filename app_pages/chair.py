"""Chair's decision: once round 2 is closed, the bands whose raters' bands still share no value,
each with the anonymised panel of its last round; the study's chair chooses the band, says why
and signs with their own passphrase. The coordinator reads the same list without the form.

What the chair records is the chair's decision, never a rater's review: the registry grants the
band as decided by the chair, and agreement never counts it (fma_bands.study.chair)."""

from typing import Any

import streamlit as st

from app_pages import band_form
from app_pages.case_links import case_key
from app_pages.common import (
    escaped,
    for_signed_in,
    label_words,
    library,
    plain,
    proposals_visible,
    require_user,
    session,
    settings,
    show_knowledge,
    show_proposal,
)
from fma_bands.core.actions import sub_action
from fma_bands.core.band_text import DECLINED_BAND
from fma_bands.core.bands import to_file
from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.labels import (
    case_label,
    case_numbers,
    case_token,
    describe_band,
    knowledge_at,
    tool_names,
)
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.study import chair
from fma_bands.study.chair import Dispute
from fma_bands.study.rounds import count_bands

FLASH, ERRORS = "chair_flash", "chair_errors"


def form_key(dispute: Dispute, part: str) -> str:
    """The key of one of the band's widgets. The browser sees keys (as class names): the case
    is named by its token, never by the id (the chair is a rater)."""
    return f"chair:{case_token(dispute.vignette_id, case_key())}:{dispute.sub_action}:{part}"


@for_signed_in
def record(lib: Library, user: UserPublic, dispute: Dispute, label: str) -> None:
    """Sign the chair's decision from the form's fields (a callback: it runs before the page
    draws again); a refusal is said beside the form, which keeps all but the passphrase, or at
    the top of the page when the band is no longer listed (`label` names it there)."""
    vid, name = dispute.vignette_id, dispute.sub_action
    reason = st.session_state.get(form_key(dispute, "reason"), "")
    passphrase = st.session_state.get(form_key(dispute, "passphrase"), "")
    st.session_state[form_key(dispute, "passphrase")] = ""
    try:
        found = lib.band(vid, name)
        if found is None:
            raise FmaBandsError("this band is no longer in the study", field="band")
        orderables = found[0].orderables
        band, problem = band_form.band_of(
            sub_action(name), band_fields(dispute, orderables), orderables
        )
        if band is None:
            raise FmaBandsError(problem or "choose the band", field="band")
        with session() as s:
            chair.decide_band(
                s,
                lib,
                chair=user,
                passphrase=passphrase,
                folder=settings().attestations,
                vid=vid,
                name=name,
                band=to_file(band),
                reason=reason,
            )
    except FmaBandsError as exc:
        st.session_state[ERRORS] = {form_key(dispute, "form"): (label, exc.message)}
        return
    st.session_state[ERRORS] = {}
    st.session_state[FLASH] = "The chair's decision is signed and recorded."


def show_case(lib: Library, user: UserPublic, dispute: Dispute) -> None:
    """The case the chair decides, as its raters read it at the band's step, and the proposal
    where the study shows proposals: folded, since the chair may have rated it already."""
    vignette = lib.vignettes[dispute.vignette_id]
    step = sub_action(dispute.sub_action).step
    with st.expander("The case, as its raters read it at this step"):
        show_knowledge(vignette, knowledge_at(vignette, step))
        proposal = vignette.proposal(dispute.sub_action)
        if proposal is not None and proposals_visible(user):
            st.markdown("**Proposed band**")
            show_proposal(proposal, vignette)


def show_panel(lib: Library, user: UserPublic, dispute: Dispute) -> None:
    """The raters' bands and reasons of the band's last round, as Rater A, B, C."""
    vid, name = dispute.vignette_id, dispute.sub_action
    vignette = lib.vignettes[vid]
    with session() as s:
        found = chair.panel(s, lib, viewer=user, vid=vid, name=name)
        own = not user.is_coordinator and chair.rated(s, lib, viewer=user, vid=vid, name=name)
    st.markdown(f"**The raters' bands in round {found.round}, without their names**")
    if own:
        st.info(
            "You rated this band: one of these readings is yours. You may still decide it as "
            "the chair; the registry says on the band that the chair also rated it.",
            icon=":material/person:",
        )
    for entry in found.entries:
        band = (
            DECLINED_BAND if entry.band is None else describe_band(entry.band, tool_names(vignette))
        )
        said = f"{entry.letter}: {entry.verdict}, {band}"
        plain(said + (f"; reason: {entry.reason}" if entry.reason else "; no reason given"))
    for line in found.counts:
        st.caption(escaped(line))


def show_decided(lib: Library, dispute: Dispute) -> None:
    assert dispute.chaired is not None
    vignette = lib.vignettes[dispute.vignette_id]
    st.success(
        escaped(
            f"Decided by the study chair, {dispute.chaired.chair}, after round "
            f"{dispute.chaired.round}: {describe_band(dispute.decision.band, tool_names(vignette))}"
        ),
        icon=":material/gavel:",
    )
    plain(dispute.chaired.reason, label="The chair's reason")


def band_fields(dispute: Dispute, orderables: tuple[str, ...]) -> dict[str, Any]:
    """The band editor's fields (app_pages.band_form) as the form holds them."""
    names = band_form.field_names(sub_action(dispute.sub_action), orderables)
    return {name: st.session_state.get(form_key(dispute, f"band:{name}")) for name in names}


def band_editor(lib: Library, dispute: Dispute) -> None:
    """The band the chair chooses, with the review screen's choices for its kind: which answers,
    which values, which bounds, or each test's state."""
    action = sub_action(dispute.sub_action)
    vignette = lib.vignettes[dispute.vignette_id]

    def key(name: str) -> str:
        return form_key(dispute, f"band:{name}")

    st.markdown("**The band you choose**")
    if action.kind == "multilabel":
        names = tool_names(vignette)
        st.caption("For each test: not defensible, defensible to order, or required.")
        for test in vignette.orderables:
            st.segmented_control(
                label_words(names[test]),
                options=band_form.ORDER_STATES,
                key=key(band_form.order_field(test)),
            )
    elif action.kind == "boolean":
        st.radio(
            "Acceptable answers",
            options=list(band_form.BOOLEAN),
            horizontal=True,
            index=None,
            key=key("bool"),
        )
    elif action.forms != ("interval",):
        st.pills(
            "Acceptable values",
            options=list(action.domain()),
            selection_mode="multi",
            format_func=action.label_for,
            key=key("values"),
        )
    else:
        unit = f" ({action.unit})" if action.unit else ""
        low, high = st.columns(2)
        # No bounds on the fields: a bound outside the scale is said in words, not clamped.
        low.number_input(f"Lower bound{unit}", key=key("lo"), **band_form.BOUND_INPUT)
        high.number_input(f"Upper bound{unit}", key=key("hi"), **band_form.BOUND_INPUT)


def show_form(lib: Library, user: UserPublic, dispute: Dispute, label: str) -> None:
    with st.form(form_key(dispute, "form"), clear_on_submit=False):
        band_editor(lib, dispute)
        st.text_area("Why you chose it (required)", key=form_key(dispute, "reason"))
        st.text_input("Your passphrase", type="password", key=form_key(dispute, "passphrase"))
        st.form_submit_button(
            "Record the chair's decision",
            on_click=record,
            args=(lib, user, dispute, label),
            type="primary",
        )
    found = st.session_state.get(ERRORS, {}).get(form_key(dispute, "form"))
    if found:
        st.error(escaped(found[1]), icon=":material/error:")


user = require_user()
lib = library()
numbers = case_numbers(lib, case_key())
st.title("Chair's decision")
st.caption(
    "Once round 2 is closed, the study's chair may decide a band whose raters' bands still "
    "share no value. The decision is signed as the chair's, never as a rater's review, and it "
    "is never counted as agreement between raters."
)
try:
    with session() as s:
        named = chair.chair_name(s)
        disputes = chair.disputes(s, lib, viewer=user, folder=settings().attestations)
except AccessDenied as exc:
    # A sentence on its own here, not the end of "error: ...".
    st.info(escaped(exc.message[:1].upper() + exc.message[1:]), icon=":material/info:")
    st.stop()
if FLASH in st.session_state:
    st.success(escaped(st.session_state.pop(FLASH)), icon=":material/verified:")
deciding = user.role == "rater" and user.pseudonym == named
# A refusal of a band no longer listed (decided meanwhile, or no longer in dispute) has no form
# to stand beside: said here, once, so a decision never vanishes without a word.
listed = {form_key(d, "form") for d in disputes} if deciding else set()
for key, (label, message) in list(st.session_state.get(ERRORS, {}).items()):
    if key not in listed:
        st.error(
            escaped(f"{label}: the chair's decision was not recorded: {message}"),
            icon=":material/error:",
        )
        del st.session_state[ERRORS][key]
if not disputes:
    st.info(
        "No band awaits the chair yet: the chair decides only a band the registry refuses after "
        "round 2 because its raters' signed bands share no value, and none is refused so now. "
        "The registry reads the signed attestations: a band whose raters have not yet signed "
        "their reviews is not refused yet, and comes here once they sign if their bands share "
        "no value, however Study admin lists it now. A "
        "band short of its quorum, or with a disputed span, is one the coordinator's Study "
        'admin page counts as "Still disputed after round 2": more reviews or signatures '
        "settle it, not the chair."
    )
waiting = [d for d in disputes if d.chaired is None]
st.markdown(
    escaped(
        (
            f"The chair is {named}. "
            if named
            else "The policy names no chair yet (the coordinator names one on Study admin, "
            "under Registry policy). "
        )
        + f"Waiting for a decision: {count_bands(len(waiting))}; "
        f"decided: {count_bands(len(disputes) - len(waiting))}."
    )
)
for dispute in disputes:
    label = f"{case_label(numbers, dispute.vignette_id)} · {sub_action(dispute.sub_action).label}"
    if user.is_coordinator:
        label += f" ({dispute.vignette_id})"
    st.subheader(escaped(label))
    if dispute.chaired is not None:
        show_decided(lib, dispute)
    show_case(lib, user, dispute)
    show_panel(lib, user, dispute)
    if deciding and dispute.chaired is not None:
        # Decided: the form is there to change it, not to decide it again by mistake.
        with st.expander("Change this decision: a new one replaces it", icon=":material/edit:"):
            show_form(lib, user, dispute, label)
    elif deciding:
        show_form(lib, user, dispute, label)
