// deskpilot dashboard: what every page shares. No framework, no build step.
// The CSRF token is in <meta name="csrf-token">; forms carry it as a hidden field, and
// fetch() calls send it as X-CSRF-Token.
//
// Every page also listens to /events (server-sent events): a "state" event carries the
// pending confirmations, the halt, the takeover hold and a sessions revision. From it this
// file shows a notification with Approve / Deny for each waiting confirmation (on every page
// but the confirmations page, whose list is itself live), shows or hides the halt and
// takeover banners, and re-dispatches the data as a `dp:state` CustomEvent on window for
// pages that want it. Whatever a button here does, its failure is shown on the page, never
// only in a console.
"use strict";
window.deskpilot = window.deskpilot || {};
(function (dp) {
  dp.csrf = function () {
    var m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.getAttribute("content") : "";
  };
  dp.post = function (url, data) {
    var body = new URLSearchParams(data || {});
    return fetch(url, {
      method: "POST",
      headers: { "X-CSRF-Token": dp.csrf(), "Content-Type": "application/x-www-form-urlencoded" },
      body: body,
      credentials: "same-origin",
    });
  };
  dp.notify = function (text, id) {
    var box = document.getElementById("notifications");
    if (!box) return null;
    if (id && document.getElementById(id)) return document.getElementById(id);
    var note = document.createElement("div");
    note.className = "note";
    if (id) note.id = id;
    note.textContent = text;
    box.appendChild(note);
    return note;
  };

  // ------------------------------------------------------------------ posting, with words
  // The words the server sent with the last state (buttons, countdowns, outcomes).
  dp.labels = {};
  function label(name, fields) {
    var text = dp.labels[name] || name;
    Object.keys(fields || {}).forEach(function (k) {
      text = text.split("{" + k + "}").join(String(fields[k]));
    });
    return text;
  }
  dp.label = label;

  // Why a response failed, in the server's own words: JSON {message}, the denied page's
  // message, or the gate's plain text; else the HTTP status.
  function reasonOf(response, text) {
    var type = response.headers.get("content-type") || "";
    if (type.indexOf("application/json") >= 0) {
      try {
        var body = JSON.parse(text);
        if (body && body.message) return body.message;
      } catch (e) { /* fall through */ }
    }
    if (type.indexOf("text/html") >= 0) {
      var doc = new DOMParser().parseFromString(text, "text/html");
      var found = doc.getElementById("denied-message") || doc.getElementById("answer-message");
      if (found && found.textContent.trim()) return found.textContent.trim();
    }
    if (text && text.length < 400 && type.indexOf("text/plain") >= 0) return text.trim();
    return "HTTP " + response.status + " " + (response.statusText || "");
  }

  // POST asking for JSON; resolves to {ok, status, body, message}, never rejects.
  dp.postJSON = function (url, data) {
    return fetch(url, {
      method: "POST",
      headers: {
        "X-CSRF-Token": dp.csrf(),
        "Content-Type": "application/x-www-form-urlencoded",
        "Accept": "application/json",
      },
      body: new URLSearchParams(data || {}),
      credentials: "same-origin",
    }).then(function (response) {
      return response.text().then(function (text) {
        var body = null;
        try { body = JSON.parse(text); } catch (e) { body = null; }
        var ok = response.ok && !(body && body.ok === false);
        return {
          ok: ok,
          status: response.status,
          body: body,
          message: ok ? (body && body.message) || "" : reasonOf(response, text),
        };
      });
    }, function (error) {
      return { ok: false, status: 0, body: null, message: String(error && error.message || error) };
    });
  };

  // One answer to one confirmation (the same one-time answer as `deskpilot confirm`).
  dp.answer = function (id, verb) {
    return dp.postJSON("/confirmations/" + encodeURIComponent(id) + "/" + verb, {});
  };

  // ------------------------------------------------------------------ countdowns
  function tickCountdowns() {
    if (!dp.labels.left) return;
    var now = Date.now();
    document.querySelectorAll("[data-expires]").forEach(function (el) {
      var left = Math.floor((Number(el.getAttribute("data-expires")) - now) / 1000);
      el.textContent = left > 0 ? label("left", { seconds: left }) : label("expired");
      el.classList.toggle("expired", left <= 0);
    });
  }
  dp.tickCountdowns = tickCountdowns;

  // ------------------------------------------------------------------ banners
  function header() { return document.querySelector("header.top"); }

  function placeBanner(el) {
    var top = header();
    var after = document.getElementById("halt-banner");
    if (el.id === "halt-banner" || !after) after = top;
    if (after && after.parentNode) after.parentNode.insertBefore(el, after.nextSibling);
    else document.body.insertBefore(el, document.body.firstChild);
  }

  // One banner under the header: made on first need (``build`` adds its own parts after the
  // text), removed when its state is gone, its text refreshed on every state.
  function banner(id, kind, role, state, build) {
    var el = document.getElementById(id);
    if (!state) {
      if (el) el.remove();
      return null;
    }
    if (!el) {
      el = document.createElement("div");
      el.className = "banner " + kind;
      el.id = id;
      el.setAttribute("role", role);
      var text = document.createElement("span");
      text.className = "banner-text";
      el.appendChild(text);
      build(el);
      placeBanner(el);
    }
    el.querySelector(".banner-text").textContent = state.text;
    return el;
  }

  function unhaltForm(el) {
    var form = document.createElement("form");
    form.method = "post";
    form.action = "/unhalt";
    form.className = "unhalt";
    [["csrf", dp.csrf()], ["next", location.pathname]].forEach(function (pair) {
      var input = document.createElement("input");
      input.type = "hidden";
      input.name = pair[0];
      input.value = pair[1];
      form.appendChild(input);
    });
    var button = document.createElement("button");
    button.type = "submit";
    button.id = "unhalt";
    form.appendChild(button);
    el.appendChild(form);
    var error = document.createElement("span");
    error.className = "banner-error error";
    error.hidden = true;
    el.appendChild(error);
  }

  function haltBanner(halt) {
    var el = banner("halt-banner", "halt", "alert", halt, unhaltForm);
    if (!el) return;
    el.setAttribute("data-cause", halt.cause || "");
    var unhalt = el.querySelector("#unhalt");
    if (unhalt && dp.labels.unhalt) unhalt.textContent = dp.labels.unhalt;
  }

  function takeoverBanner(hold) {
    var el = banner("takeover-banner", "takeover", "status", hold, function (box) {
      box.appendChild(document.createElement("a"));
    });
    if (!el) return;
    el.setAttribute("data-session", hold.sessionId);
    var a = el.querySelector("a");
    a.href = "/sessions/" + encodeURIComponent(hold.sessionId);
    a.textContent = label("openSession");
  }

  // Unhalt without leaving the page; a refusal (another machine, a stale form) is shown in
  // the banner itself.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || form.getAttribute("action") !== "/unhalt") return;
    event.preventDefault();
    var banner = document.getElementById("halt-banner");
    var button = form.querySelector("button");
    if (button) button.disabled = true;
    dp.postJSON("/unhalt", { next: location.pathname }).then(function (result) {
      if (button) button.disabled = false;
      if (result.ok) {
        if (banner) banner.remove();
        var note = dp.notify(result.message, "unhalted-note");
        if (note) {
          note.textContent = result.message;
          note.classList.add("ok");
          setTimeout(function () { note.remove(); }, 8000);
        }
        return;
      }
      var error = banner && banner.querySelector(".banner-error");
      if (error) {
        error.textContent = label("failed", { error: result.message });
        error.hidden = false;
      }
    });
  });

  // ------------------------------------------------------------------ confirmation notes
  var ANSWERED_OK_MS = 5000;
  var ANSWERED_ERROR_MS = 15000;

  function noteId(id) { return "note-" + id; }

  function finishNote(note, text, ok) {
    note.setAttribute("data-answered", ok ? "ok" : "error");
    note.classList.add(ok ? "ok" : "failed");
    var result = note.querySelector(".result");
    result.textContent = text;
    result.hidden = false;
    setTimeout(function () { note.remove(); }, ok ? ANSWERED_OK_MS : ANSWERED_ERROR_MS);
  }

  function answerFromNote(note, c, verb) {
    // kept while the answer is on its way: the state stream may report the confirmation
    // gone (approved and run) before the answer's own response says so
    note.setAttribute("data-answering", verb);
    note.querySelectorAll("button.answer").forEach(function (b) { b.disabled = true; });
    dp.answer(c.id, verb).then(function (result) {
      if (result.ok) {
        finishNote(note, result.message, true);
        return;
      }
      finishNote(note, label("failed", { error: result.message }), false);
    });
  }

  function confirmationNote(c) {
    var box = document.getElementById("notifications");
    if (!box || document.getElementById(noteId(c.id))) return;
    var note = document.createElement("div");
    note.className = "note confirmation";
    note.id = noteId(c.id);
    note.setAttribute("role", "alert");
    note.setAttribute("data-id", c.id);
    var head = document.createElement("p");
    head.className = "what";
    head.textContent = label("notify", { risk: c.risk, summary: c.summary });
    note.appendChild(head);
    // where (app and window), why, and the session as a link to its page
    var meta = document.createElement("p");
    meta.className = "meta muted";
    meta.appendChild(document.createTextNode(c.where + " · " + c.why + " · "));
    var sessionLink = document.createElement("a");
    sessionLink.className = "session";
    sessionLink.href = c.sessionUrl || ("/sessions/" + encodeURIComponent(c.sessionId));
    sessionLink.title = c.sessionId;
    sessionLink.textContent = label("session", { id: c.sessionId });
    meta.appendChild(sessionLink);
    note.appendChild(meta);
    var expires = document.createElement("p");
    expires.className = "countdown";
    expires.setAttribute("data-expires", String(c.expiresAt));
    note.appendChild(expires);
    var buttons = document.createElement("div");
    buttons.className = "buttons";
    [["approve", "primary"], ["deny", "danger"]].forEach(function (pair) {
      var b = document.createElement("button");
      b.type = "button";
      b.className = "answer " + pair[0] + " " + pair[1];
      b.textContent = label(pair[0]);
      b.addEventListener("click", function () { answerFromNote(note, c, pair[0]); });
      buttons.appendChild(b);
    });
    note.appendChild(buttons);
    var result = document.createElement("p");
    result.className = "result";
    result.hidden = true;
    note.appendChild(result);
    box.appendChild(note);
  }

  function confirmationNotes(list) {
    var page = document.body.getAttribute("data-page");
    var pending = {};
    (list || []).forEach(function (c) { pending[c.id] = true; });
    // a note whose confirmation is no longer waiting goes, unless it shows an answer
    document.querySelectorAll("#notifications .note.confirmation").forEach(function (note) {
      var id = note.getAttribute("data-id");
      var answering = note.hasAttribute("data-answering") || note.hasAttribute("data-answered");
      if (!pending[id] && !answering) note.remove();
    });
    if (page === "confirmations") return; // the page's own list is live
    (list || []).forEach(confirmationNote);
  }

  // ------------------------------------------------------------------ the stream
  var offline = null;
  var RECONNECT_MS = 3000;
  function showOffline(on) {
    if (on && !offline) {
      offline = dp.notify(label("offline"), "offline-note");
      if (offline) offline.classList.add("failed");
    } else if (!on && offline) {
      offline.remove();
      offline = null;
    }
  }

  function onState(data) {
    dp.labels = data.labels || dp.labels;
    dp.state = data;
    showOffline(false);
    haltBanner(data.halt);
    takeoverBanner(data.takeover);
    confirmationNotes(data.confirmations);
    tickCountdowns();
    window.dispatchEvent(new CustomEvent("dp:state", { detail: data }));
  }

  function connect() {
    if (!window.EventSource || !dp.csrf()) return; // not logged in: nothing to listen to
    var source = new EventSource("/events");
    dp.events = source;
    source.addEventListener("state", function (event) {
      try {
        onState(JSON.parse(event.data));
      } catch (e) {
        showOffline(true);
      }
    });
    source.addEventListener("error", function () {
      // the browser reconnects by itself after a dropped stream; say so while it is away.
      // A refused stream (the server restarted: the session is gone) is closed for good,
      // so try again a little later (the page then says why, e.g. "log in again").
      if (dp.labels.offline) showOffline(true);
      if (source.readyState === EventSource.CLOSED) setTimeout(retry, RECONNECT_MS);
    });
  }

  // After a refused stream: a dashboard that no longer knows this browser (restarted, logged
  // out) says so in words, and there is nothing to retry; anything else, connect again.
  function retry() {
    fetch("/readiness/status", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (response.status === 401 || response.status === 403) {
          return response.text().then(function (text) {
            showOffline(true);
            if (offline) offline.textContent = text;
          });
        }
        connect();
      }, function () { setTimeout(retry, RECONNECT_MS); });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", connect);
  } else {
    connect();
  }
  setInterval(tickCountdowns, 1000);
})(window.deskpilot);
