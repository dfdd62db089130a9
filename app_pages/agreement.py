"""Agreement between raters: Krippendorff's alpha per sub-action and pooled, and every band's
raters side by side with the consensus (intersection rule). Raters see it once the phase closes."""

import altair as alt
import streamlit as st

from app_pages.common import engine, library, require_user, session
from fma_bands.actions import sub_action
from fma_bands.agreement import METRICS, POOLED, most_disputed_first
from fma_bands.bands import band_from_values, describe
from fma_bands.errors import AccessDenied
from fma_bands.picture import Row, band_chart
from fma_bands.ratings import reading, reviews_fingerprint, study_ratings, study_report
from fma_bands.study import study

user = require_user()
lib = library()
st.title("Agreement")
with session() as s:
    phase = study(s).phase
    fingerprint = reviews_fingerprint(s)
if not user.is_coordinator and phase == "open":
    st.info("Agreement between raters is shown once the coordinator closes the review phase.")
    st.stop()

metric = st.segmented_control(
    "Metric",
    METRICS,
    default="band",
    format_func={
        "band": "band (Jaccard, primary)",
        "membership": "membership (nominal)",
        "endpoints": "endpoints (interval)",
        "verdict": "verdict (nominal)",
    }.get,
)
metric = metric or "band"


@st.cache_data(show_spinner=False, max_entries=8)
def _report(url: str, fingerprint: tuple, files: tuple, viewer: str):
    # Cached until a review changes (fingerprint) or a vignette file changes (files).
    with session() as s:
        report = study_report(s, lib, viewer=user)
        ratings = study_ratings(s, lib, viewer=user)
    return report, ratings


try:
    with st.spinner("Computing alpha with a 1000-resample bootstrap…"):
        report, ratings = _report(
            str(engine().url), fingerprint, tuple(lib.vignettes), user.pseudonym
        )
except AccessDenied as exc:
    st.info(str(exc))
    st.stop()

if not ratings:
    st.info("No submitted review yet: there is nothing to compare.")
    st.stop()


def _number(value: float | None) -> str:
    # Undefined stays undefined: never 0, 1 or nan on screen.
    return "undefined" if value is None else f"{value:.3f}"


rows, alphas = [], []
for scope, by_metric in report.metrics.items():
    a = by_metric.get(metric)
    if a is None:
        continue
    alphas.append(a)
    rows.append(
        {
            "sub-action": "all sub-actions (pooled)"
            if scope == POOLED
            else sub_action(scope).label,
            "alpha": _number(a.alpha),
            "95% interval": "not computed"
            if a.ci_low is None
            else f"{_number(a.ci_low)} to {_number(a.ci_high)}",
            "units": a.n_units,
            "raters": a.n_raters,
            "pairable values": a.n_pairable,
            "reading": reading(a.alpha, a.reason),
            "P(alpha < 0.800)": _number(a.p_below_0800),
            "P(alpha < 0.667)": _number(a.p_below_0667),
            "interval method": a.method or "not computed",
        }
    )
st.subheader(f"Krippendorff's alpha: {metric}")
st.caption(
    "Computed over bands with two or more raters whose verdict is not DECLINE (for the verdict "
    "metric, DECLINE is a category). Rely on alpha >= 0.800; draw tentative conclusions from 0.667."
)
st.dataframe(
    rows,
    hide_index=True,
    column_config={
        "sub-action": st.column_config.TextColumn(width="medium"),
        "alpha": st.column_config.TextColumn(width="small"),
        "units": st.column_config.NumberColumn(width="small"),
        "raters": st.column_config.NumberColumn(width="small"),
        "pairable values": st.column_config.NumberColumn(width="small"),
        "reading": st.column_config.TextColumn(width="medium"),
    },
)
small = [r["sub-action"] for r, a in zip(rows, alphas, strict=True) if 0 < a.n_units < 10]
if small:
    st.caption(
        "Few units behind " + ", ".join(small) + ": with under ten bands an alpha and its "
        "interval say little; read them as a description of these raters, not an estimate."
    )

points = [
    {
        "scope": r["sub-action"],
        "alpha": a.alpha,
        "lo": a.ci_low,
        "hi": a.ci_high,
        "units": a.n_units,
    }
    for r, a in zip(rows, alphas, strict=True)
    if a.alpha is not None
]
if points:
    y = alt.Y("scope:N", title=None, sort=None, axis=alt.Axis(labelLimit=300))
    x_scale = alt.Scale(domain=[-1, 1])
    data = alt.Chart(alt.Data(values=points))
    intervals = data.transform_filter("datum.lo != null").mark_rule(strokeWidth=3, color="#5c6bc0")
    chart = (
        intervals.encode(
            x=alt.X("lo:Q", title="alpha and its 95% interval", scale=x_scale), x2="hi:Q", y=y
        )
        + data.mark_point(filled=True, size=80).encode(
            x=alt.X("alpha:Q", scale=x_scale), y=y, tooltip=["scope:N", "alpha:Q", "units:Q"]
        )
        + alt.Chart(alt.Data(values=[{"x": 0.667}, {"x": 0.8}]))
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(x="x:Q")
    ).properties(
        height=36 * len(points) + 40,
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
    )
    st.altair_chart(chart)
    st.caption("Dashed lines: 0.667 and 0.800. Undefined alphas are not drawn.")

st.subheader("Bands, most disputed first")
by_band = {}
for r in ratings:
    by_band.setdefault((r.vignette_id, r.sub_action), []).append(r)
for band in most_disputed_first(report.bands):
    name = band.sub_action
    vignette = lib.vignettes.get(band.vignette_id)
    with st.container(border=True):
        st.page_link(
            "app_pages/vignette.py",
            label=f"{band.vignette_id} · {sub_action(name).label}",
            query_params={"id": band.vignette_id},
        )
        consensus = band.consensus
        rule = {
            "applied": "intersection rule applied",
            "empty": "no consensus: the raters share no value",
            "absent": "one rater only: the intersection rule does not bind",
        }[consensus.rule]
        raters = f"{band.n_raters} rater{'s' if band.n_raters != 1 else ''} with a band"
        st.caption(f"{raters}, {band.n_declined} declined · {rule}")
        chart_rows = [
            Row(r.rater, band_from_values(name, r.values))
            for r in by_band[(band.vignette_id, name)]
            if r.values
        ]
        if consensus.consensus:
            chart_rows.append(
                Row(
                    "consensus",
                    band_from_values(name, consensus.consensus),
                    band_from_values(name, consensus.disputed or ()),
                )
            )
        if chart_rows and vignette is not None:
            st.altair_chart(band_chart(name, chart_rows, orderables=vignette.orderables))
        if consensus.consensus:
            st.markdown(f"**Consensus:** {describe(band_from_values(name, consensus.consensus))}")
        if consensus.disputed:
            st.markdown(
                f"**Disputed span:** {describe(band_from_values(name, consensus.disputed))}"
            )
