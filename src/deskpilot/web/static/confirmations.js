// The confirmations page: answers without leaving the page (the outcome, or why it was
// refused, is shown at the top), and the lists follow the page-wide state: a new
// confirmation appears, an answered or expired one moves down, without a reload.
"use strict";
(function (dp) {
  var message = document.getElementById("answer-message");

  function say(text, isError) {
    if (!message) return;
    message.textContent = text;
    message.classList.toggle("error", !!isError);
    message.classList.toggle("ok", !isError);
    message.hidden = false;
  }

  function refresh() {
    return fetch("/confirmations", { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        ["pending", "recent"].forEach(function (id) {
          var fresh = doc.getElementById(id);
          var here = document.getElementById(id);
          if (fresh && here) here.innerHTML = fresh.innerHTML;
        });
        dp.tickCountdowns();
      });
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.classList.contains("answer")) return;
    event.preventDefault();
    var row = form.closest("tr");
    if (row) row.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    dp.answer(form.getAttribute("data-id"), form.getAttribute("data-verb")).then(function (res) {
      if (res.ok) say(res.message, false);
      else say(dp.label("failed", { error: res.message }), true);
      refresh();
    });
  });

  function shownIds() {
    return Array.prototype.map.call(
      document.querySelectorAll("#pending tr[data-id]"),
      function (tr) { return tr.getAttribute("data-id"); }
    ).sort().join(",");
  }

  window.addEventListener("dp:state", function (event) {
    var ids = (event.detail.confirmations || []).map(function (c) { return c.id; });
    if (ids.sort().join(",") !== shownIds()) refresh();
  });
})(window.deskpilot);
