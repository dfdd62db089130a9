"""The band registry: each band's provenance decided from the files, opening on a short table
(case, sub-action, status and band in words, raters, warnings as short tags) with filters, what
each status and warning means said once above it, and one band's full explanation on demand (its
cuts and whether it straddles each, every reason in words); which bands decide the harness's run
pairs (the coordinator's alone: raters never see these counts, they would bias the band); and
bands.yaml, downloaded or written to the export folder."""

from pathlib import Path
from typing import Literal

import streamlit as st

from app_pages.band_table import chosen_band, count_words
from app_pages.common import cache_key, escaped, library, require_user, session, settings
from fma_bands.core.actions import sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import case_numbers, describe_band, tool_names
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.evidence.export import (
    RULE_LABELS,
    band_cuts,
    cut_line,
    dump_bands,
    export_document,
    span_words,
    write_export,
)
from fma_bands.evidence.log import folder_digests
from fma_bands.evidence.overview import (
    ADJUDICATED_STATUS,
    COLUMNS,
    NOT_ADJUDICATED_STATUS,
    Note,
    RegistryRow,
    by_band,
    filtered,
    harness_words,
    reason_lines,
    registry_rows,
    study_notes,
    tags_of,
    warning_lines,
)
from fma_bands.evidence.provenance import Decision
from fma_bands.evidence.registry import Registry, decide
from fma_bands.study import audit
from fma_bands.study.case_keys import case_key
from fma_bands.study.enrolment import root_signer
from fma_bands.study.exports import record_export
from fma_bands.study.impact import (
    PAIRING_LABELS,
    REFERENCE,
    RunCounts,
    count_runs,
    read_runs,
    reviewed_impact,
)
from fma_bands.study.ledger import published_head
from fma_bands.study.state import study

ALL, NO_WARNING = "any", "no warning"


def notes(registry: Registry) -> None:
    """What every status reason, warning tag and harness note means, once for the study."""
    found = _notes(decided_key, registry)
    if not found:
        return
    lines = [f"- {escaped(n.text(len(registry.decisions)))}" for n in found]
    with st.container(border=True):
        st.markdown("**What the statuses and warnings below mean**\n\n" + "\n".join(lines))


# The table's columns in pixels: with the grid's column of row choices, together what the main
# column of a 1280-pixel window holds beside the open sidebar; what a column cannot show on one
# line wraps within it (band_table.row_height).
WIDTHS = {
    "case": 180,  # "12 · demo_triage_border_01" on one line: an id has no space to wrap at
    "sub-action": 140,
    "status": 145,
    "band": 140,
    "raters": 75,
    "warnings": 100,
}


@st.fragment
def overview(registry: Registry) -> None:
    # Filters, the table and the chosen band rerun only this part of the page.
    rows = _rows(cache_key(decided_key, sorted(numbers.items())), registry, numbers)
    statuses = {"all": None, ADJUDICATED_STATUS: True, NOT_ADJUDICATED_STATUS: False}
    left, middle, right = st.columns([2, 3, 2])
    with left:
        wanted = statuses[st.selectbox("Status", list(statuses))]
    with middle:
        names = list(dict.fromkeys(r.sub_action for r in rows))
        chosen = st.multiselect(
            "Sub-actions",
            names,
            placeholder="All sub-actions",
            format_func=lambda n: sub_action(n).label,
        )
    with right:
        tag = st.selectbox("Warning", [ALL, NO_WARNING, *tags_of(rows)])
    shown = filtered(
        rows,
        adjudicated=wanted,
        actions=chosen or None,
        tag={ALL: None, NO_WARNING: ""}.get(tag, tag),
    )
    st.caption(count_words(len(shown), len(rows), "to read its full explanation"))
    chosen_index = chosen_band(
        [r.cells() for r in shown],
        [r.title for r in shown],
        key="registry",
        columns=COLUMNS,
        widths=WIDTHS,
    )
    if chosen_index is not None:
        row = shown[chosen_index]
        with st.container(border=True):
            _decision(by_band(registry.decisions)[(row.vignette_id, row.sub_action)])


def _decision(d: Decision) -> None:
    """One band in full: its provenance, the band, who adjudicated it, its cuts, and every
    reason, warning and harness note in words."""
    label, icon = sub_action(d.sub_action).label, "verified" if d.adjudicated else "pending"
    vid, provenance = escaped(d.vignette_id), escaped(d.provenance)
    case = f"{numbers[d.vignette_id]} · {vid}" if d.vignette_id in numbers else vid
    st.markdown(f":material/{icon}: **{case}** · {label}: {provenance}")
    vignette = lib.vignettes.get(d.vignette_id)
    names = tool_names(vignette) if vignette is not None else {}
    st.markdown(f"Band: {escaped(describe_band(d.band, names))}")
    if d.disputed_span is not None:
        # What the export carries as disputed_span, as its reasoning says it.
        st.markdown(f"Disputed span: {escaped(span_words(d.disputed_span))}")
    if d.adjudicated_by and any(w.code == "chair_decision" for w in d.warnings):
        rated = ", ".join(v.pseudonym for v in d.verdicts)
        st.caption(
            f"Decided by the study chair, {escaped(d.adjudicated_by[0])}, where the raters' "
            f"bands shared no value (rated by {escaped(rated)})"
        )
    elif d.adjudicated_by:
        rule = RULE_LABELS[d.intersection_rule]
        st.caption(f"Adjudicated by {escaped(', '.join(d.adjudicated_by))} ({rule})")
    # Every named cut the export carries for this band (x_thresholds), the primary first.
    proposal = vignette.proposal(d.sub_action) if vignette is not None else None
    if cuts := band_cuts(proposal, d.band, signed=d.proposal_signed) if proposal else []:
        st.caption("Cuts: " + "; ".join(escaped(cut_line(cut)) for cut in cuts))
    lines = [
        # On a granted band a reason is a review set aside, not a refusal of the band.
        *(f"{REFUSED_WORDS[d.adjudicated]}: {line}" for line in reason_lines(d)),
        *(f"Warning: {line}" for line in warning_lines(d)),
    ]
    if words := harness_words(d.sub_action):
        lines.append(f"The harness: {words.sentence}")
    if lines:
        st.markdown("\n".join(f"- {escaped(line)}" for line in lines))


REFUSED_WORDS = {True: "Not counted", False: "Not adjudicated"}


@st.cache_data(show_spinner=False, max_entries=4)
def _runs(files: tuple[str, ...], state: tuple) -> RunCounts:
    # Kept as counts per action, not as runs: small to keep, and every band counts from them.
    return count_runs(read_runs(files))


def _count(value: int | None) -> str:
    return "not counted" if value is None else str(value)


def _stamp(path: Path) -> tuple[str, int | None, int | None]:
    """What says a trajectories file changed (its size and time), None for one it cannot stat."""
    try:
        found = path.stat()
    except OSError:
        return path.name, None, None
    return path.name, found.st_size, found.st_mtime_ns


@st.fragment
def impact(lib: Library, user: UserPublic) -> None:
    """Counted on the trajectories.json files in the settings' trajectories folder."""
    folder = settings().trajectories
    st.subheader("Which bands decide the harness's pairs")
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        st.caption(
            f"No trajectories.json files in {escaped(folder)} (FMA_BANDS_TRAJECTORIES): put the "
            "harness's run files there to see which bands decide most run pairs."
        )
        return
    try:
        # A link to nothing, or a file gone since the folder was listed, is named by the read.
        state = tuple(_stamp(p) for p in files)
        runs = _runs(tuple(str(p) for p in files), state)
        with session() as s:
            rows = reviewed_impact(s, lib, runs, viewer=user)
    except FmaBandsError as exc:
        st.error("A trajectories file cannot be read, so nothing is counted.")
        st.text(str(exc))
        return
    st.caption(
        f"{runs.runs} complete runs in {len(files)} file(s) of {escaped(folder)}: "
        f"{escaped(', '.join(Path(p).name for p in files))}. In band: runs whose action the band "
        "admits; pairs: pairs of those runs of one vignette, within one model and scaffold: "
        f"the reference condition ({REFERENCE}) with each counterfactual one, control arms "
        "left out, as the harness's within-range flip rate pairs them, where the runs hold "
        "both; else replicate runs of one condition, the noise floor ('pairs of' says which). "
        "Across the threshold: of those "
        "pairs, the ones on opposite sides of it (what a within-range flip needs). For the "
        "proposal, the consensus of every rater who gave a band (as Agreement shows it: not "
        "the band granted above where the policy sets a rater's review aside) and that "
        "consensus widened by its disputed span; the bands deciding most pairs first. Not "
        "counted: no threshold, or a band the harness cannot score."
    )
    st.dataframe(
        [
            {
                "vignette": r.vignette_id,
                "sub-action": sub_action(r.sub_action).label,
                "band": r.band,
                "pairs of": PAIRING_LABELS[r.pairing],
                "runs": r.runs,
                "in band": _count(r.runs_in_band),
                "pairs in band": _count(r.pairs_in_band),
                "pairs across the threshold": _count(r.pairs_across_threshold),
            }
            for r in rows
        ],
        hide_index=True,
        width="stretch",
    )


user = require_user("coordinator")
lib, folder, export_dir = library(), settings().attestations, settings().export_dir
st.title("Band registry")


# Decided again whenever what the registry reads changes: every vignette's digests (its
# clinical context and each whole proposal) and the SHA-256 of every file in attestations/.
# Content alone decides, never a file's name or time. A resource: read-only, shared rather
# than copied.
# The folder must be this study's log and still hold every record the store has published.
# Under the SHA-256 of those digests (common.cache_key).
@st.cache_resource(show_spinner=False, max_entries=4)
def _decided(key: str, study_id: str | None, since: tuple | None) -> Registry:
    return decide(lib, folder, study=study_id, since=since)


# The table's rows and the study's notes, made once per decision and set of case numbers (a
# filter, a page of the table or a chosen band reruns the fragment, not these).
@st.cache_resource(show_spinner=False, max_entries=4)
def _rows(key: str, _registry: Registry, _numbers: dict[str, int]) -> list[RegistryRow]:
    return registry_rows(_registry, lib, _numbers)


@st.cache_resource(show_spinner=False, max_entries=4)
def _notes(key: str, _registry: Registry) -> list[Note]:
    return study_notes(_registry.decisions)


with session() as s:
    pinned, published = study(s).study_id, published_head(s)
    # The case numbers raters read ("Case 3 of 12"), beside each id in the table.
    numbers = case_numbers(lib, case_key(s))
try:
    decided_key = cache_key(lib.digests, folder_digests(folder), pinned, published)
    registry = _decided(decided_key, pinned, published)
except FmaBandsError as exc:
    st.error(f"The attestations folder cannot be read: {escaped(exc)}")
    st.stop()
if not registry.valid:
    st.error(
        "The attestations folder does not verify, so no band is clinician-adjudicated and the "
        "export is refused. `fma-bands verify` lists the same problems:"
    )
    for problem in registry.problems:
        st.error(escaped(str(problem)))
granted = sum(d.adjudicated for d in registry.decisions)
st.caption(
    f"Decided from the vignette files and the attestations folder alone, under the policy: "
    f"quorum {registry.policy.quorum}, scope {registry.policy.scope}. "
    f"{granted} of {len(registry.decisions)} bands are clinician-adjudicated."
)
for problem in registry.strays:
    st.warning(escaped(f"{problem} (not part of the study's log: it changes nothing)"))
if registry.head[1]:
    st.caption(
        f"Study {escaped(registry.study)}; the log's head: record {registry.head[0]}, "
        f"{escaped(registry.head[1])}."
    )

notes(registry)
overview(registry)
impact(lib, user)
st.subheader("Export bands.yaml")
if not lib.ok:
    st.error("The vignette files have problems; fix them before exporting.")
    st.stop()
if not registry.valid:
    st.info("Nothing can be exported until the attestations folder verifies again (above).")
    st.stop()
st.caption(
    f"The export states the study and the head it was decided from (record {registry.head[0]}). "
    "With your passphrase, the study's root key also signs that head, so an editor can check "
    "it against the folder (fma-bands verify --export bands.yaml)."
)
if refused := st.session_state.pop("export:refused", None):
    # A wrong passphrase is tried once, not again on every rerun: the field is emptied.
    st.session_state["export:passphrase"] = ""
    st.error(escaped(refused))
# A form: the passphrase counts once submitted, so no export is made while the screen says one
# thing and the field another (a download clicked before the field was left).
with st.form("export:sign"):
    head_passphrase = st.text_input(
        # A label is read aloud as written: the command's words in the help beside it.
        "Your passphrase, to sign the exported head",
        help="An editor's `fma-bands verify --export` needs a signed head.",
        type="password",
        key="export:passphrase",
    )
    st.form_submit_button("Sign the exported head")
head_signer = None
if head_passphrase:
    try:
        with session() as s:
            root = root_signer(s, user, head_passphrase)
    except FmaBandsError as exc:
        st.session_state["export:refused"] = exc.message
        st.rerun()
    head_signer = (root.keyid, root.private_key)
    st.success(
        "The exports below sign their head with the study's root key. A file downloaded or "
        "written before is as it was: download or write it again to have it signed."
    )
else:
    st.caption(
        "The exports below are not signed: they state the head they were decided from, which "
        "`fma-bands verify --since` checks, but `verify --export` refuses an unsigned head."
    )


def audit_head() -> tuple[int, str] | None:
    """The audit log's head as the export is made: the export carries it (audit verify --export)."""
    with session() as s:
        return audit.head(s)


def exported(how: Literal["written", "downloaded"], where: str | None = None) -> None:
    """The export recorded in the audit log, after its audit head was read."""
    with session() as s:
        record_export(
            s,
            user,
            how=how,
            head=registry.head,
            signed=head_signer is not None,
            bands=len(registry.decisions),
            adjudicated=granted,
            where=where,
        )


def downloaded() -> str:
    text = dump_bands(
        export_document(
            lib, folder, registry=registry, head_signer=head_signer, audit_head=audit_head()
        )
    )
    exported("downloaded")
    return text


st.download_button(
    "Download bands.yaml",
    # Written when the button is pressed, not on every rerun.
    data=downloaded,
    file_name="bands.yaml",
    mime="application/yaml",
    on_click="ignore",
)
# A download says nothing once pressed: what the file holds is said beside the button.
st.caption(
    f"All {len(registry.decisions)} bands, {granted} clinician-adjudicated; head "
    f"{'signed' if head_signer else 'not signed'}. Saved with your browser's downloads."
)
# The folder's whole path: a relative one names the server's working folder, which the
# coordinator cannot see from the browser.
if st.button(f"Write bands.yaml to the export folder, {escaped(Path(export_dir).resolve())}"):
    try:
        written = write_export(
            lib,
            folder,
            export_dir,
            registry=registry,
            head_signer=head_signer,
            audit_head=audit_head(),
        )
        exported("written", str(Path(written).resolve()))
        st.success(f"Wrote {escaped(Path(written).resolve())}")
    except FmaBandsError as exc:
        st.error(escaped(exc))
