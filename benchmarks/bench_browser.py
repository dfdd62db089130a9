"""Browser-level latency of the review page: the real app as a server, on the study
benchmarks/bench_pages.py uses, driven in headless chromium through Playwright by the rater
bench_pages times (the first, with the last tenth of the vignettes still to review).

    python -m benchmarks.bench_browser --vignettes 300 --raters 10 --keep DIR --json FILE

Each repeat opens one of the rater's unreviewed interval bands (the urgency score: a lower and
an upper bound) on "Review a band" and times four interactions, in this order, each from the
browser's own input event (the click, or the Enter that commits a number) until the page has
drawn the result and the app is idle again; each one's effect is checked, or the benchmark fails:

- `answer_a_question`: question 1 answered (its radio shown checked); the other questions and
  the verdict (AMEND) are then answered untimed;
- `edit_a_bound`: the lower bound typed, then Enter (the new value shown, and kept by the app in
  the rater's draft in the database); a reason is then typed, untimed;
- `submit_and_next`: the complete review sent with "Submit and next" ("Review submitted" shown,
  the next band's title in the h1 and its place in the caption, the review stored as submitted,
  with the band and reason sent, in the database);
- `next`: "Next band →" on the band that opened, without submitting it (the band after it: its
  title in the h1, its place in the caption).

Each is measured in the page, on the browser's clock (performance.now), by an init script: the
input event's time stamp, every change of the app's script state (the `stApp` element's
`data-test-script-state`, which Streamlit's own end-to-end tests wait on) and every message the
app's websocket delivers, each with the time the frame after it was painted. The benchmark waits
until the browser has sent the run's request and received its end (on the wire, below), then for
the effect, checks it, and waits until nothing has changed for 0.4 s, so that a second run (a
move to another band may take two) is never missed. The script state alone cannot tell a run
happened: when a short run's messages arrive together, the page handles them in one task and
the attribute goes from `notRunning` to `notRunning`, never showing `running`. Per interaction,
medians of --repeat runs, in milliseconds:

- `ms`: the input event to the frame painted after the last of the app's return to
  `notRunning` and its last message: what the rater waits for (browser-level);
- `to_running_ms`, `running_ms`, `to_paint_ms`: its three parts: until the page first sees the
  script running or a message of it, while it runs as the page sees it (the server's runs, their
  messages and the drawing of them), and from the end to the painted frame;
- `runs`: how many runs of the app finished (its `script_finished` messages on the wire);
- `server_ms`: from the first rerun request the browser sent to the last `script_finished` it
  received, timed by the browser's network stack (the DevTools protocol's websocket frames,
  outside the page's main thread): the server's runs and the transfer of what they drew,
  without the browser's drawing; `received_kb` and `messages`: what came over the websocket
  meanwhile. `ms` minus `server_ms` is the browser's own share.

With `--pages`, it times instead the pages a coordinator opens first, each repeat on a server
started afresh, once it says it has read the study (`ready`: the seconds from its first answer
to that line), in a browser context of its own (nothing cached): `sign_in_cold` (the address
opened to the sign-in form drawn), `sign_in_warm` (the address opened again), `landing` (Sign in
pressed to Study admin drawn), `agreement_cold` and `registry_cold` (the sidebar's link to the
page drawn, the first time this server draws it), then `agreement_warm` and `registry_warm` (the
same links again). Each is the wall time from the action to the page's heading shown, the app
idle and nothing stale on screen, in milliseconds.

The raw samples are kept under `samples`. A run works on a fresh copy of the study's database
(`browser-run.db` beside it), each repeat on a band of its own; the server is started once per
run, the browser signs in once, and both are stopped at the end. `--server-option KEY=VALUE`
passes one more of Streamlit's options to the server, to measure what it changes.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from benchmarks.study_files import PASSPHRASE, BenchStudy, build_study, unfinished_vignettes
from fma_bands.cli.serve import streamlit_command

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("FMA_BANDS_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    # Without these chromium keeps calling out to the (closed) network.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]
INTERACTIONS = ("answer_a_question", "edit_a_bound", "next", "submit_and_next")
BAND = "urgency_score"  # an interval band: "Lower bound" and "Upper bound" number inputs
TITLE = "Urgency score (0 to 100)"
NEXT = "Next band →"
SUBMIT = "Submit and next"
SUBMITTED = "Review submitted (revision 1)."
# Not the reason the study's own reviews give, so that the one sent here can be told apart.
REASON = "Browser benchmark: the lower bound moved by one."
# The answers a complete review gives to each question the screen asks (q5 only when the
# proposal records a disputed span: the urgency score's never does).
ANSWERS = {1: "yes", 2: "yes", 3: "no", 4: "no", 5: "band", 6: "yes"}
AMEND = "AMEND: correct the band or its clause"
START_TIMEOUT_S = 60
TIMEOUT_MS = 60_000  # one wait in the page: a first render on a loaded machine is slow
QUIET_MS = 400  # nothing new on the page this long: the interaction and its runs are over
# Streamlit keeps the last run's elements on screen, marked stale, while a rerun redraws.
LIVE = '[data-testid="stElementContainer"]:not([data-stale="true"])'

# Runs in the page before the app's own scripts: records, on the page's clock, the input
# events and every change of the app's script state, with the time the frame after it was
# painted, all since the last reset(). It watches that one attribute only, so that it adds next
# to nothing to the page's own work.
INIT_SCRIPT = """
(() => {
  const bench = { inputs: [], states: [], messages: [] };
  bench.reset = () => { bench.inputs = []; bench.states = []; bench.messages = []; };
  bench.read = () => ({ inputs: bench.inputs, states: bench.states, messages: bench.messages });
  window.__bench = bench;
  for (const type of ["click", "keydown"]) {
    document.addEventListener(type, (e) => bench.inputs.push([type, e.timeStamp]), true);
  }
  // The callback after the next frame's paint.
  const paint = (entry) =>
    requestAnimationFrame(() => setTimeout(() => { entry.painted = performance.now(); }, 0));
  new MutationObserver((records) => {
    const now = performance.now();
    for (const record of records) {
      const entry = { at: now, state: record.target.getAttribute("data-test-script-state"),
                      painted: null };
      bench.states.push(entry);
      paint(entry);
    }
  }).observe(document, { subtree: true, attributeFilter: ["data-test-script-state"] });
  // Each message the app's websocket delivers, heard before the app's own listener.
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", () => {
        const entry = { at: performance.now(), painted: null };
        bench.messages.push(entry);
        paint(entry);
      });
    }
  };
})();
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """One `streamlit run app.py` on the study: its address and its log."""

    url: str
    log: Path
    process: subprocess.Popen

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
        # start_new_session made the server a group leader: take down anything it left behind.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return bool(response.read().decode().strip() == "ok")
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def serve(study: BenchStudy, folder: Path, options: tuple[str, ...] = ()) -> Iterator[Server]:
    """The real app on the study, as tests/browser/conftest.py starts it; `options` are more
    of Streamlit's (`runner.postScriptGC=true`), to measure what one changes."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FMA_BANDS_")} | study.env()
    command = streamlit_command(ROOT / "app.py", host="127.0.0.1", port=port)
    command += [f"--{option}" for option in options]
    log = folder / "browser-server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Server(url, log, process)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the app did not start:\n{log.read_text(errors='replace')}")
            time.sleep(0.1)
        yield server
    finally:
        server.stop()


# In the page -----------------------------------------------------------------------------------


def wait_for_app(page) -> None:
    """Connected, the script finished, no placeholder left (tests/browser/helpers.py)."""
    from playwright.sync_api import expect

    app = page.get_by_test_id("stApp")
    expect(app).to_have_attribute("data-test-connection-state", "CONNECTED", timeout=TIMEOUT_MS)
    expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=TIMEOUT_MS)
    expect(page.locator('[data-testid="stSkeleton"]')).to_have_count(0, timeout=TIMEOUT_MS)
    if page.get_by_test_id("stException").count():
        raise RuntimeError(f"the app raised: {page.get_by_test_id('stException').inner_text()}")


def drawn(page) -> None:
    """Wholly drawn: a move to another band is two runs, with a moment between them when the app
    looks idle and the last band's elements are still there, stale."""
    from playwright.sync_api import expect

    wait_for_app(page)
    expect(page.locator('[data-stale="true"]')).to_have_count(0, timeout=TIMEOUT_MS)
    wait_for_app(page)


def quiet(page) -> dict[str, Any]:
    """What the page recorded, once neither its script state nor its messages have changed for
    QUIET_MS (the app idle, every frame painted): the interaction and its runs are over."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    seen = (-1, -1)
    while True:
        drawn(page)
        found = page.evaluate("window.__bench.read()")
        entries = [*found["states"], *found["messages"]]
        pending = any(e["painted"] is None for e in entries)
        if (len(found["states"]), len(found["messages"])) == seen and not pending:
            return dict(found)
        if time.monotonic() > deadline:
            raise RuntimeError("the page did not settle")
        seen = (len(found["states"]), len(found["messages"]))
        page.wait_for_timeout(QUIET_MS)


def measure(found: dict[str, Any], what: str) -> dict[str, float]:
    """One interaction's page figures from what the page recorded (see the module's
    docstring): from the input to the later of the last return to `notRunning` and the last
    message, each painted. `runs` is counted on the wire (on_the_wire)."""
    if not found["inputs"]:
        raise RuntimeError(f"{what}: the page saw no input event")
    start = found["inputs"][0][1]
    states = [s for s in found["states"] if s["at"] >= start]
    messages = [m for m in found.get("messages", []) if m["at"] >= start]
    if states and states[-1]["state"] != "notRunning":
        raise RuntimeError(f"{what}: the app was still running: {states}")
    idle = [s for s in states if s["state"] == "notRunning"]
    ends = [*idle[-1:], *messages[-1:]]
    if not ends:
        raise RuntimeError(f"{what}: no run of the app followed the input: {states}")
    first = min(
        (*(s for s in states if s["state"] != "notRunning"), *messages[:1]),
        key=lambda e: e["at"],
        default=ends[0],
    )
    last = max(ends, key=lambda e: e["at"])
    return {
        "ms": last["painted"] - start,
        "to_running_ms": first["at"] - start,
        "running_ms": last["at"] - first["at"],
        "to_paint_ms": last["painted"] - last["at"],
    }


@dataclass(frozen=True)
class Frame:
    """One websocket message, as the browser's network stack sent or received it."""

    at: float  # seconds, on the browser's network clock
    sent: bool
    kind: str  # the BackMsg's or ForwardMsg's type; a script_finished with its status
    size: int  # bytes


class Wire:
    """The app's websocket messages, with the time the browser's network stack (outside the
    page's busy main thread) sent or received each, through the DevTools protocol."""

    def __init__(self, page) -> None:
        self.frames: list[Frame] = []
        session = page.context.new_cdp_session(page)
        session.on("Network.webSocketFrameSent", lambda e: self._add(e, sent=True))
        session.on("Network.webSocketFrameReceived", lambda e: self._add(e, sent=False))
        session.send("Network.enable")

    def _add(self, event: dict, *, sent: bool) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        frame = event["response"]
        data = base64.b64decode(frame["payloadData"]) if frame["opcode"] == 2 else b""
        message = BackMsg() if sent else ForwardMsg()
        message.ParseFromString(data)  # the app's messages: anything else fails the benchmark
        kind: str = message.WhichOneof("type") or "?"
        if isinstance(message, ForwardMsg) and kind == "script_finished":
            kind += ":" + ForwardMsg.ScriptFinishedStatus.Name(message.script_finished)
        self.frames.append(Frame(event["timestamp"], sent, kind, len(data)))


def on_the_wire(frames: list[Frame], what: str) -> dict[str, float]:
    """From the first rerun request the browser sent to the last `script_finished` it received,
    on the network clock: the server's runs and the transfer of what they drew."""
    requests = [f for f in frames if f.sent and f.kind == "rerun_script"]
    finished = [f for f in frames if not f.sent and f.kind.startswith("script_finished")]
    if not requests or not finished or finished[-1].at < requests[0].at:
        raise RuntimeError(f"{what}: no rerun request and its end on the wire: {frames}")
    start, end = requests[0].at, finished[-1].at
    received = [f for f in frames if not f.sent and start <= f.at <= end]
    return {
        "server_ms": (end - start) * 1000,
        "received_kb": sum(f.size for f in received) / 1024,
        "messages": float(len(received)),
        "runs": float(sum(f.at >= start for f in finished)),
    }


@dataclass
class Probe:
    page: Any
    wire: Wire


def rerun_finished(probe: Probe, what: str) -> None:
    """Wait until, since the wire was cleared, the browser has sent a run's request and received
    that run's end: a change sent by a click is not in the app until then (a page that merely
    looks idle may not have started the run yet), and the next click must not race it."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while True:
        frames = list(probe.wire.frames)
        asked = [f.at for f in frames if f.sent and f.kind == "rerun_script"]
        ended = [f.at for f in frames if not f.sent and f.kind.startswith("script_finished")]
        if asked and ended and ended[-1] >= asked[0]:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: the app did not run, or did not finish: {frames}")
        probe.page.wait_for_timeout(20)


def untimed(probe: Probe, what: str, act: Callable[[], None]) -> None:
    """A step between the timed ones, done and settled before the next."""
    probe.page.evaluate("window.__bench.reset()")
    probe.wire.frames.clear()
    act()
    rerun_finished(probe, what)
    quiet(probe.page)


def wire_still(probe: Probe) -> None:
    """Wait, off the page, until no message has come for QUIET_MS: a clinician's browser does
    not have Playwright's queries of the page (its locators and `expect`s run in the page's
    main thread) competing with the drawing, so none is made until the interaction's runs are
    over on the wire."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        count = len(probe.wire.frames)
        probe.page.wait_for_timeout(QUIET_MS)  # waits in Playwright's driver, not in the page
        if len(probe.wire.frames) == count:
            return
    raise RuntimeError("the app's messages never stopped coming")


def timed(probe: Probe, what: str, act: Callable[[], None], effect: Callable[[], None]) -> dict:
    probe.page.evaluate("window.__bench.reset()")
    probe.wire.frames.clear()
    act()
    rerun_finished(probe, what)
    wire_still(probe)
    drawn(probe.page)
    effect()
    figures = measure(quiet(probe.page), what)
    return figures | on_the_wire(list(probe.wire.frames), what)


def live(page):
    return page.get_by_test_id("stMain").locator(LIVE)


def sign_in(page, name: str) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible(timeout=TIMEOUT_MS)
    page.get_by_label("Your name in the study", exact=True).fill(name)
    page.get_by_label("Passphrase", exact=True).fill(PASSPHRASE)
    page.get_by_role("button", name="Sign in", exact=True).click()
    drawn(page)


def open_band(page, url: str, study: BenchStudy, vid: str, rater: str) -> None:
    """The band's review screen, signing in first if the browser has no live session."""
    page.goto(f"{url}/review?{urlencode(study.address(vid, BAND))}")
    drawn(page)
    if page.get_by_role("heading", name="Sign in", level=1).count():
        sign_in(page, rater)
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name=TITLE, level=1)).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_role("heading", name="Your verdict")).to_be_visible(timeout=TIMEOUT_MS)


def choose(page, group: str, option: str) -> None:
    """Click `option` of the radio group labelled `group` (its input is hidden: its label)."""
    radios = live(page).get_by_role("radiogroup", name=group, exact=True)
    radios.get_by_text(option, exact=True).click()


def checked(page, group: str, option: str) -> None:
    from playwright.sync_api import expect

    radios = live(page).get_by_role("radiogroup", name=group, exact=True)
    expect(radios.get_by_role("radio", name=option, exact=True)).to_be_checked(timeout=TIMEOUT_MS)


def on_band(page, title: str, position: int, total: int) -> None:
    """The band at `position` of the queue is on screen: its title in the h1, its place."""
    from playwright.sync_api import expect

    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading", level=1)).to_have_text(title, timeout=TIMEOUT_MS)
    expect(main.get_by_text(f"band {position} of {total} in your queue")).to_be_visible(
        timeout=TIMEOUT_MS
    )


# The study -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One unreviewed band of the timed rater: where it is in the queue, the titles of the two
    bands that follow it there, and the proposal's bounds."""

    vid: str
    position: int  # from 1
    total: int
    titles: tuple[str, str]
    lower: int  # the proposal's lower bound
    upper: int


def targets(study: BenchStudy) -> list[Target]:
    from app_pages.queue_screen import rater_queue
    from fma_bands.core.actions import sub_action
    from fma_bands.core.bands import to_file
    from fma_bands.store.db import make_engine, session_scope

    engine = make_engine(study.database_url)
    with session_scope(engine) as s:
        rows = rater_queue(s, study.library, study.raters[0])
    engine.dispose()
    bands = [r.band for r in rows]
    found = []
    for vignette in unfinished_vignettes(study.library):
        at = bands.index((vignette.id, BAND))
        if rows[at].status != "to do" or at + 2 >= len(rows):
            continue
        proposal = vignette.proposal(BAND)
        assert proposal is not None
        band = to_file(proposal.acceptable)
        assert isinstance(band, dict), f"{BAND} is an interval band"
        found.append(
            Target(
                vignette.id,
                at + 1,
                len(rows),
                (
                    sub_action(rows[at + 1].sub_action).label,
                    sub_action(rows[at + 2].sub_action).label,
                ),
                band["min"],
                band["max"],
            )
        )
    return found


def _stored(study: BenchStudy, vid: str):
    """The rater's review of the band and their kept draft, read through the domain."""
    from fma_bands.store.db import make_engine, session_scope
    from fma_bands.study import drafts
    from fma_bands.study.reviews import current_review

    engine = make_engine(study.database_url)
    with session_scope(engine) as s:
        review = current_review(s, study.library, study.raters[0], vid, BAND)
        kept = drafts.restore(s, study.raters[0], vid, BAND)
    engine.dispose()
    return review, kept


# One repeat ------------------------------------------------------------------------------------


def one_repeat(probe: Probe, url: str, study: BenchStudy, target: Target) -> dict[str, dict]:
    """The four interactions on one band, each checked; their figures by interaction."""
    from playwright.sync_api import expect

    from fma_bands.core.labels import READING_WORDS

    page = probe.page
    rater = study.raters[0].pseudonym
    results: dict[str, dict] = {}

    open_band(page, url, study, target.vid, rater)
    on_band(page, TITLE, target.position, target.total)
    results["answer_a_question"] = timed(
        probe,
        "answer_a_question",
        lambda: choose(page, "Answer to question 1", ANSWERS[1]),
        lambda: checked(page, "Answer to question 1", ANSWERS[1]),
    )
    asked = [1]
    for number, answer in ANSWERS.items():
        group = f"Answer to question {number}"
        if number > 1 and live(page).get_by_role("radiogroup", name=group, exact=True).count():
            shown = str(READING_WORDS[answer]) if number == 5 else answer
            untimed(probe, group, functools.partial(choose, page, group, shown))
            checked(page, group, shown)
            asked.append(number)
    untimed(probe, "verdict", lambda: choose(page, "Verdict", AMEND))
    checked(page, "Verdict", AMEND)

    low = live(page).get_by_label("Lower bound", exact=True)
    expect(low).to_have_value(str(target.lower), timeout=TIMEOUT_MS)  # from the proposal
    new = target.lower + 1 if target.lower < target.upper else target.lower - 1
    low.fill(str(new))

    def kept_in_draft() -> None:
        expect(low).to_have_value(str(new), timeout=TIMEOUT_MS)
        _, kept = _stored(study, target.vid)
        if kept is None or kept.entries.get("band:lo") != new:
            raise RuntimeError(f"edit_a_bound: the draft does not hold {new}: {kept}")

    results["edit_a_bound"] = timed(
        probe, "edit_a_bound", lambda: low.press("Enter"), kept_in_draft
    )

    reason = live(page).get_by_label("Reason", exact=True)
    reason.fill(REASON)
    untimed(probe, "reason", reason.blur)
    # Everything on screen is in the app: its draft holds every answer (a click the app lost
    # would fail the submission, not the benchmark's figures).
    _, kept = _stored(study, target.vid)
    entries = kept.entries if kept is not None else {}
    wanted: dict[str, object] = {f"q{n}:choice": ANSWERS[n] for n in asked}
    wanted |= {"verdict": "AMEND", "band:lo": new, "reason": REASON}
    if any(entries.get(k) != v for k, v in wanted.items()):
        raise RuntimeError(f"the draft lacks what the screen shows: {entries}")
    submit = live(page).get_by_role("button", name=SUBMIT, exact=True)

    def submitted() -> None:
        expect(page.get_by_test_id("stMain").get_by_text(SUBMITTED)).to_be_visible(
            timeout=TIMEOUT_MS
        )
        on_band(page, target.titles[0], target.position + 1, target.total)
        review, _ = _stored(study, target.vid)
        if review is None or review.status != "submitted" or review.verdict != "AMEND":
            raise RuntimeError(f"submit_and_next: the review was not stored: {review}")
        wanted = {"min": min(new, target.upper), "max": max(new, target.upper)}
        if review.band != wanted or review.reason != REASON:
            raise RuntimeError(f"submit_and_next: the stored review is not the one sent: {review}")

    results["submit_and_next"] = timed(probe, "submit_and_next", submit.click, submitted)

    # From the band Submit and next opened, on to the one after it.
    next_button = live(page).get_by_role("button", name=NEXT, exact=True)
    results["next"] = timed(
        probe,
        "next",
        next_button.click,
        lambda: on_band(page, target.titles[1], target.position + 2, target.total),
    )
    return results


def machine(load_before: float) -> dict[str, Any]:
    """The machine a run was measured on, with its load before and after."""
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": load_before,
        "load_average_after": os.getloadavg()[0],
    }


# The cold pages ---------------------------------------------------------------------------------

PAGES = (
    "sign_in_cold",
    "sign_in_warm",
    "landing",
    "agreement_cold",
    "registry_cold",
    "agreement_warm",
    "registry_warm",
)


def ready(server: Server) -> float:
    """Seconds from the server answering to its saying the study is read (app_pages/server.py):
    a person opens the address after a start, not in its first instant."""
    from app_pages.server import READY

    started = time.monotonic()
    while READY not in server.log.read_text(errors="replace"):
        if server.process.poll() is not None or time.monotonic() - started > START_TIMEOUT_S:
            raise RuntimeError(f"the app did not read the study:\n{server.log.read_text()}")
        time.sleep(0.05)
    return time.monotonic() - started


def page_loads(page, url: str) -> dict[str, float]:
    """One server's first page loads as the coordinator, in the order of PAGES, each checked:
    its heading shown, the app idle, nothing stale."""
    from playwright.sync_api import expect

    def until(title: str, act: Callable[[], object]) -> float:
        started = time.perf_counter()
        act()
        heading = page.get_by_test_id("stMain").get_by_role("heading", name=title, level=1)
        expect(heading).to_be_visible(timeout=TIMEOUT_MS)
        drawn(page)
        return (time.perf_counter() - started) * 1000

    def follow(title: str) -> None:
        page.get_by_test_id("stSidebarNav").get_by_role("link", name=title, exact=True).click()

    def signing_in() -> None:
        page.get_by_label("Your name in the study", exact=True).fill("coordinator")
        page.get_by_label("Passphrase", exact=True).fill(PASSPHRASE)
        page.get_by_role("button", name="Sign in", exact=True).click()

    found = {
        "sign_in_cold": until("Sign in", lambda: page.goto(url)),
        "sign_in_warm": until("Sign in", lambda: page.goto(url)),
    }
    found["landing"] = until("Study admin", signing_in)
    for when in ("cold", "warm"):
        found[f"agreement_{when}"] = until("Agreement", lambda: follow("Agreement"))
        found[f"registry_{when}"] = until("Band registry", lambda: follow("Band registry"))
    return found


def run_pages(
    *, vignettes: int, raters: int, repeat: int, folder: Path, options: tuple[str, ...] = ()
) -> dict:
    """`--pages`: PAGES, on a fresh server and browser context per repeat."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} does not exist (apt-get install -y chromium)")
    study = build_study(folder, n_vignettes=vignettes, n_raters=raters, reuse=True)
    study = study.working_copy("browser-run.db")
    samples: dict[str, list[float]] = {name: [] for name in ("ready", *PAGES)}
    load_before = os.getloadavg()[0]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for _ in range(repeat):
                with serve(study, folder, options) as server:
                    samples["ready"].append(round(ready(server) * 1000, 1))
                    context = browser.new_context(viewport={"width": 1400, "height": 900})
                    try:
                        found = page_loads(context.new_page(), server.url)
                    finally:
                        context.close()
                for name, ms in found.items():
                    samples[name].append(round(ms, 1))
                print({name: v[-1] for name, v in samples.items()}, file=sys.stderr)
        finally:
            browser.close()
    return {
        "study": {"vignettes": vignettes, "raters": raters, "reviews": study.reviews},
        "machine": machine(load_before),
        "repeat": repeat,
        "server_options": list(options),
        "pages": {name: round(statistics.median(v), 1) for name, v in samples.items()},
        "samples": samples,
    }


def run(
    *, vignettes: int, raters: int, repeat: int, folder: Path, options: tuple[str, ...] = ()
) -> dict:
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise SystemExit(f"{CHROMIUM} does not exist (apt-get install -y chromium)")
    started = time.perf_counter()
    study = build_study(folder, n_vignettes=vignettes, n_raters=raters, reuse=True)
    built_s = time.perf_counter() - started
    study = study.working_copy("browser-run.db")
    bands = targets(study)
    if repeat > len(bands):
        raise SystemExit(f"--repeat {repeat} needs {repeat} unreviewed bands: use more vignettes")
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in INTERACTIONS}
    load_before = os.getloadavg()[0]
    with (
        serve(study, folder, options) as server,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.add_init_script(INIT_SCRIPT)
            probe = Probe(page, Wire(page))
            for target in bands[:repeat]:
                for name, figures in one_repeat(probe, server.url, study, target).items():
                    for key, value in figures.items():
                        samples[name].setdefault(key, []).append(round(value, 1))
                last = {name: {k: v[-1] for k, v in f.items()} for name, f in samples.items()}
                print(target.vid, last, file=sys.stderr)
        finally:
            browser.close()
    return {
        "study": {
            "vignettes": vignettes,
            "raters": raters,
            "bands": sum(len(v.proposals) for v in study.library),
            "reviews": study.reviews,
            "built_in_s": round(built_s, 1),
        },
        "machine": machine(load_before),
        "repeat": repeat,
        "band": BAND,
        "server_options": list(options),
        "interactions": {
            name: {key: round(statistics.median(values), 1) for key, values in figures.items()}
            for name, figures in samples.items()
        },
        "samples": samples,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vignettes", type=int, default=300)
    parser.add_argument("--raters", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", dest="out", type=Path, help="write the results here")
    parser.add_argument(
        "--keep", type=Path, help="build the study here and keep it (reused if already built)"
    )
    parser.add_argument(
        "--pages",
        action="store_true",
        help="time the coordinator's first pages (sign-in, Agreement, Band registry) on a "
        "fresh server, cold and warm, instead of the review page's interactions",
    )
    parser.add_argument(
        "--server-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one more of Streamlit's options for the server, e.g. runner.postScriptGC=true "
        "(the collection after every run, which serve turns off)",
    )
    options = parser.parse_args(argv)
    folder = options.keep or Path(tempfile.mkdtemp(prefix="fma-bench-browser-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        results = (run_pages if options.pages else run)(
            vignettes=options.vignettes,
            raters=options.raters,
            repeat=options.repeat,
            folder=folder,
            options=tuple(options.server_option),
        )
    finally:
        if not options.keep:
            shutil.rmtree(folder, ignore_errors=True)
    text = json.dumps(results, indent=2)
    if options.out:
        options.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
