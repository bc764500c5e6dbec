// deskpilot dashboard: what every page shares. No framework, no build step.
// The CSRF token is in <meta name="csrf-token">; forms carry it as a hidden field, and
// fetch() calls send it as X-CSRF-Token.
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
})(window.deskpilot);
