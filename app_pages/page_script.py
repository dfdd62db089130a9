"""The small scripts the pages run in the browser itself, for what only the browser can do: hand
on a click made while leaving a field (every signed-in page), open a new band at its top
(Streamlit keeps the page's scroll position when the band changes), stop a click on the band
left while the next one loads (it would change a band no longer on screen), press the screen's
buttons from the keyboard, and warn before a reload or a closed tab would lose text typed into a
field but not yet kept (Streamlit sends a field's text to the server only when the field loses
focus, or on Enter, or Ctrl+Enter in a text area, and the server keeps it in the run that sending
starts).

Every script is idempotent: its listeners are installed once per browser tab and read the
band on screen from what the latest run of the page left in `window.fmaBandsReview`."""

import base64
import json
import re
from dataclasses import dataclass

import streamlit as st

# The container holding the rater's form on the review page.
FORM_KEY = "review_form"


@dataclass(frozen=True)
class Shortcut:
    key: str  # the letter pressed with Alt (Option on a Mac)
    label: str  # the button's label, as the page draws it
    widget: str  # the button's widget key


def key_class(widget: str) -> str:
    """The class Streamlit gives the element holding the widget with key `widget`."""
    return "st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", widget.strip())


def shortcut_words(shortcuts: list[Shortcut]) -> str:
    """The shortcuts in a line a person reads."""
    keys = " · ".join(f"Alt+{s.key} {s.label}" for s in shortcuts)
    return f"Keyboard shortcuts: {keys} (Option instead of Alt on a Mac)."


_TOP = """
  // A new band (or a page newly confirming something) opens at its top, with its title and
  // the confirmation in view.
  if (w.fmaBandsShownBand !== config.band) {
    w.fmaBandsShownBand = config.band;
    const top = () => {
      const main = document.querySelector('[data-testid="stMain"]');
      if (main) main.scrollTop = 0;
    };
    top();
    // Streamlit may still be replacing the last band's elements: once this run ends, top
    // again. Only this run's end: a run already over, or the person's first click or key, ends
    // the watch, so the page never jumps under their hand at the end of a later run.
    const app = document.querySelector('[data-testid="stApp"]');
    if (app && app.getAttribute("data-test-script-state") !== "notRunning") {
      const stop = () => {
        watch.disconnect();
        document.removeEventListener("pointerdown", stop, true);
        document.removeEventListener("keydown", stop, true);
      };
      const watch = new MutationObserver(() => {
        if (app.getAttribute("data-test-script-state") === "notRunning") {
          stop();
          top();
        }
      });
      watch.observe(app, { attributes: true, attributeFilter: ["data-test-script-state"] });
      document.addEventListener("pointerdown", stop, true);
      document.addEventListener("keydown", stop, true);
      setTimeout(stop, 15000);
    }
  }
"""

_SCRIPT = """
<script>
(() => {
  const config = %(config)s;
  const w = window;
  w.fmaBandsReview = config;
  const onReview = () => w.location.pathname.replace(/\\/+$/, "").endsWith("/review");

%(top)s
  // The band being left is off the screen once this band's run has drawn it.
  if (w.fmaBandsLeaving && w.fmaBandsLeaving.band !== config.band) w.fmaBandsLeaving = null;
  if (w.fmaBandsListening) return;
  w.fmaBandsListening = true;

  // Next band and Previous band: until the run they start has drawn the next band, the band
  // left is still on screen, and a click on one of its fields reaches the server with the
  // move, where nothing tells it from a change made before the move: it would change a band
  // the rater has left. Such a click is stopped here (the server refuses one that comes
  // later); a click on the band being opened, whose keys name it, is not.
  const widgetClass = (band) => "st-key-" + band.replace(/[^a-zA-Z0-9_-]/g, "-") + "-";
  document.addEventListener(
    "click",
    (event) => {
      if (!onReview() || !event.target.closest) return;
      const button = event.target.closest("button");
      const moves = (w.fmaBandsReview.moves || []).map((c) => "." + CSS.escape(c)).join(", ");
      if (!button || button.disabled || !moves || !button.closest(moves)) return;
      const leaving = { band: w.fmaBandsReview.band, widgets: widgetClass(w.fmaBandsReview.band) };
      w.fmaBandsLeaving = leaving;
      // Not past the run's end, whatever it drew (a move that failed leaves the band on screen).
      const app = document.querySelector('[data-testid="stApp"]');
      let ran = false;
      const over = () => {
        watch.disconnect();
        if (w.fmaBandsLeaving === leaving) w.fmaBandsLeaving = null;
      };
      const watch = new MutationObserver(() => {
        const state = app.getAttribute("data-test-script-state");
        if (state !== "notRunning") ran = true;
        else if (ran) over();
      });
      const states = { attributes: true, attributeFilter: ["data-test-script-state"] };
      if (app) watch.observe(app, states);
      setTimeout(over, 10000);
    },
    true,
  );
  const stopLeft = (event) => {
    const leaving = w.fmaBandsLeaving;
    if (!leaving || !event.target.closest) return;
    if (event.target.closest('[class*="' + leaving.widgets + '"]')) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  };
  for (const type of ["pointerdown", "mousedown", "pointerup", "mouseup", "click", "keydown"]) {
    document.addEventListener(type, stopLeft, true);
  }

  const textField = (el) =>
    !!el &&
    (el.tagName === "TEXTAREA" ||
      (el.tagName === "INPUT" &&
        el.getAttribute("role") !== "combobox" &&
        !["password", "checkbox", "radio", "hidden", "button", "submit"].includes(el.type)));
  // Fields typed into whose text Streamlit has not yet sent to the server.
  const typed = new Set();
  document.addEventListener(
    "input",
    (event) => {
      const field = event.target;
      if (onReview() && textField(field) && field.closest('[data-testid="stMain"]')) {
        typed.add(field);
      }
    },
    true,
  );
  // Streamlit sends a field's text when it loses focus.
  document.addEventListener("focusout", (event) => typed.delete(event.target), true);
  document.addEventListener(
    "keydown",
    (event) => {
      const field = event.target;
      // Enter sends a one-line field's text; Ctrl+Enter (Cmd+Enter) a text area's.
      if (event.key === "Enter" && typed.has(field)) {
        if (field.tagName === "INPUT" || event.ctrlKey || event.metaKey) typed.delete(field);
      }
      if (!event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || !onReview()) return;
      const wanted = (w.fmaBandsReview.buttons || {})[event.code];
      if (!wanted) return;
      const holder = Array.from(
        document.querySelectorAll('[data-testid="stMain"] .' + CSS.escape(wanted)),
      ).find((el) => !el.closest('[data-stale="true"]'));
      const button = holder && holder.querySelector("button");
      if (!button || button.disabled) return;
      event.preventDefault();
      event.stopPropagation();
      // As a click does, a shortcut first takes the focus from the field being typed in, so
      // Streamlit sends its text before the button's press.
      const active = document.activeElement;
      if (textField(active)) active.blur();
      button.click();
    },
    true,
  );
  // The latest of the form's markers (kept_marker): live once this run has drawn it, until
  // then the last run's, now stale, which still says what was last kept.
  const latest = (found) => found.find((el) => !el.closest('[data-stale="true"]')) || found[0];
  const named = (field) => field.getAttribute("aria-label") || field.name || "a field";
  // The text and number fields whose value would be lost: typed and not yet sent, or sent and
  // not yet kept (the run the sending started keeps it, and a reload stops that run).
  const unkept = () => {
    for (const field of Array.from(typed)) {
      if (!field.isConnected) typed.delete(field);
    }
    const lost = Array.from(typed, named);
    const marker = latest(Array.from(document.querySelectorAll("[data-fma-bands-kept]")));
    if (!marker) return lost;
    let kept;
    try {
      kept = JSON.parse(atob(marker.getAttribute("data-fma-bands-kept")));
    } catch (error) {
      return lost.concat(["the review form"]);
    }
    const elsewhere = Number(marker.getAttribute("data-fma-bands-elsewhere")) || 0;
    if (elsewhere === 1) lost.push("a flag's note on another band");
    if (elsewhere > 1) lost.push(`flags' notes on ${elsewhere} other bands`);
    for (const [holderClass, text] of Object.entries(kept)) {
      const holder = latest(
        Array.from(document.querySelectorAll('[data-testid="stMain"] .' + CSS.escape(holderClass))),
      );
      const field = holder && holder.querySelector(
        'textarea, input[type="text"]:not([role="combobox"]), input[type="number"]',
      );
      if (!field) continue;
      // A bound is kept as a number, shown as its text ("21" for 21.0).
      const shown =
        typeof text === "number" ? (field.value === "" ? null : Number(field.value)) : field.value;
      if (shown !== text && !lost.includes(named(field))) lost.push(named(field));
    }
    return lost;
  };
  w.fmaBandsUnkept = unkept;
  w.addEventListener("beforeunload", (event) => {
    if (unkept().length > 0) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
})();
</script>
"""


def review_script(band: str, shortcuts: list[Shortcut], moves: list[str]) -> None:
    """Run the review page's script for the band whose screen key is `band` (never the
    vignette's id: the browser sees it); `moves`: the widget keys of the buttons that open
    another band."""
    config = {
        "band": band,
        "buttons": {f"Key{s.key.upper()}": key_class(s.widget) for s in shortcuts},
        "moves": [key_class(m) for m in moves],
    }
    # Nothing in the configuration may close the script element early.
    encoded = json.dumps(config).replace("<", "\\u003c")
    st.html(_SCRIPT % {"config": encoded, "top": _TOP}, unsafe_allow_javascript=True)


_GUARD = """
<script data-fma-bands-guard>
(() => {
  const w = window;
  if (w.fmaBandsGuarding) return;
  w.fmaBandsGuarding = true;
  const fragments = %(fragments)s;
  // Streamlit sends the widgets changed within one task together, as one run, and the first
  // change decides which: a field inside a fragment (the review form, a due date) left by
  // pressing a button or link outside it makes that click part of the fragment's run, where it
  // does nothing (or acts on a later run). A tap on a touchpad presses and releases at once,
  // before the field's value is sent. Such a click is held back and made again once the value
  // has gone; a click inside the field's own fragment needs no wait and gets none.
  const editable = (el) =>
    !!el &&
    !!el.closest &&
    (el.tagName === "TEXTAREA" ||
      el.isContentEditable ||
      (el.tagName === "INPUT" &&
        !["checkbox", "radio", "hidden", "button", "submit"].includes(el.type)));
  const fragmentOf = (el) =>
    fragments.map((holder) => el.closest("." + CSS.escape(holder))).find((found) => found) ||
    null;
  // A password box's "Show password" button takes the focus when Tab leaves the box, and
  // Streamlit then never sends what was typed (to it the box is still being edited): a
  // passphrase typed to sign again, then Tab, then Submit, was refused as empty. Tab goes past
  // the button instead, leaving the box as a click elsewhere does; a click still shows the
  // passphrase.
  const pastToggles = () => {
    for (const toggle of document.querySelectorAll(
      'button[aria-label="Show password"]:not([tabindex="-1"]), ' +
        'button[aria-label="Hide password"]:not([tabindex="-1"])',
    )) {
      toggle.tabIndex = -1;
    }
  };
  pastToggles();
  new MutationObserver(pastToggles).observe(document.body, { childList: true, subtree: true });
  let left = -Infinity;
  let leftIn = null;
  document.addEventListener(
    "focusout",
    (event) => {
      if (!editable(event.target)) return;
      left = performance.now();
      leftIn = fragmentOf(event.target);
    },
    true,
  );

  // On every page but Review a band (whose fields are kept as they are left, and whose own
  // script warns of what is not), a text box belongs to a form and is sent only by its button:
  // text typed into one and not sent is lost by leaving the page. The page asks first.
  const onReview = () => w.location.pathname.replace(/\\/+$/, "").endsWith("/review");
  const writing = (el) =>
    !!el &&
    (el.tagName === "TEXTAREA" ||
      (el.tagName === "INPUT" &&
        el.getAttribute("role") !== "combobox" &&
        ["text", "number", "email", "url", "search"].includes(el.type)));
  const typed = new Set();
  document.addEventListener(
    "input",
    (event) => {
      const field = event.target;
      if (!onReview() && writing(field) && field.closest('[data-testid="stMain"]')) {
        typed.add(field);
      }
    },
    true,
  );
  // A date is typed into segments (year, month, day), not into a box, and is sent when its
  // field is left, which sets nothing: the button beside it does. A date field left changed is
  // owed until a button beside it (in its own block) is pressed.
  const dateGroup = (el) =>
    (el && el.closest && el.closest('[data-testid="stDateInput"] [role="group"]')) || null;
  const dateSeen = new WeakMap();
  document.addEventListener(
    "focusin",
    (event) => {
      const group = dateGroup(event.target);
      if (group && !onReview()) dateSeen.set(group, group.textContent);
    },
    true,
  );
  document.addEventListener(
    "focusout",
    (event) => {
      const group = dateGroup(event.target);
      if (group && dateSeen.has(group) && dateSeen.get(group) !== group.textContent) {
        typed.add(group);
      }
    },
    true,
  );
  const besideButton = (field, button) => {
    const block = field.closest('[data-testid="stVerticalBlock"]');
    return !!block && block.contains(button);
  };
  // A form's button, or Enter in it, sends its fields. A form sent and refused keeps the text
  // and says why inside it: the text is still not sent. Sent and taken, nothing is owed.
  const sentOnce = new Set();
  const sent = (form) => {
    for (const field of Array.from(typed)) {
      if (form.contains(field)) {
        typed.delete(field);
        sentOnce.add(field);
      }
    }
  };
  // What a page itself says is chosen and not yet set (a container keyed "unsent:" and the
  // field's label, drawn while the server holds such a choice): owed whatever this script saw
  // typed.
  const MARK = "st-key-unsent-";
  const marked = () =>
    Array.from(document.querySelectorAll(`[data-testid="stMain"] [class*="${MARK}"]`))
      .filter((el) => !el.closest('[data-stale="true"]'))
      .map((el) => {
        const found = Array.from(el.classList).find((c) => c.startsWith(MARK));
        return `"${found.slice(MARK.length).replace(/-/g, " ")}"`;
      });
  const refused = (field) => {
    const form = field.closest('[data-testid="stForm"]');
    return (
      !!form &&
      Array.from(form.querySelectorAll('[data-testid="stAlertContentError"]')).some(
        (el) => !el.closest('[data-stale="true"]'),
      )
    );
  };
  document.addEventListener(
    "keydown",
    (event) => {
      const form = event.target.closest && event.target.closest('[data-testid="stForm"]');
      if (!form || event.key !== "Enter") return;
      if (event.target.tagName === "INPUT" || event.ctrlKey || event.metaKey) sent(form);
    },
    true,
  );
  const filled = (field) =>
    field.getAttribute("role") === "group"
      ? !!field.querySelector('[role="spinbutton"]:not([data-placeholder="true"])')
      : !!field.value.trim();
  const unsent = () => {
    if (onReview()) return [];
    const names = [];
    for (const field of Array.from(typed).concat(Array.from(sentOnce))) {
      if (!field.isConnected) {
        typed.delete(field);
        sentOnce.delete(field);
      } else if (filled(field) && (typed.has(field) || refused(field))) {
        const name = `"${field.getAttribute("aria-label") || "a box"}"`;
        if (!names.includes(name)) names.push(name);
      }
    }
    for (const name of marked()) {
      if (!names.includes(name)) names.push(name);
    }
    return names;
  };
  w.fmaBandsUnsent = unsent;
  w.addEventListener("beforeunload", (event) => {
    if (unsent().length > 0) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
  // What leaves the page in the app: a link (the menu's, a page's) or signing out.
  const LEAVING = [
    'a[href]:not([target="_blank"])',
    ".st-key-sign_out button",
    ".st-key-sign_out-anyway button",
  ].join(", ");
  document.addEventListener(
    "click",
    (event) => {
      if (!event.isTrusted) return;
      const button = event.target.closest && event.target.closest("button");
      const form = button && button.closest('[data-testid="stForm"]');
      if (form) sent(form);
      for (const field of Array.from(typed)) {
        if (button && field.getAttribute("role") === "group" && besideButton(field, button)) {
          typed.delete(field);
        }
      }
      const leaving = event.target.closest && event.target.closest(LEAVING);
      const names = leaving ? unsent() : [];
      if (names.length > 0) {
        const question =
          `What you typed in ${names.join(", ")} is not sent: leaving this page loses it. ` +
          "Leave anyway?";
        if (!w.confirm(question)) {
          event.preventDefault();
          event.stopImmediatePropagation();
          return;
        }
        typed.clear();
        sentOnce.clear();
      }
      if (performance.now() - left > 300) return;
      const target = event.target.closest("button, a[href]");
      if (!target || (leftIn && leftIn.contains(target))) return;
      left = -Infinity;
      event.preventDefault();
      event.stopImmediatePropagation();
      // The field's value, once sent, may redraw the button (a run of its fragment): the
      // button with the same key is the one pressed; a key that names another band or row
      // finds nothing, and the click is dropped rather than made on something else.
      const holder = target.closest('[class*="st-key-"]');
      const keyClass =
        holder && Array.from(holder.classList).find((c) => c.startsWith("st-key-"));
      setTimeout(() => {
        const again = target.isConnected
          ? target
          : keyClass && document.querySelector(`.${CSS.escape(keyClass)} :is(button, a[href])`);
        if (again) again.click();
      }, 50);
    },
    true,
  );
})();
</script>
"""
# Hidden, as the cookie's script is.
_GUARD_HIDDEN = (
    "<style>div[data-testid='stElementContainer']:has(script[data-fma-bands-guard])"
    " { display: none; }</style>"
)


def click_guard() -> None:
    """Install, once per browser tab, the script that keeps a click made while leaving a field
    from being lost, and asks before leaving a page would lose text typed into a form and not
    sent (_GUARD). Drawn by every signed-in page, in the sidebar, where a hidden
    element shifts nothing."""
    fragments = json.dumps([key_class(FORM_KEY)])
    st.sidebar.html(_GUARD_HIDDEN + _GUARD % {"fragments": fragments}, unsafe_allow_javascript=True)


_AT_TOP = """
<script>
(() => {
  const config = %(config)s;
  const w = window;
%(top)s
})();
</script>
"""


def top_script(shown: str) -> None:
    """Open the page at its top once for `shown`, what it newly confirms (a new text each time:
    the browser runs a script again only when its text changed). Streamlit keeps the scroll
    position of the page it came from."""
    encoded = json.dumps({"band": shown}).replace("<", "\\u003c")
    st.html(_AT_TOP % {"config": encoded, "top": _TOP}, unsafe_allow_javascript=True)


_REFUSED = """
<script>
(() => {
  // Refusal %(count)d: bring its first message into view once the form is drawn (a Submit
  // pressed from the keyboard may have been far from it).
  const app = document.querySelector('[data-testid="stApp"]');
  const started = Date.now();
  const show = () => {
    const running = app && app.getAttribute("data-test-script-state") !== "notRunning";
    if (running && Date.now() - started < 5000) {
      setTimeout(show, 50);
      return;
    }
    const form = document.querySelector('[data-testid="stMain"] .%(form)s');
    const message = form && Array.from(
      form.querySelectorAll('[data-testid="stAlertContentError"]'),
    ).find((el) => !el.closest('[data-stale="true"]'));
    if (message) message.scrollIntoView({ block: "center" });
  };
  setTimeout(show, 0);
})();
</script>
"""


# Hidden, as the cookie's script is; the text is base64 of ASCII JSON, so no character of what
# a rater typed is ever markup or an attribute's end.
_KEPT = (
    "<style>div[data-testid='stElementContainer']:has(div[data-fma-bands-kept])"
    " {{ display: none; }}</style>"
    '<div data-fma-bands-kept="{kept}" data-fma-bands-elsewhere="{elsewhere}"></div>'
)


def kept_marker(kept: dict[str, str | float], *, elsewhere: int = 0) -> None:
    """Tell the page's script what the store keeps of each text and number field of the form
    ({widget key: text or number}). What the browser has sent is kept only once the run it
    started has kept it, and a reload or a closed tab stops that run: the script warns while a
    field on screen differs from what this says. `elsewhere`: how many flags' notes not yet
    sent this session holds for other bands, which a reload would lose too."""
    mine = {key_class(widget): text for widget, text in kept.items()}
    encoded = base64.b64encode(json.dumps(mine).encode()).decode()
    st.html(_KEPT.format(kept=encoded, elsewhere=int(elsewhere)))


def refused_script(count: int) -> None:
    """Scroll the review form's first message into view after the `count`th refused Submit
    (the count makes each refusal's script new, so the browser runs it again)."""
    st.html(_REFUSED % {"count": count, "form": key_class(FORM_KEY)}, unsafe_allow_javascript=True)
