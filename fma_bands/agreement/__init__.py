"""Agreement among raters (docs/design.md, Agreement): `metrics` holds the public alphas, the report
and its JSON; `engine` the coincidence arithmetic; `bootstrap` the intervals and their measured
coverage; `panel` each band's raters and consensus; `diagnostics` each rater and alpha by
ambiguity stratum; `planning` the vignettes needed for an interval width; `coincidences` the
coincidence matrices as CSV; `methods` the methods report; `views` what the page and the
command's table show; `picture` bands drawn over their sub-action's domain; `chart` the alphas
as an Altair chart.

May import: fma_bands.core. Never the store, the study workflow, evidence or Streamlit."""

from fma_bands.agreement.bootstrap import DEFAULT_B, DEFAULT_SEED
from fma_bands.agreement.metrics import (
    METRICS,
    POOLED,
    POOLED_LABEL,
    Alpha,
    Rating,
    Report,
    agreement_report,
    band_agreements,
    band_alpha,
    lower_alpha,
    membership_alpha,
    metric_alpha,
    metric_strata,
    report_to_json,
    upper_alpha,
    verdict_alpha,
)
from fma_bands.agreement.panel import BandAgreement, most_disputed_first

__all__ = [
    "DEFAULT_B",
    "DEFAULT_SEED",
    "METRICS",
    "POOLED",
    "POOLED_LABEL",
    "Alpha",
    "BandAgreement",
    "Rating",
    "Report",
    "agreement_report",
    "band_agreements",
    "band_alpha",
    "lower_alpha",
    "membership_alpha",
    "metric_alpha",
    "metric_strata",
    "most_disputed_first",
    "report_to_json",
    "upper_alpha",
    "verdict_alpha",
]
