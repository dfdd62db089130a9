"""The Queries page, the queue's reminder lines and the due-date form under streamlit's AppTest,
on the FairMedAgent study (a coordinator, rater-01 and rater-02), checking the store too."""

from datetime import timedelta

from sqlmodel import select
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Block

from fma_bands.core.labels import case_token
from fma_bands.core.people import UserPublic
from fma_bands.store.models import QueryMessage
from fma_bands.study import queries
from fma_bands.study.case_keys import case_key
from fma_bands.study.due_dates import due_date, long_date, set_due, today
from fma_bands.study.rounds import close_round
from tests import page_helpers
from tests.page_helpers import DOC, MED, as_read, click, open_app, run, shown, title

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)

PAGE = "app_pages/queries.py"


def choose_band(at: AppTest, study, band: tuple[str, str] | None) -> None:
    """Pick `band` in the Band box, by the case token and sub-action that name it there."""
    with study.store() as s:
        key = case_key(s)
    value = None if band is None else f"{case_token(band[0], key)}/{band[1]}"
    at.selectbox(key="queries:start:band").set_value(value)


QUESTION = "Does the band count days from discharge or from the visit?"
ANSWER = "From discharge, as the vignette's second line says."


def infos(at: AppTest) -> list[str]:
    return [as_read(e.value) for e in at.info]


def errors(at: AppTest) -> list[str]:
    return [as_read(e.value) for e in at.error]


def successes(at: AppTest) -> list[str]:
    return [as_read(e.value) for e in at.success]


def warnings(at: AppTest) -> list[str]:
    return [as_read(e.value) for e in at.warning]


def keys_of(at: AppTest) -> set[str]:
    """The keys of the containers the page drew: a block's id ends with its key."""
    found = set()
    todo = list(at._tree.children.values())
    while todo:
        node = todo.pop()
        block_id = getattr(node.proto, "id", "") if isinstance(node, Block) else ""
        if block_id:
            found.add(block_id.split("-", 2)[-1])
        todo += list(getattr(node, "children", {}).values())
    return found


def captions(at: AppTest) -> list[str]:
    return [as_read(e.value) for e in at.caption]


def test_a_rater_asks_the_coordinator_replies_and_the_rater_reads_the_reply(study):
    at = open_app(study.rater, PAGE)
    assert title(at) == "Queries"
    choose_band(at, study, DOC)
    at.text_area(key="queries:start:body").input(QUESTION)
    click(at, "Send the question")
    assert successes(at) == ["Your message is sent to the study coordinator."]
    assert at.text_area(key="queries:start:body").value == ""
    assert "Open · awaiting the coordinator's reply" in captions(at)
    assert QUESTION in [t.value for t in at.text]
    with study.store() as s:
        [row] = s.exec(select(QueryMessage)).all()
        assert (row.vignette_id, row.sub_action, row.author, row.body) == (
            *DOC,
            "rater-01",
            QUESTION,
        )
    # A rater never reads a vignette's id, not even in a widget's key.
    assert DOC[0] not in shown(at)

    # The coordinator's landing page says a question waits, with the way to it.
    admin = open_app(study.coordinator)
    assert title(admin) == "Study admin"
    assert "1 query waits for your answer." in infos(admin)
    assert "Read and answer the queries" in [link.label for link in admin.get("page_link")]
    coordinator = open_app(study.coordinator, PAGE)
    assert "1 query waits for your answer." in infos(coordinator)
    [box] = [a for a in coordinator.text_area if a.label == "Your reply"]
    box.input(ANSWER)
    click(coordinator, "Send the reply")
    assert successes(coordinator) == ["Your message is sent to rater-01."]
    assert "Open · you wrote last: rater-01 may reply; close it once it is settled" in captions(
        coordinator
    )

    # Answered: nothing waits for the coordinator now.
    assert "1 query waits for your answer." not in infos(open_app(study.coordinator))
    queue = open_app(study.rater)
    assert title(queue) == "My queue"
    assert "1 open query ends with a message from the coordinator." in infos(queue)
    assert "Read and answer your queries" in [link.label for link in queue.get("page_link")]
    reader = open_app(study.rater, PAGE)
    assert ANSWER in [t.value for t in reader.text]
    assert (
        "Open · the coordinator wrote last: reply if you need to (the coordinator closes it)"
        in captions(reader)
    )
    assert any(c.startswith("The study coordinator · ") for c in captions(reader))


def test_another_rater_sees_nothing_of_it(study):
    with study.store() as s:
        queries.ask(s, study.library, study.rater, DOC, QUESTION)
        queries.write(s, study.library, study.coordinator, "rater-01", DOC, ANSWER)
    other = open_app(study.other, PAGE)
    screen = shown(other)
    assert QUESTION not in screen and ANSWER not in screen and "rater-01" not in screen
    assert "No query is open." in captions(other)
    queue = open_app(study.other)
    assert not any("query" in line for line in infos(queue))
    assert "Read and answer your queries" not in [link.label for link in queue.get("page_link")]


def test_an_empty_message_is_refused_beside_the_box_and_nothing_is_kept(study):
    at = open_app(study.rater, PAGE)
    choose_band(at, study, MED)
    click(at, "Send the question")
    assert errors(at) == ["write the message first: one sentence is enough"]
    choose_band(at, study, None)
    at.text_area(key="queries:start:body").input(QUESTION)
    click(at, "Send the question")
    assert errors(at) == ["choose the band your message is about"]
    assert at.text_area(key="queries:start:body").value == QUESTION  # kept to send again
    with study.store() as s:
        assert s.exec(select(QueryMessage)).all() == []


def test_the_coordinator_starts_a_query_and_closes_it(study):
    at = open_app(study.coordinator, PAGE)
    at.selectbox(key="queries:start:rater").set_value("rater-02")
    choose_band(at, study, MED)
    at.text_area(key="queries:start:body").input("Which tier did you mean?")
    click(at, "Send to the rater")
    assert "Open · you wrote last: rater-02 may reply; close it once it is settled" in captions(at)
    click(at, "Close the query")
    assert successes(at) == ["The query is closed."]
    assert "No query is open." in captions(at)
    with study.store() as s:
        [thread] = queries.threads(s, study.other)
        assert not thread.is_open
        assert queries.threads(s, study.rater) == []


def test_the_queue_reminds_the_rater_of_the_due_date(study):
    with study.store() as s:
        set_due(s, actor=study.coordinator, due_on=today() + timedelta(days=8))
    at = open_app(study.rater)
    line = (
        f"Round 1 is due on {long_date(today() + timedelta(days=8))} (in 8 days): "
        "4 of your bands are left."
    )
    assert line in infos(at)


def _due_form(user: dict) -> None:
    from app_pages.due_dates import due_date_form
    from fma_bands.core.people import UserPublic

    due_date_form(UserPublic(**user))


def form_app(user: UserPublic) -> AppTest:
    at = AppTest.from_function(_due_form, args=(user.model_dump(),), default_timeout=30)
    # Signed in as the app signs in: a button acts only for the session's person.
    at.session_state["user"] = user.model_dump()
    return run(at)


def test_the_due_date_form_sets_and_clears_the_rounds_due_date(study):
    at = form_app(study.coordinator)
    assert "Round 1 has no due date: raters see no reminder." in captions(at)
    click(at, "Set the due date")  # no day chosen: said in words, nothing set
    assert errors(at) == ["choose the day the round is due"]
    with study.store() as s:
        assert due_date(s) is None
    day = today() + timedelta(days=3)
    at.date_input(key="due:day").set_value(day)
    run(at)
    # Chosen is not set: said under the buttons, in a block the browser's guard reads before
    # the page is left (page_script.py).
    chosen = (
        f"{long_date(day)} is chosen, not set: press Set the due date to make round 1 due then."
    )
    assert warnings(at) == [chosen] and "unsent:Due on" in keys_of(at)
    click(at, "Set the due date")
    assert successes(at) == [f"Round 1 is now due on {long_date(day)}."]
    assert warnings(at) == [] and "unsent:Due on" not in keys_of(at)
    click(at, "Set the due date")  # again: it is due then already
    assert successes(at) == [
        f"Round 1 is already due on {long_date(day)}: choose another day to move it."
    ]
    with study.store() as s:
        found = due_date(s)
        assert found is not None and found.due_on == day
    click(at, "Clear the due date")
    assert successes(at) == ["Round 1 has no due date now."]
    # The field is emptied with the date: nothing is left chosen.
    assert at.date_input(key="due:day").value is None and warnings(at) == []
    with study.store() as s:
        assert due_date(s) is None


def test_an_overdue_round_shows_its_date_and_moves_it(study):
    """A due date gone by is a normal state: the form shows it, and the coordinator moves it
    (a day already past is refused in words) or clears it."""
    past, later = today() - timedelta(days=2), today() + timedelta(days=4)
    with study.store() as s:
        set_due(s, actor=study.coordinator, due_on=past, now=today() - timedelta(days=5))
    at = form_app(study.coordinator)
    assert at.date_input(key="due:day").value == past
    click(at, "Set the due date")  # the date on show, already past
    assert errors(at) == ["choose today or a later day: a due date already past helps nobody"]
    at.date_input(key="due:day").set_value(later)
    run(at)
    click(at, "Set the due date")
    assert successes(at) == [f"Round 1 is now due on {long_date(later)}."]
    with study.store() as s:
        found = due_date(s)
        assert found is not None and found.due_on == later
    # The whole Study admin page draws beside an overdue date.
    with study.store() as s:
        set_due(s, actor=study.coordinator, due_on=past, now=today() - timedelta(days=5))
    admin = open_app(study.coordinator, "app_pages/admin.py")
    assert not admin.exception
    assert "Progress by rater" in [h.value for h in admin.subheader]


def test_a_past_day_refused_is_not_also_asked_to_be_set(study):
    # Refused, the day stays chosen and not set (leaving would lose it), but the notice no
    # longer asks for the press just refused.
    past = today() - timedelta(days=5)
    at = form_app(study.coordinator)
    at.date_input(key="due:day").set_value(past)
    run(at)
    click(at, "Set the due date")
    assert errors(at) == ["choose today or a later day: a due date already past helps nobody"]
    assert warnings(at) == [
        f"{long_date(past)} is chosen, not set: choose another day, as said above."
    ]
    with study.store() as s:
        assert due_date(s) is None


def test_a_rater_cannot_set_a_due_date_with_the_form(study):
    at = form_app(study.rater)
    at.date_input(key="due:day").set_value(today() + timedelta(days=3))
    run(at)
    click(at, "Set the due date")
    assert errors(at) == ["only the study coordinator can set the round's due date"]
    with study.store() as s:
        assert due_date(s) is None


def test_a_message_is_shown_as_typed_never_as_markup(study):
    hostile = "# Heading **bold** [a link](https://example.org) :red[red] $x^2$ <b>tag</b>"
    with study.store() as s:
        queries.ask(s, study.library, study.rater, DOC, hostile)
    for user in (study.coordinator, study.rater):
        at = open_app(user, PAGE)
        assert hostile in [t.value for t in at.text]
        assert not any("example.org" in m.value for m in (*at.markdown, *at.caption))


def test_a_closed_round_is_due_no_more_and_its_form_is_gone(study):
    day = today() + timedelta(days=8)
    with study.store() as s:
        set_due(s, actor=study.coordinator, due_on=day)
        close_round(s, actor=study.coordinator)
    at = form_app(study.coordinator)
    assert captions(at) == [
        f"Round 1 is closed (it was due on {long_date(day)}): a due date is set for an open "
        "round only."
    ]
    assert not at.date_input and not at.button


def test_ask_about_this_band_opens_queries_with_the_band_chosen(study):
    from tests.page_helpers import open_review

    review = open_review(study.rater, MED)
    label = "Ask the coordinator about this band"
    [link] = [lk for lk in review.get("page_link") if lk.label == label]
    assert link.proto.page == "queries"
    with study.store() as s:
        key = case_key(s)
    # The link names the band by its case token, never by its id.
    assert link.proto.query_string == f"case={case_token(MED[0], key)}&sub_action={MED[1]}"
    asked = open_app(study.rater, PAGE, case=case_token(MED[0], key), sub_action=MED[1])
    assert asked.selectbox(key="queries:start:band").value == f"{case_token(MED[0], key)}/{MED[1]}"
