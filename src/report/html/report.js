// The report's script: sorting the standings, and the case matrix rendered a page at a time
// from the JSON blob (#evals-data). Every value from the run is written with textContent;
// the one exception is a trajectory, an HTML fragment the Rust side escaped.
(function () {
  "use strict";
  document.querySelectorAll("table.sortable").forEach(function (t) {
    t.querySelectorAll("th").forEach(function (th, col) {
      th.addEventListener("click", function () {
        var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        var asc = th.dataset.dir !== "asc"; th.dataset.dir = asc ? "asc" : "desc";
        rows.sort(function (a, b) {
          var x = a.cells[col].dataset.sort || a.cells[col].textContent;
          var y = b.cells[col].dataset.sort || b.cells[col].textContent;
          var nx = parseFloat(x), ny = parseFloat(y);
          var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });

  var blob = document.getElementById("evals-data");
  if (!blob) { return; }
  var data = JSON.parse(blob.textContent);
  var rows = data.rows;
  var PAGE = 100;
  var KEYS = ["q", "dataset", "variant", "outcome", "contender", "page", "case"];
  var byKey = {};
  rows.forEach(function (r, i) { byKey[r.d + "/" + r.c] = i; });

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function pct(v) { return v === undefined || v === null ? "-" : (v * 100).toFixed(1) + "%"; }
  function money(v) { return v === undefined || v === null ? "-" : "$" + (v < 0.01 ? v.toFixed(4) : v.toFixed(2)); }
  function secs(v) { return v === undefined || v === null ? "-" : v.toFixed(2) + " s"; }
  function num(n) { return n === undefined || n === null ? "-" : n.toLocaleString("en-US"); }

  // The state lives in the URL fragment (#q=refund&outcome=failed&case=tax/a), so a link
  // opens the same view and a dump of the page after load shows it applied.
  var state;
  function readHash() {
    var s = { q: "", dataset: "", variant: "", outcome: "", contender: "", page: 1, "case": "" };
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      if (!kv) { return; }
      var i = kv.indexOf("=");
      var k = decodeURIComponent(i < 0 ? kv : kv.slice(0, i));
      var v = i < 0 ? "" : decodeURIComponent(kv.slice(i + 1).replace(/\+/g, " "));
      if (KEYS.indexOf(k) < 0) { return; }
      s[k] = k === "page" ? (parseInt(v, 10) || 1) : v;
    });
    return s;
  }
  var writing = false;
  function writeHash() {
    var parts = [];
    KEYS.forEach(function (k) {
      var v = state[k];
      if (v && !(k === "page" && v === 1)) { parts.push(k + "=" + encodeURIComponent(v)); }
    });
    var h = parts.length ? "#" + parts.join("&") : " ";
    try {
      history.replaceState(null, "", h === " " ? location.pathname + location.search : h);
    } catch (e) {
      writing = true;
      location.hash = h;
    }
  }

  function options(id, values, labels) {
    var s = $(id);
    values.forEach(function (v, i) {
      var o = el("option", null, labels ? labels[i] : v);
      o.value = String(v);
      s.appendChild(o);
    });
  }
  options("f-dataset", data.datasets);
  options("f-variant", data.variants);
  options("f-contender", data.contenders.map(function (_, i) { return i; }), data.contenders);
  if (!data.compared) { $("f-outcome").querySelector("option[value=regressed]").disabled = true; }

  function syncControls() {
    $("q").value = state.q;
    $("f-dataset").value = state.dataset;
    $("f-variant").value = state.variant;
    $("f-outcome").value = state.outcome;
    $("f-contender").value = state.contender;
  }

  function columns() {
    var j = parseInt(state.contender, 10);
    if (state.contender !== "" && j >= 0 && j < data.contenders.length) { return [j]; }
    return data.contenders.map(function (_, i) { return i; });
  }
  function outcomeMatches(c) {
    switch (state.outcome) {
      case "regressed": return c.st === "regressed";
      case "failed": return c.o === "fail";
      case "errored": return c.o === "error";
      case "flaky": return !!c.fl;
      default: return true;
    }
  }
  // What the search box searches, built once per row when first searched.
  var texts = [];
  function searchText(i) {
    if (texts[i] === undefined) {
      var r = rows[i], parts = [r.d + "/" + r.c, r.v, r.i || "", r.e || ""];
      r.r.forEach(function (c) { if (c) { parts.push(c.out || "", c.err || "", c.re || ""); } });
      texts[i] = parts.join("\n").toLowerCase();
    }
    return texts[i];
  }
  function matching() {
    var cols = columns(), q = state.q.trim().toLowerCase(), out = [];
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      if (state.dataset && r.d !== state.dataset) { continue; }
      if (state.variant && r.v !== state.variant) { continue; }
      var any = false;
      for (var k = 0; k < cols.length; k++) {
        var c = r.r[cols[k]];
        if (c && outcomeMatches(c)) { any = true; break; }
      }
      if (!any) { continue; }
      if (q && searchText(i).indexOf(q) < 0) { continue; }
      out.push(i);
    }
    return out;
  }

  function colour(c) {
    if (c.o === "error") { return "#e3e5ea"; }
    if (c.o === "removed" || c.s === undefined || c.s === null) { return "#f4f5f8"; }
    return "hsl(" + Math.round(c.s * 120) + ",65%,84%)";
  }

  function render() {
    var list = matching();
    var pages = Math.max(1, Math.ceil(list.length / PAGE));
    state.page = Math.min(Math.max(1, state.page), pages);
    var start = (state.page - 1) * PAGE, slice = list.slice(start, start + PAGE);
    var cols = columns();
    var table = $("matrix"), head = table.tHead, body = table.tBodies[0];
    head.textContent = "";
    body.textContent = "";
    var hr = el("tr");
    ["case", "dataset", "variant"].forEach(function (t) { hr.appendChild(el("th", "l", t)); });
    cols.forEach(function (j) { hr.appendChild(el("th", null, data.contenders[j])); });
    head.appendChild(hr);
    var frag = document.createDocumentFragment();
    slice.forEach(function (i) {
      var r = rows[i], key = r.d + "/" + r.c, tr = el("tr");
      tr.dataset.key = key;
      var name = el("td", "l");
      var a = el("a", null, r.c);
      a.href = "#case=" + encodeURIComponent(key);
      a.addEventListener("click", function (ev) { ev.preventDefault(); open(key); });
      name.appendChild(a);
      tr.appendChild(name);
      tr.appendChild(el("td", "l", r.d));
      tr.appendChild(el("td", "l", r.v));
      cols.forEach(function (j) {
        var c = r.r[j];
        if (!c) { tr.appendChild(el("td", "cell none", "")); return; }
        var td = el("td", "cell " + c.o + (c.g ? " gated" : ""),
          c.o === "error" ? "error" : c.o === "removed" ? "removed" : pct(c.s));
        td.style.background = colour(c);
        td.title = data.contenders[j] + ": " + c.o + (c.st ? " (" + c.st + ")" : "");
        if (c.st) { td.dataset.status = c.st; }
        td.addEventListener("click", function () { open(key); });
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    });
    body.appendChild(frag);
    var count = $("count");
    count.dataset.matching = String(list.length);
    count.dataset.shown = String(slice.length);
    count.textContent = list.length === 0 ? "no case matches (of " + num(rows.length) + ")"
      : "cases " + num(start + 1) + "–" + num(start + slice.length) + " of " + num(list.length)
        + (list.length === rows.length ? "" : " matching (" + num(rows.length) + " in all)");
    $("page").textContent = "page " + state.page + " of " + pages;
    $("prev").disabled = state.page <= 1;
    $("next").disabled = state.page >= pages;
    show(state["case"]);
  }

  function block(title, text) {
    var d = el("div");
    d.appendChild(el("h4", null, title));
    if (text === undefined || text === null || text === "") { d.appendChild(el("p", "muted", "none")); }
    else { d.appendChild(el("pre", title, text)); }
    return d;
  }
  function diffBlock(text) {
    var pre = el("pre", "diff");
    text.split("\n").forEach(function (line) {
      var cls = line.indexOf("@@") === 0 ? "hunk"
        : line.indexOf("+++") === 0 || line.indexOf("---") === 0 ? "hunk"
          : line[0] === "+" ? "add" : line[0] === "-" ? "del" : "";
      pre.appendChild(el("span", cls, line + "\n"));
    });
    return pre;
  }

  function contenderView(j, c) {
    var box = el("div", "contender");
    box.dataset.contender = data.contenders[j];
    box.appendChild(el("h4", null, data.contenders[j]));
    if (!c) { box.appendChild(el("p", "muted", "not run for this case")); return box; }
    var head = el("p");
    head.appendChild(el("span", c.o, c.o));
    head.appendChild(document.createTextNode(" · score " + pct(c.s)));
    if (c.st) { head.appendChild(el("span", c.g ? "error" : null, " · " + c.st + " (baseline " + pct(c.b) + ")")); }
    if (c.tries) { head.appendChild(document.createTextNode(" · " + c.tries)); }
    if (c.fl) { head.appendChild(el("span", "fail", " · flaky")); }
    box.appendChild(head);
    var facts = el("p", "facts");
    [["cost", money(c.cost)], ["latency", secs(c.lat)], ["tokens in", num(c.tin)], ["tokens out", num(c.tout)]]
      .forEach(function (f) { facts.appendChild(el("span", null, f[0] + " " + f[1])); });
    box.appendChild(facts);
    if (c.m && c.m.length) {
      var dl = el("dl", "metrics");
      data.metrics.forEach(function (m, k) { dl.appendChild(el("dt", null, m)); dl.appendChild(el("dd", null, pct(c.m[k]))); });
      box.appendChild(dl);
    }
    if (c.err) { box.appendChild(el("p", "error", "error")); box.appendChild(el("pre", "err", c.err)); }
    if (c.re) { box.appendChild(el("p", "fail", "reply unusable: " + c.re)); }
    if (c.wn) { c.wn.forEach(function (w) { box.appendChild(el("p", "fail", "warning: " + w)); }); }
    if (c.th && c.th.length) { box.appendChild(el("p", "fail", "below threshold: " + c.th.join(", "))); }
    if (c.dg && c.dg.length) {
      var ul = el("ul", "diagnostics");
      c.dg.forEach(function (d) { ul.appendChild(el("li", null, d)); });
      box.appendChild(ul);
    }
    if (c.out) { box.appendChild(el("h4", null, "output")); box.appendChild(el("pre", "output", c.out)); }
    if (c.diff) { box.appendChild(el("h4", null, "diff against the baseline")); box.appendChild(diffBlock(c.diff)); }
    // The tool calls its responses asked for, in order.
    if (c.tc) {
      box.appendChild(el("h4", null, "tool calls"));
      var calls = el("ol", "tool-calls");
      c.tc.forEach(function (t) { calls.appendChild(el("li", null, t)); });
      box.appendChild(calls);
    }
    // Its UI payloads (components), collapsed: pretty JSON, and the diff when they changed.
    if (c.cp !== undefined) {
      var comp = el("details", "components");
      comp.appendChild(el("summary", null, c.cp === "[]" ? "components: none ([])" : "components"));
      comp.appendChild(el("pre", "output", c.cp));
      if (c.cpd) { comp.appendChild(el("h4", null, "components diff against the baseline")); comp.appendChild(diffBlock(c.cpd)); }
      box.appendChild(comp);
    } else if (c.cpd) {
      box.appendChild(el("h4", null, "components diff against the baseline"));
      box.appendChild(diffBlock(c.cpd));
    }
    // An agent's trajectory: a fragment rendered (and escaped) by the report's Rust side.
    var tr = el("div", "trajectory");
    if (c.tr) { tr.innerHTML = c.tr; }
    box.appendChild(tr);
    return box;
  }

  function show(key) {
    var box = $("case");
    box.textContent = "";
    var i = key ? byKey[key] : undefined;
    if (i === undefined) { box.hidden = true; return; }
    var r = rows[i];
    box.hidden = false;
    box.dataset.key = key;
    var h = el("h3", null, r.d + " · " + r.c + (r.v ? " (" + r.v + ")" : ""));
    var close = el("span", "linkish", " close");
    close.addEventListener("click", function () { state["case"] = ""; writeHash(); show(""); });
    h.appendChild(close);
    box.appendChild(h);
    var io = el("div", "io");
    io.appendChild(block("input", r.i));
    io.appendChild(block("expected", r.e));
    box.appendChild(io);
    var grid = el("div", "outputs");
    r.r.forEach(function (c, j) { grid.appendChild(contenderView(j, c)); });
    box.appendChild(grid);
  }
  function open(key) {
    state["case"] = key;
    writeHash();
    show(key);
    $("case").scrollIntoView({ block: "start" });
  }

  function changed(k, v) {
    state[k] = v;
    state.page = 1;
    writeHash();
    render();
  }
  $("q").addEventListener("input", function () { changed("q", this.value); });
  ["dataset", "variant", "outcome", "contender"].forEach(function (k) {
    $("f-" + k).addEventListener("change", function () { changed(k, this.value); });
  });
  $("prev").addEventListener("click", function () { state.page -= 1; writeHash(); render(); });
  $("next").addEventListener("click", function () { state.page += 1; writeHash(); render(); });
  window.addEventListener("hashchange", function () {
    if (writing) { writing = false; return; }
    state = readHash();
    syncControls();
    render();
    // A link to a case (the baseline table's) shows it where the case view is.
    if (state["case"] && !$("case").hidden) { $("case").scrollIntoView({ block: "start" }); }
  });

  state = readHash();
  syncControls();
  render();
  // How long the page took to be usable, for bench/html_load.sh (never asserted in tests).
  var ms = performance.now().toFixed(1);
  document.body.dataset.renderedMs = ms;
  console.log("evals-report-rendered-ms " + ms);
  window.addEventListener("load", function () {
    document.body.dataset.loadedMs = performance.now().toFixed(1);
    // The first frame drawn after the load: the page as the user first sees it.
    requestAnimationFrame(function () {
      setTimeout(function () { document.body.dataset.paintedMs = performance.now().toFixed(1); }, 0);
    });
  });
}());
