// deskpilot dashboard: the live view. Frames arrive as server-sent events (oversight/live.py,
// LiveFrame.wire): a base64 JPEG with its capture time `t` (epoch ms, taken by the server on
// this machine's clock), number, size, pointer and the agents' outlines. Each frame is shown
// in the <img> and the overlay (an SVG over it: the pointer, what the agents act on) is
// redrawn. Capture -> visible latency is measured per frame (decode done, then the next
// animation frame, i.e. the paint that shows it) against performance.timeOrigin +
// performance.now(), and kept on window.deskpilotLive for the tests and the benchmark.
"use strict";
(function () {
  var root = document.getElementById("live");
  if (!root) return;
  var img = document.getElementById("live-frame");
  var svg = document.getElementById("live-overlay");
  var NS = "http://www.w3.org/2000/svg";
  var KEEP = 600;
  var live = (window.deskpilotLive = {
    received: 0, // frame events received
    shown: 0, // frames that reached the screen
    latencies: [], // capture -> visible, ms, the last KEEP frames
    shownAt: [], // when each of those frames was shown (epoch ms)
    numbers: [], // their frame numbers
    captured: [], // and their capture times (the server's `t`, epoch ms)
    problems: [],
    last: null, // the last shown frame: {n, t, w, h, painted, withheld, redact, outlines, pointer}
    state: "connecting",
  });

  function keep(list, value) {
    list.push(value);
    if (list.length > KEEP) list.shift();
  }
  function el(id) {
    return document.getElementById(id);
  }
  function setState(name, text) {
    live.state = name;
    el("live-state").textContent = text;
  }

  function shape(name, attrs, cls) {
    var node = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) {
      node.setAttribute(k, String(attrs[k]));
    });
    if (cls) node.setAttribute("class", cls);
    node.setAttribute("vector-effect", "non-scaling-stroke");
    return node;
  }

  function drawOverlay(f) {
    svg.setAttribute("viewBox", "0 0 " + f.w + " " + f.h);
    svg.setAttribute("preserveAspectRatio", "none");
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    (f.outlines || []).forEach(function (o) {
      var cls = "outline " + o.shape + " " + o.state;
      if (o.shape === "point") {
        svg.appendChild(shape("circle", { cx: o.x, cy: o.y, r: 14 }, cls));
      } else {
        svg.appendChild(shape("rect", { x: o.x, y: o.y, width: o.w, height: o.h }, cls));
      }
      var label = shape("text", { x: o.x + 2, y: Math.max(o.y - 4, 12) }, "outline-label");
      label.textContent = o.kind + " · " + o.risk;
      svg.appendChild(label);
    });
    if (f.pointer && f.pointer[0] >= 0 && f.pointer[1] >= 0 && f.pointer[0] < f.w && f.pointer[1] < f.h) {
      var x = f.pointer[0], y = f.pointer[1];
      svg.appendChild(shape("circle", { cx: x, cy: y, r: 9 }, "pointer"));
      svg.appendChild(shape("line", { x1: x - 14, y1: y, x2: x + 14, y2: y }, "pointer"));
      svg.appendChild(shape("line", { x1: x, y1: y - 14, x2: x, y2: y + 14 }, "pointer"));
    }
  }

  function shown(f) {
    requestAnimationFrame(function () {
      var now = performance.timeOrigin + performance.now();
      live.shown += 1;
      keep(live.latencies, now - f.t);
      keep(live.shownAt, now);
      keep(live.numbers, f.n);
      keep(live.captured, f.t);
      live.last = {
        n: f.n, t: f.t, w: f.w, h: f.h, painted: f.painted, withheld: f.withheld,
        redact: f.redact, outlines: f.outlines, pointer: f.pointer, shownAt: now,
      };
    });
  }

  var newest = 0;
  function show(f) {
    newest = f.n;
    img.src = "data:image/jpeg;base64," + f.img;
    img.hidden = false;
    drawOverlay(f);
    el("live-redaction-on").hidden = !f.redact;
    el("live-redaction-off").hidden = !!f.redact;
    var done = function () {
      if (f.n === newest) shown(f);
    };
    if (img.decode) {
      img.decode().then(done, function () {}); // a newer frame replaced it first
    } else {
      img.onload = done;
    }
  }

  var RATE_WINDOW_MS = 4000;
  var RATE_MIN_SPAN_MS = 2000;

  function median(list) {
    if (!list.length) return null;
    var sorted = list.slice().sort(function (a, b) { return a - b; });
    return sorted[Math.floor(sorted.length / 2)];
  }

  setInterval(function () {
    if (!live.shown) return;
    var now = performance.timeOrigin + performance.now();
    // the measured rate: frames shown over a sliding window of the last RATE_WINDOW_MS,
    // and nothing ("–") until those frames span at least RATE_MIN_SPAN_MS — the first
    // frames of a view come in a burst and would read far above the rate asked for
    var recent = live.shownAt.filter(function (at) { return now - at <= RATE_WINDOW_MS; });
    var span = recent.length > 1 ? recent[recent.length - 1] - recent[0] : 0;
    var rate = span >= RATE_MIN_SPAN_MS ? (recent.length - 1) / (span / 1000) : null;
    var m = median(live.latencies.slice(-50));
    el("live-figures").hidden = false;
    el("live-frame-no").textContent = String(live.last ? live.last.n : 0);
    el("live-rate").textContent = rate === null ? "–" : rate.toFixed(1);
    el("live-latency").textContent = m === null ? "–" : String(Math.round(m));
  }, 1000);

  var source = new EventSource(root.getAttribute("data-stream"));
  source.addEventListener("open", function () {
    setState("live", root.getAttribute("data-msg-live"));
  });
  source.addEventListener("error", function () {
    if (live.state !== "ended") setState("reconnecting", root.getAttribute("data-msg-reconnecting"));
  });
  source.addEventListener("frame", function (ev) {
    live.received += 1;
    el("live-problem").hidden = true;
    if (live.state !== "live") setState("live", root.getAttribute("data-msg-live"));
    show(JSON.parse(ev.data));
  });
  source.addEventListener("problem", function (ev) {
    var p = JSON.parse(ev.data);
    keep(live.problems, p.code);
    var box = el("live-problem");
    box.textContent = p.text;
    box.hidden = false;
  });
  source.addEventListener("end", function () {
    source.close();
    live.state = "ended";
    el("live-ended").hidden = false;
  });
  window.addEventListener("pagehide", function () {
    source.close();
  });
})();
