// deskpilot dashboard: a session's page. The timeline is live (server-sent events from
// /sessions/<id>/stream: "card" adds or replaces one card, "state" replaces the head and the
// controls, "end" closes the stream), and the controls post with fetch so a refusal is shown
// on the page in words (#control-error) instead of a page reload. Without JavaScript the
// forms still work (a plain post, then the page again).
"use strict";
(function (dp) {
  var timeline = document.getElementById("timeline");
  var head = document.getElementById("session-head");
  if (!timeline || !head) return;
  var controls = document.getElementById("controls");
  var errorBox = document.getElementById("control-error");
  var toggle = document.getElementById("show-observations");
  var counter = document.getElementById("observation-count");
  var empty = document.getElementById("timeline-empty");
  var live = document.getElementById("live-indicator");

  // observations are left out of the page until asked for; the first time, fetch them
  var observationsLoaded = toggle ? toggle.checked : true;
  if (toggle) {
    toggle.addEventListener("change", function () {
      timeline.classList.toggle("show-obs", toggle.checked);
      if (!toggle.checked || observationsLoaded) return;
      observationsLoaded = true;
      fetch(timeline.dataset.observationsUrl, {
        headers: { "Accept": "application/json" },
        credentials: "same-origin",
      }).then(function (resp) {
        if (!resp.ok) throw new Error(resp.status + " " + resp.statusText);
        return resp.json();
      }).then(function (body) {
        body.cards.forEach(upsert);
      }).catch(function (err) {
        observationsLoaded = false;
        showError(String(err));
      });
    });
  }

  // the refusal in words, then its code linking to the errors page
  function showError(text, code, link) {
    if (!errorBox) return;
    errorBox.textContent = "";
    if (text) {
      var words = document.createElement("span");
      words.className = "text";
      words.textContent = text + " ";
      errorBox.appendChild(words);
    }
    if (code) {
      var a = document.createElement("a");
      a.className = "code";
      a.href = link || "/errors";
      var c = document.createElement("code");
      c.textContent = code;
      a.appendChild(c);
      errorBox.appendChild(a);
    }
    errorBox.hidden = !text;
  }

  function applyState(msg) {
    if (msg.head !== undefined) head.innerHTML = msg.head;
    if (msg.controls !== undefined && controls) controls.innerHTML = msg.controls;
    document.body.dataset.state = msg.badge || "";
    if (msg.live === false && live) live.hidden = true;
  }

  function nodeOf(html) {
    var holder = document.createElement("template");
    holder.innerHTML = html.trim();
    return holder.content.firstElementChild;
  }

  function upsert(msg) {
    var node = nodeOf(msg.html);
    if (!node) return;
    var old = document.getElementById(msg.id);
    if (old) {
      old.replaceWith(node);
    } else {
      var pos = parseFloat(msg.pos);
      var after = null;
      for (var i = timeline.children.length - 1; i >= 0; i--) {
        if (parseFloat(timeline.children[i].dataset.pos) <= pos) {
          after = timeline.children[i];
          break;
        }
      }
      if (after) after.after(node);
      else timeline.prepend(node);
    }
    if (empty) empty.hidden = true;
    if (counter && msg.observations !== undefined) {
      counter.textContent = counter.dataset.template.replace("{count}", msg.observations);
    }
  }

  // -- the controls
  function failureText(resp, text) {
    var shown = "";
    try {
      var doc = new DOMParser().parseFromString(text, "text/html");
      var msg = doc.getElementById("denied-message");
      shown = msg ? msg.textContent : (doc.body ? doc.body.textContent : text);
    } catch (e) {
      shown = text;
    }
    shown = (shown || "").trim().slice(0, 400);
    return resp.status + " " + (shown || resp.statusText);
  }

  if (controls) {
    controls.addEventListener("submit", function (ev) {
      var form = ev.target.closest("form.control");
      if (!form) return;
      ev.preventDefault();
      var buttons = controls.querySelectorAll("button");
      buttons.forEach(function (b) { b.disabled = true; });
      showError("");
      fetch(form.action, {
        method: "POST",
        headers: {
          "X-CSRF-Token": dp.csrf(),
          "Accept": "application/json",
          "Content-Type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams(new FormData(form)),
        credentials: "same-origin",
      }).then(function (resp) {
        var type = resp.headers.get("content-type") || "";
        if (type.indexOf("application/json") >= 0) {
          return resp.json().then(function (body) {
            if (body.ok) {
              applyState(body);
              if (dp.notify) {
                var note = dp.notify(body.message);
                if (note) setTimeout(function () { note.remove(); }, 4000);
              }
            } else {
              showError(body.message || body.code, body.code, body.link);
            }
          });
        }
        return resp.text().then(function (text) { showError(failureText(resp, text)); });
      }).catch(function (err) {
        showError((errorBox && errorBox.dataset.network) || String(err));
      }).finally(function () {
        controls.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
      });
    });
  }

  // -- the live stream
  var url = timeline.dataset.stream;
  if (url && window.EventSource) {
    var stream = new EventSource(url);
    stream.addEventListener("card", function (ev) { upsert(JSON.parse(ev.data)); });
    stream.addEventListener("state", function (ev) { applyState(JSON.parse(ev.data)); });
    stream.addEventListener("end", function () {
      stream.close();
      if (live) live.hidden = true;
    });
  }
})(window.deskpilot);
