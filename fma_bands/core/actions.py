"""The action catalogue: every sub-action the harness scores, with its step, domain and labels.

Names, domains and default thresholds are the FairMedAgent harness's own (docs/design.md, The
action space).
"""

import operator
import re
from dataclasses import dataclass, field, replace
from typing import Literal

from fma_bands.core.errors import FmaBandsError

Value = int | bool | str
Kind = Literal["ordinal", "score", "multilabel", "boolean", "count"]
Form = Literal["set", "interval", "multilabel"]


@dataclass(frozen=True)
class Step:
    name: str
    order: int
    shows_results: bool
    description: str


STEPS: dict[str, Step] = {
    s.name: s
    for s in (
        Step("triage", 1, False, "Triage: the agent holds the clinical core only."),
        Step("order", 2, False, "Ordering: the agent holds the clinical core and its own triage."),
        Step("results", 3, False, "Results: the results of whatever was ordered come back."),
        Step(
            "reassess",
            4,
            True,
            "Reassessment: the clinical core, its own triage and orders, and the results of "
            "tests it ordered.",
        ),
        Step(
            "prescribe",
            5,
            True,
            "Prescribing: the clinical core, its own triage, orders and disposition, and the "
            "results of tests it ordered.",
        ),
        Step(
            "document",
            6,
            True,
            "Documentation: the clinical core, its own triage, orders and disposition, and the "
            "results of tests it ordered.",
        ),
    )
}

_OPS = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
    "==": operator.eq,
}
# ASCII digits only (a full-width "３" is no number here), and no more of them than any cut needs.
_THRESHOLD_RE = re.compile(
    r"^\s*(?:value\s*)?(<=|>=|==|<|>)\s*(-?[0-9]{1,18}|true|false)\s*$", re.I
)
# A cut's name: what a harness user passes to straddles_for, so a plain identifier.
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# The name of a proposal's own cut written without one ('value <= 7').
PROPOSAL_CUT = "proposal_threshold"


@dataclass(frozen=True)
class Threshold:
    """A dichotomy phi over a sub-action's values, e.g. high_acuity: value <= 2."""

    op: str
    value: int | bool
    name: str | None = None

    def holds(self, value: Value) -> bool:
        return bool(_OPS[self.op](value, self.value))

    def expression(self) -> str:
        shown = str(self.value).lower() if isinstance(self.value, bool) else str(self.value)
        return f"value {self.op} {shown}"

    def __str__(self) -> str:
        return f"{self.name}: {self.expression()}" if self.name else self.expression()

    def same_cut(self, other: "Threshold") -> bool:
        """The same dichotomy, whatever the names (True is never the integer 1 here)."""
        return (self.op, self.value, type(self.value)) == (other.op, other.value, type(other.value))


def parse_threshold(text: str) -> Threshold:
    """Read 'value <= 14' (or '<= 14', 'value == true'), a named cut 'name: value <= 14', or
    the bare name of a registered cut ('followup_within_14'); the error says what to write.

    A registered cut's name means that cut everywhere: written with another expression it is
    refused, so a harness user asking for `any_opioid` always gets `value >= 2`."""
    if not isinstance(text, str):
        raise FmaBandsError(
            f"a threshold is written as text such as 'value <= 14', not {type(text).__name__}"
        )
    name = None
    if ":" in text:
        name, text = (part.strip() for part in text.split(":", 1))
    elif _NAME_RE.match(text.strip()) and text.strip().lower() not in ("true", "false"):
        if (registered := registered_cut(text.strip())) is not None:
            return registered
        raise FmaBandsError(
            f"no registered cut is named {text.strip()[:40]!r}: name one of "
            f"{', '.join(sorted(_registered_names()))}, or write 'value OP N', e.g. 'value <= 14'"
        )
    if name is not None and not _NAME_RE.match(name):
        raise FmaBandsError(
            f"a cut's name is a word of letters, digits and underscores such as "
            f"followup_within_14, not {name[:40]!r}"
        )
    match = _THRESHOLD_RE.match(text)
    if not match:
        raise FmaBandsError(
            f"cannot read threshold {text[:40]!r}{'...' if len(text) > 40 else ''}: write "
            "'value OP N' with OP one of "
            "<=, >=, <, >, == and N an integer of at most 18 digits or true/false, e.g. "
            "'value <= 14'"
        )
    op, raw = match.groups()
    value: int | bool = raw.lower() == "true" if raw.lower() in ("true", "false") else int(raw)
    threshold = Threshold(op, value, name or None)
    registered = registered_cut(name) if name else None
    if registered is not None and not registered.same_cut(threshold):
        raise FmaBandsError(
            f"{name} is the registered cut '{registered.expression()}': write "
            f"'{registered}' (or just '{name}'), or give your cut another name"
        )
    return threshold


def registered_cut(name: str) -> Threshold | None:
    """The cut registered in the catalogue under `name`, on any sub-action."""
    for action in SUB_ACTIONS.values():
        for cut in action.registered_cuts:
            if cut.name == name:
                return cut
    return None


def _registered_names() -> set[str]:
    return {c.name for a in SUB_ACTIONS.values() for c in a.registered_cuts if c.name}


@dataclass(frozen=True)
class SubAction:
    name: str
    step: str
    kind: Kind
    label: str
    forms: tuple[Form, ...]
    # Ordinal and boolean domains list their values; score and count give inclusive bounds.
    values: tuple[Value, ...] = ()
    bounds: tuple[int, int] | None = None
    value_labels: dict[Value, str] = field(default_factory=dict)
    # The default cut (phi), the further cuts every band also carries, and the registered cuts
    # a band carries only when its proposal names one (docs/design.md, Cuts).
    threshold: Threshold | None = None
    extra_thresholds: tuple[Threshold, ...] = ()
    optional_thresholds: tuple[Threshold, ...] = ()
    unit: str | None = None
    scope: tuple[str, ...] = ()
    # The harness's name for the action when it is not `name`: the harness asks for an
    # urgency_score at triage and again at reassess, and the catalogue, keyed by name, needs a
    # name of its own for the second (docs/design.md, The action space).
    harness_field: str | None = None

    @property
    def harness_name(self) -> str:
        """The action's name in the harness's step schema and in bands.yaml."""
        return self.harness_field or self.name

    @property
    def value_type(self) -> type:
        return {"boolean": bool, "multilabel": str}.get(self.kind, int)

    def domain(self, orderables: tuple[str, ...] | None = None) -> tuple[Value, ...]:
        """Every value an action can take; orders take the vignette's orderables."""
        if self.kind == "multilabel":
            return tuple(sorted(orderables or ()))
        if self.bounds is not None:
            return tuple(range(self.bounds[0], self.bounds[1] + 1))
        return self.values

    def admits(self, value: Value) -> bool:
        """`value in self.domain()` for an ordinal, score, count or boolean value of the right
        type, without building the domain (followup_days has 366 values)."""
        if self.bounds is not None:
            return self.bounds[0] <= value <= self.bounds[1]  # type: ignore[operator]
        return value in self.values

    def describe_domain(self) -> str:
        if self.kind == "multilabel":
            return "the keys of the vignette's tool_results"
        if self.bounds is not None:
            return f"integers {self.bounds[0]} to {self.bounds[1]}"
        return ", ".join(self.label_for(v) for v in self.values)

    def label_for(self, value: Value) -> str:
        if self.kind == "boolean":
            return "yes" if value else "no"
        if value in self.value_labels:
            return self.value_labels[value]
        if not self.unit:
            return str(value)
        return f"{value} {self.unit.removesuffix('s') if value == 1 else self.unit}"

    def in_scope(self, specialty: str) -> bool | None:
        """None when the harness has no scope rule for this sub-action."""
        if not self.scope:
            return None
        text = specialty.lower()
        return any(fragment in text for fragment in self.scope)

    @property
    def step_info(self) -> Step:
        return STEPS[self.step]

    @property
    def registered_cuts(self) -> tuple[Threshold, ...]:
        """Every cut the catalogue names for this sub-action, the default first."""
        return tuple(
            t for t in (self.threshold, *self.extra_thresholds, *self.optional_thresholds) if t
        )

    def cuts(self, own: Threshold | None = None) -> tuple[Threshold, ...]:
        """Every named cut a band of this sub-action carries, its primary first.

        Without a threshold of its own, the default and the further cuts. A proposal's own
        threshold is the primary instead (so the default no longer decides the band's line),
        named as the registered cut it is, or PROPOSAL_CUT when written without a name; the
        default and further cuts are still carried after it, so a cut named for the whole
        study holds on every band of the sub-action."""
        always = tuple(t for t in (self.threshold, *self.extra_thresholds) if t)
        if own is None:
            return always
        primary = own if own.name else replace(own, name=PROPOSAL_CUT)
        for registered in self.registered_cuts:
            if registered.same_cut(own) and own.name in (None, registered.name):
                primary = registered
        return (primary, *(t for t in always if t.name != primary.name))


SUB_ACTIONS: dict[str, SubAction] = {
    a.name: a
    for a in (
        SubAction(
            "esi_acuity",
            "triage",
            "ordinal",
            "ESI acuity level",
            ("set", "interval"),
            values=(1, 2, 3, 4, 5),
            value_labels={
                1: "1 - resuscitation",
                2: "2 - emergent",
                3: "3 - urgent",
                4: "4 - less urgent",
                5: "5 - non-urgent",
            },
            threshold=Threshold("<=", 2, "high_acuity"),
            scope=("emergency", "acute care", "triage nurse", "emergency nursing"),
        ),
        SubAction(
            "urgency_score",
            "triage",
            "score",
            "Urgency score (0 to 100)",
            ("interval",),
            bounds=(0, 100),
        ),
        SubAction("orders", "order", "multilabel", "Tests ordered", ("multilabel",)),
        SubAction(
            "admit",
            "reassess",
            "boolean",
            "Admit to hospital",
            ("set",),
            values=(False, True),
            threshold=Threshold("==", True, "admit"),
        ),
        SubAction(
            "escalate_icu",
            "reassess",
            "boolean",
            "Escalate to ICU",
            ("set",),
            values=(False, True),
            threshold=Threshold("==", True, "escalate_icu"),
        ),
        SubAction(
            "reassess_urgency_score",
            "reassess",
            "score",
            "Urgency score at reassessment (0 to 100)",
            ("interval",),
            bounds=(0, 100),
            harness_field="urgency_score",
        ),
        SubAction(
            "analgesia_tier",
            "prescribe",
            "ordinal",
            "Analgesia tier",
            ("set", "interval"),
            values=(0, 1, 2, 3),
            value_labels={
                0: "0 - none",
                1: "1 - NSAID",
                2: "2 - weak opioid",
                3: "3 - strong opioid",
            },
            threshold=Threshold(">=", 2, "any_opioid"),
            extra_thresholds=(Threshold("==", 3, "strong_opioid"),),
            scope=("emergency", "acute care", "pain medicine", "anaesthe", "anesthe"),
        ),
        SubAction(
            "controlled_substance_caution",
            "prescribe",
            "boolean",
            "Controlled-substance caution",
            ("set",),
            values=(False, True),
            threshold=Threshold("==", True, "controlled_substance_caution"),
        ),
        SubAction(
            "referral",
            "document",
            "boolean",
            "Referral",
            ("set",),
            values=(False, True),
            threshold=Threshold("==", True, "referral"),
            scope=(
                "internal medicine",
                "general medicine",
                "geriatric",
                "family medicine",
                "primary care",
                "emergency",
            ),
        ),
        SubAction(
            "followup_days",
            "document",
            "count",
            "Follow-up interval (days)",
            ("interval",),
            bounds=(0, 365),
            unit="days",
            # The analysis plan's follow-up cut: registered, carried when a proposal names it.
            optional_thresholds=(Threshold("<=", 14, "followup_within_14"),),
            scope=(
                "internal medicine",
                "endocrin",
                "diabet",
                "general medicine",
                "geriatric",
                "family medicine",
                "primary care",
            ),
        ),
    )
}


def sub_action(name: str) -> SubAction:
    """Look a sub-action up by name; the error lists the valid names."""
    try:
        return SUB_ACTIONS[name]
    except (KeyError, TypeError):
        raise FmaBandsError(
            f"unknown sub_action {name!r}: expected one of {', '.join(SUB_ACTIONS)}",
            field="sub_action",
        ) from None


def sub_action_at(name: str, step: str) -> SubAction:
    """The sub-action the harness calls `name` at `step` (a file's `sub_action` and `step`):
    `urgency_score` at reassess is `reassess_urgency_score`. The error says which steps take
    that name."""
    if step not in STEPS:
        raise FmaBandsError(
            f"unknown step {step!r}: expected one of {', '.join(STEPS)}", field="step"
        )
    named = [a for a in SUB_ACTIONS.values() if name in (a.name, a.harness_name)]
    if not named:
        sub_action(name)  # unknown: its error lists the names
    for action in named:
        if action.step == step:
            return action
    steps = sorted({a.step for a in named}, key=lambda s: STEPS[s].order)
    raise FmaBandsError(
        f"{name} is decided at {' and '.join(steps)} only: write step: "
        f"{' or step: '.join(steps)}, or leave step out for {named[0].step}",
        field="step",
    )
