"""The coordinator's desk: the study's rounds (round 2 opened here, once confirmed; a round is
closed on Raters' progress), the review mode, the registry policy (quorum and specialty scope,
saved to attestations/policy.yaml), who reviews what, and raters' progress.

The rounds and the assignment are fragments: choosing bands or raters reruns that part only."""

from typing import Any

import streamlit as st

from app_pages.common import escaped, for_signed_in, library, require_user, session, settings
from app_pages.due_dates import due_date_form
from fma_bands.core.actions import SUB_ACTIONS, sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import case_label, case_numbers
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.evidence.policy import Policy
from fma_bands.study.assignment import change, study_bands
from fma_bands.study.case_keys import case_key
from fma_bands.study.chair import on_record as chair_decisions
from fma_bands.study.coverage import coverage, explain, problem_bands, study_quorum
from fma_bands.study.governance import policy_in_force, set_policy
from fma_bands.study.queries import awaiting, awaiting_words
from fma_bands.study.rounds import (
    REASONS,
    Band,
    Candidate,
    band_label,
    band_labels,
    chair_words,
    choose,
    count_bands,
    left_out_of_round_two,
    open_round,
    policy_chair,
    reason_sentence,
    round_two_candidates,
)
from fma_bands.study.rounds import state as round_state
from fma_bands.study.state import set_mode, study
from fma_bands.study.store_state import per_state
from fma_bands.study.users import list_users

MODE_LABELS = {
    "review": "review: raters see the proposal, source, clause and reasoning",
    "blind": "blind: raters write each band without seeing the proposal (no ACCEPT)",
}


# Review rounds --------------------------------------------------------------------------------

BY = {
    "all": "every candidate someone reviewed",
    "reason": "by reason",
    "sub_action": "by sub-action",
}


@st.fragment
def rounds(user: UserPublic) -> None:
    """Where the study stands, and opening round 2 once round 1 is closed."""
    lib = library()
    with session() as s:
        now = round_state(s, viewer=user)
        closed_first = now.number == 1 and now.phase == "closed"
        candidates = (
            round_two_candidates(s, lib, viewer=user, round=now.number)
            if now.phase == "closed"
            else []
        )
        # Round 1 is frozen once closed: its candidates are read once per state of the store,
        # not on every run of this page through round 2 (round_state authorised the viewer).
        left_out = per_state(
            s,
            ("left out of round 2", lib.digests),
            lambda: left_out_of_round_two(s, lib, viewer=user),
        )
        after_last = now.number > 1 and now.phase == "closed"
        chaired = chair_decisions(s) if after_last else {}
        chair = policy_chair(s) if after_last else None
        labels = band_labels(s, lib)
        numbers = case_numbers(lib, case_key(s))
    st.subheader("Review rounds")
    if flash := st.session_state.pop("round_flash", None):
        st.success(flash)
    st.markdown(f"Round {now.number} is **{now.phase}**.")
    if now.phase == "open":
        who = (
            "Raters review blind to each other."
            if now.number == 1
            else "Each band's raters see round 1 anonymised (Rater A, B, ...) and keep or revise "
            "their band; they see no one's round-2 review."
        )
        st.caption(
            f"{who} The round is closed on Raters' progress, once confirmed; a closed round is "
            "frozen (no edit, no import) and never reopened."
        )
        st.page_link(
            "app_pages/progress.py",
            label=f"Close round {now.number} on Raters' progress",
            icon=":material/lock:",
        )
    elif not closed_first:
        st.info(f"Round {now.number} is closed: its reviews are frozen and no round follows it.")
    if now.bands:
        # In case order, then by step, as the candidates were listed when the round opened.
        step = {name: i for i, name in enumerate(SUB_ACTIONS)}
        bands = sorted(
            now.bands,
            key=lambda b: (numbers.get(b.vignette_id, 0), step.get(b.sub_action, len(step))),
        )
        rows = [
            {"band": _label(labels, (b.vignette_id, b.sub_action)), "raters": ", ".join(b.raters)}
            for b in bands
        ]
        st.dataframe(rows, hide_index=True)
        st.caption(f"The bands re-reviewed in round {now.number}, and who reviews each.")
    if closed_first:
        _open_round_two(user, candidates, labels)
    elif now.phase == "closed":
        _still_in_dispute(now.number, candidates, labels, chaired, chair)
    if left_out:
        st.markdown(
            f"**Round 1's candidates not chosen for round 2**: {count_bands(len(left_out))}"
        )
        st.caption(LEFT_OUT)
        _candidate_table(left_out, labels)


def _candidate_table(
    candidates: list[Candidate],
    labels: dict[Band, str],
    chaired: dict[Band, str] | None = None,
    chair: str | None = None,
) -> None:
    """The candidates, each with its reasons in a few words and what some but not all of its
    raters admit (its disputed span when they meet in a consensus), with `chaired` the chair's
    decision signed for each (after round 2), and under them each reason's sentence."""
    rows: list[dict[str, object]] = []
    for c in candidates:
        row: dict[str, object] = {
            "band": _label(labels, c.band),
            "raters with a band": c.raters_words(),
            "why": c.short(),
        }
        if chaired is not None:
            # Before the long column, so that it is in sight in a laptop's window.
            signer = chaired.get(c.band)
            row[CHAIR_COLUMN] = chair_words(c, signer, chair)
        row[SOME_ADMIT] = c.disputed or ""
        rows.append(row)
    st.dataframe(
        rows,
        hide_index=True,
        width="stretch",
        # The band and what some admit whole: the values of a 0 to 100 score are long.
        column_config={
            "band": st.column_config.TextColumn(width="large"),
            SOME_ADMIT: st.column_config.TextColumn(width="large"),
        },
    )
    seen = [code for code in REASONS if any(code in c.reasons for c in candidates)]
    final = any(c.final for c in candidates)
    st.markdown("\n".join(f"- **{REASONS[c].short}**: {reason_sentence(c, final)}" for c in seen))


def _still_in_dispute(
    number: int,
    candidates: list[Candidate],
    labels: dict[Band, str],
    chaired: dict[Band, str],
    chair: str | None,
) -> None:
    """After the last round: the bands still in dispute, as `fma-bands round show` lists them,
    each with the chair's decision signed for it, if any."""
    if not candidates:
        st.caption(
            f"No band re-reviewed in round {number} is left unsettled. A band is "
            "clinician-adjudicated only once its raters' signed reviews meet the quorum: the "
            "Band registry says which are."
        )
        return
    st.markdown(f"**Still disputed after round {number}**: {count_bands(len(candidates))}")
    st.caption(STILL_IN_DISPUTE)
    decided = sum(c.band in chaired for c in candidates)
    if decided:
        st.caption(
            f"The study's chair has signed a decision for {count_bands(decided)} of them (the "
            'column "chair\'s decision"): the raters still disagree, and the Band registry '
            "says whether it grants the band on the chair's decision."
        )
    _candidate_table(candidates, labels, chaired, chair)


CHAIR_COLUMN = "chair's decision"
ASSIGNED_NOT_REVIEWED = (
    "This is about who is assigned. Whether each band's reviews reach the quorum (a DECLINE "
    "counts for nothing) is on Raters' progress, under Bands against the quorum."
)
# Not "disputed span": a band whose raters share no value has no consensus to dispute beyond.
SOME_ADMIT = "admitted by some raters, not all"

# What becomes of a band still in dispute: the registry, not this list, says what is granted.
STILL_IN_DISPUTE = (
    "What the Band registry then grants, once the raters have signed: a band whose raters meet "
    "in a consensus, with its disputed span marked; a band whose raters' bands share no value, "
    "once the study's chair has decided it (Chair's decision), as the chair's; a band short of "
    "its quorum, only with more signed reviews."
)


LEFT_OUT = (
    "Not re-reviewed in round 2, and no round follows it: the Band registry decides each from "
    "round 1's signed reviews, as round 1 left it (a band whose raters share no value, once the "
    "study's chair has decided it)."
)


def _label(labels: dict[Band, str], band: Band) -> str:
    """A band's label; a band no longer in the vignettes by its id and sub-action's name."""
    return labels.get(band) or f"{band[0]} · {sub_action(band[1]).label}"


@for_signed_in
def _choose_group(candidates: list[Candidate]) -> None:
    """The chosen group of candidates becomes round 2's bands (the coordinator may then add or
    remove any band by hand)."""
    state = st.session_state
    by = state.get("round2:by", "all")
    reasons = (state.get("round2:reasons") or []) if by == "reason" else []
    kinds = (state.get("round2:subs") or []) if by == "sub_action" else []
    if by != "all" and not (reasons or kinds):
        return  # nothing chosen yet in the group: the bands stay as they are
    state["round2:bands"] = choose(candidates, reasons=reasons, sub_actions=kinds)


def _open_round_two(user: UserPublic, candidates: list[Candidate], labels: dict[Band, str]) -> None:
    """Round 2 for the bands the coordinator chooses: by default every candidate of round 1
    someone reviewed, or a group of them (by reason, by sub-action), or any band by hand."""
    lib = library()
    st.markdown("**Open round 2** for the bands still in dispute")
    state = st.session_state
    if "round2:bands" not in state:
        state["round2:bands"] = choose(candidates)
    if candidates:
        unreviewed = sum("not_reviewed" in c.reasons for c in candidates)
        # The bands someone reviewed are the ones to re-review; those no one did are counted
        # apart, so the first figure is not swollen by bands round 2 would have nothing to show.
        st.caption(
            f"{count_bands(len(candidates) - unreviewed).capitalize()} to re-review after round "
            "1: those the registry would refuse, and those whose raters meet in a consensus "
            "with a disputed span, as the Agreement page shows them (where the policy requires "
            "the specialty scope, over the raters in scope only, as the registry counts them). "
            "The last column says what some but not all of each band's raters admit."
            + (
                f" Besides, {count_bands(unreviewed)} no one reviewed in round 1: listed, "
                "not chosen (round 2 would have no bands to show), unless you choose them."
                if unreviewed
                else ""
            )
        )
        _candidate_table(candidates, labels)
        _groups(candidates)
    else:
        st.caption(
            "No band needs round 2 after round 1: every band has a consensus without a disputed "
            "span, its quorum and a rater in scope. Choose bands to re-review, if any."
        )
    every = list(labels)
    st.multiselect(
        "Bands for round 2",
        every,
        format_func=lambda band: _label(labels, band),
        key="round2:bands",
    )
    chosen = state.get("round2:bands") or []
    st.caption(
        f"{count_bands(len(chosen)).capitalize()} chosen; add or remove any band here. Their "
        "raters see round 1's bands as Rater A, B, C (never a pseudonym), how many admit each "
        "value and the round-1 reasons without names, then keep or revise their band, with a "
        "reason. Round 1 stays the reliability figure."
    )
    if left_out := len({c.band for c in candidates} - set(chosen)):
        # Said before the choice is made, not after: no round follows round 2.
        st.warning(
            f"{count_bands(left_out).capitalize()} listed above "
            f"{'is' if left_out == 1 else 'are'} not chosen. No round follows round 2: a band "
            "not chosen now is not reviewed again, and the Band registry decides it from "
            "round 1's signed reviews."
        )
    sure = st.checkbox("I understand: open round 2 for these bands now", key="round_two_sure")
    if st.button("Open round 2", type="primary", disabled=not (sure and chosen)):
        try:
            with session() as s:
                opened = open_round(
                    s, lib, actor=user, number=2, folder=settings().attestations, bands=chosen
                )
        except FmaBandsError as exc:
            st.error(escaped(exc.message))
            return
        opened_for = count_bands(len(opened.bands))
        st.session_state.round_flash = (
            f"Round 2 opened for {opened_for}: each is in its raters' queues now."
        )
        st.rerun(scope="app")


def _groups(candidates: list[Candidate]) -> None:
    """The choice of a group of candidates: every one, those of some reasons, or those of some
    sub-actions; each choice fills "Bands for round 2" at once."""
    seen = [code for code in REASONS if any(code in c.reasons for c in candidates)]
    st.radio(
        "Choose the candidates",
        list(BY),
        format_func=BY.get,
        horizontal=True,
        key="round2:by",
        on_change=_choose_group,
        args=(candidates,),
    )
    by = st.session_state.get("round2:by", "all")
    if by == "reason":
        count = {code: sum(code in c.reasons for c in candidates) for code in seen}
        st.multiselect(
            "Reasons",
            seen,
            format_func=lambda code: f"{REASONS[code].short} ({count_bands(count[code])})",
            key="round2:reasons",
            on_change=_choose_group,
            args=(candidates,),
        )
    elif by == "sub_action":
        # By name, as a person looks one up (the candidates follow the cases' numbers).
        kinds = sorted({c.sub_action for c in candidates}, key=lambda name: sub_action(name).label)
        count = {name: sum(c.sub_action == name for c in candidates) for name in kinds}
        st.multiselect(
            "Sub-actions",
            kinds,
            format_func=lambda name: f"{sub_action(name).label} ({count_bands(count[name])})",
            key="round2:subs",
            on_change=_choose_group,
            args=(candidates,),
        )


# The registry policy --------------------------------------------------------------------------


def _saved_policy() -> Policy:
    """The policy in force; without one, the default, and a warning that nothing counts yet."""
    with session() as s:
        found = policy_in_force(s)
    if found is None:
        st.warning("No policy is signed yet. Until one is, nothing is clinician-adjudicated.")
        return Policy()
    return found


# Who reviews what -----------------------------------------------------------------------------


@for_signed_in
def _change(lib: Library, user: UserPublic, assigned: bool) -> None:
    """Add the chosen rater to the chosen bands (`assigned`), or remove them."""
    state = st.session_state
    if not state.get("assign:rater"):
        state["assign:outcome"] = ("The assignment was not changed:", "choose a rater")
        return
    try:
        with session() as s:
            made = change(
                s,
                lib,
                actor=user,
                rater=state["assign:rater"],
                bands=[tuple(b.split(":", 1)) for b in state.get("assign:bands") or []],
                vignettes=state.get("assign:vignettes") or [],
                sub_actions=state.get("assign:subs") or [],
                assigned=assigned,
            )
    except FmaBandsError as exc:
        state["assign:outcome"] = ("The assignment was not changed:", exc.message)
        return
    # Done: the next change starts from an empty form, so it never carries this one's bands
    # over to another rater unseen.
    state["assign:rater"] = None
    for key in ("assign:bands", "assign:subs", "assign:vignettes"):
        state[key] = []
    verb = "added to" if assigned else "removed from"
    state["assign:outcome"] = (
        "Assignment changed:",
        "\n".join(f"{m.rater} {verb} {m.target}" for m in made),
    )


@st.fragment
def assignment(lib: Library, user: UserPublic) -> None:
    """The bands that cannot be adjudicated as assigned, every band's raters, and the form that
    changes an assignment."""
    with session() as s:
        quorum = study_quorum(s)
        rows = coverage(s, lib, viewer=user, quorum=quorum)
        raters = [r.pseudonym for r in list_users(s, role="rater")]
        numbers = case_numbers(lib, case_key(s))
    st.subheader("Who reviews what")
    st.caption(
        "By default each band goes to every rater whose signed specialty covers its "
        "sub-action's scope (every rater where the harness has no scope rule). Add or remove "
        "raters below; the latest change covering a band decides it."
    )
    if outcome := st.session_state.pop("assign:outcome", None):
        # The app's own heading and, in the same box, the details, which name raters and
        # bands: escaped, so nothing in them is markup.
        said = st.success if outcome[0].startswith("Assignment changed") else st.error
        said(f"{outcome[0]}  \n{escaped(outcome[1])}")
    # Everything here by case number, as every page lists cases (the bands of a case by step).
    last = len(numbers) + 1
    in_order = sorted(lib.vignettes, key=lambda vid: (numbers.get(vid, last), vid))
    rank = {vid: i for i, vid in enumerate(in_order)}
    steps = {band: i for i, band in enumerate(study_bands(lib))}

    def place(band: tuple[str, str]) -> tuple[int, str, int]:
        return (rank.get(band[0], last), band[0], steps.get(band, 0))

    rows = sorted(rows, key=lambda r: place((r.vignette_id, r.sub_action)))
    flagged = problem_bands(rows)
    rule = f"the quorum of {quorum}" if quorum else "a quorum (no policy saved yet)"
    if flagged:
        st.warning(
            f"{len(flagged)} of {len(rows)} bands cannot be adjudicated as assigned: too few "
            f"activated raters for {rule}, or too few whose specialty covers the scope (the "
            "why column says which).",
            icon=":material/warning:",
        )
        st.dataframe(
            [_row(r, numbers) | {"why": explain(r)} for r in flagged],
            hide_index=True,
            width="stretch",
        )
    else:
        st.success(f"Every band has enough activated raters assigned for {rule}, in scope.")
        # Not the same question as the reviews': a DECLINE counts for nothing there.
        st.caption(ASSIGNED_NOT_REVIEWED)
    with st.expander(f"Every band's raters ({len(rows)} bands)"):
        st.dataframe([_row(r, numbers) for r in rows], hide_index=True, width="stretch")
    with st.form("assign"):
        st.selectbox("Rater", raters, index=None, key="assign:rater")
        every = [f"{vid}:{name}" for vid, name in sorted(study_bands(lib), key=place)]
        st.multiselect(
            "Bands",
            every,
            format_func=lambda text: band_label(numbers, tuple(text.split(":", 1))),
            key="assign:bands",
        )
        st.multiselect(
            "Every band of these sub-actions",
            list(SUB_ACTIONS),
            format_func=lambda name: sub_action(name).label,
            key="assign:subs",
        )
        st.multiselect(
            "Every band of these vignettes",
            in_order,
            format_func=lambda vid: f"{case_label(numbers, vid)} · {vid}",
            key="assign:vignettes",
        )
        add, remove = st.columns(2)
        add.form_submit_button("Add the rater", on_click=_change, args=(lib, user, True))
        remove.form_submit_button("Remove the rater", on_click=_change, args=(lib, user, False))


def _row(r: Any, numbers: dict[str, int]) -> dict[str, Any]:
    return {
        "case": case_label(numbers, r.vignette_id),
        "vignette": r.vignette_id,
        "sub-action": sub_action(r.sub_action).label,
        "assigned raters": ", ".join(r.raters) or "nobody",
        "activated": r.able,
        # How many of its assigned raters its sub-action's scope rule admits (the harness gives
        # some sub-actions none): a count alone read as a flag.
        "in scope": (
            "no scope rule"
            if r.in_scope is None
            else f"{r.in_scope} rater{'' if r.in_scope == 1 else 's'}"
        ),
    }


# The page -------------------------------------------------------------------------------------

user = require_user("coordinator")
lib = library()
with session() as s:
    current = study(s)
    enrolled_raters = len(list_users(s, role="rater"))
    waiting = awaiting(s, user)

st.title("Study admin")
where = escaped(settings().vignettes)
vignettes = f"{len(lib)} vignette{'' if len(lib) == 1 else 's'}"
enrolled = f"{enrolled_raters} rater{'' if enrolled_raters == 1 else 's'} enrolled"
st.caption(f"{vignettes} from the folder {where}; {enrolled}.")
if lib.problems:
    problems = f"{len(lib.problems)} problem{'' if len(lib.problems) == 1 else 's'}"
    with st.expander(f"{problems} in the vignette files", icon="⚠️"):
        st.code("\n".join(str(p) for p in lib.problems), language=None)
if waiting:
    # The coordinator's landing page: a rater's question is not left to be found on Queries.
    st.info(f"{awaiting_words(waiting, 'coordinator')}.", icon=":material/forum:")
    st.page_link(
        "app_pages/queries.py", label="Read and answer the queries", icon=":material/forum:"
    )

rounds(user)
due_date_form(user)

st.subheader("Review mode")
mode = st.radio(
    "Review mode",
    list(MODE_LABELS),
    index=list(MODE_LABELS).index(current.mode),
    format_func=MODE_LABELS.get,
)
# Changed only by the button under a new choice, never by the choice alone.
if mode != current.mode and st.button("Change the review mode"):
    with session() as s:
        set_mode(s, actor=user, mode=mode)
    st.rerun()

st.subheader("Registry policy")
policy = _saved_policy()
if signed := st.session_state.pop("policy:signed", None):
    st.session_state["policy:passphrase"] = ""  # before the field is drawn again
    st.success(signed)  # our own words and numbers: no markup from anyone
with st.form("policy"):
    left, right = st.columns(2)
    quorum = left.number_input(
        "Quorum: attesting adjudicators a band needs", min_value=1, value=policy.quorum, step=1
    )
    scope = right.radio(
        "Specialty scope rule",
        ["warn", "require"],
        index=["warn", "require"].index(policy.scope),
        horizontal=True,
    )
    with session() as s:
        raters = [u.pseudonym for u in list_users(s, "rater")]
    no_chair = "No chair"
    choices = [no_chair, *raters] + ([policy.chair] if policy.chair not in (None, *raters) else [])
    chair_choice = st.selectbox(
        "Chair: the rater who may decide a band still in dispute after round 2",
        choices,
        index=choices.index(policy.chair) if policy.chair else 0,
        help="The chair's decision is signed with the chair's own key and is never counted as "
        "agreement between raters. A chair who also rated a band they decide is told so, and "
        "the registry says so on the band (chair_rated): a rater who reviewed none of the "
        "disputed bands decides them most independently.",
    )
    chair = None if chair_choice == no_chair else chair_choice
    root_passphrase = st.text_input(
        "Your passphrase (it unlocks the study's root key, which signs the policy)",
        type="password",
        key="policy:passphrase",
    )
    sign_policy = st.form_submit_button("Sign the policy")
if sign_policy:
    try:
        with session() as s:
            set_policy(
                s,
                settings().attestations,
                actor=user,
                passphrase=root_passphrase,
                quorum=int(quorum),
                scope=scope,
                chair=chair,
            )
            in_force = policy_in_force(s)
    except FmaBandsError as exc:
        st.error(escaped(exc.message))
    else:
        wanted = Policy(quorum=int(quorum), scope=scope, chair=chair)
        named = f", chair {chair}" if chair else ", no chair"
        st.session_state["policy:signed"] = (
            f"Policy signed into the study's log: quorum {int(quorum)}, scope {scope}{named}."
            if in_force == wanted
            else "Policy signed; it takes effect once the steward approves it."
        )
        st.rerun()

assignment(lib, user)

st.subheader("Progress by rater")
if enrolled_raters:
    # One place for it: the counts read every rater's reviews, a cost every click here would pay.
    st.page_link(
        "app_pages/progress.py",
        label="Each rater's submitted, draft and stale reviews, by round, on Raters' progress",
        icon=":material/groups:",
    )
else:
    st.write("No rater is enrolled yet: enrol them on the Raters page.")
