// The overview follows the server's events: one "view" event a second with the page of lists the
// filter, order and page ask for. Every text goes in through textContent: a list name is never
// markup. No library, no build step.
"use strict";
(function () {
  const rows = document.getElementById("rows");
  if (!rows) return;
  const form = document.getElementById("view");
  const field = (id) => document.getElementById(id);
  let source = null;

  function query() {
    const p = new URLSearchParams();
    for (const id of ["filter", "sort", "desc", "page"]) {
      const v = field(id).value;
      if (v !== "" && !(id === "page" && v === "0")) p.set(id === "filter" ? "q" : id, v);
    }
    return p.toString();
  }

  function cell(text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  }

  const svgNS = "http://www.w3.org/2000/svg";
  function spark(points, width) {
    const svg = document.createElementNS(svgNS, "svg");
    svg.setAttribute("class", "spark");
    svg.setAttribute("viewBox", "0 0 " + width + " 20");
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("aria-hidden", "true");
    const line = document.createElementNS(svgNS, "polyline");
    line.setAttribute("points", points);
    svg.appendChild(line);
    return svg;
  }

  function render(v) {
    const width = rows.closest("table").querySelector("svg.spark")?.viewBox.baseVal.width || 180;
    const body = document.createDocumentFragment();
    for (const r of v.rows || []) {
      const tr = document.createElement("tr");
      tr.dataset.name = r.name;
      const name = document.createElement("td");
      const a = document.createElement("a");
      a.href = "/ui/lists/" + encodeURIComponent(r.name);
      a.textContent = r.name;
      name.appendChild(a);
      tr.append(name, cell(String(r.length), "num"), cell(String(r.leased), "num"),
        cell(r.reads, "num"), cell(r.adds, "num"), cell(r.rate, "num"),
        cell(r.empty, r.draining ? "num draining" : "num"), cell(r.rateMinute, "num"));
      const s = document.createElement("td");
      s.appendChild(spark(r.spark, width));
      tr.appendChild(s);
      body.appendChild(tr);
    }
    rows.replaceChildren(body);
    field("count").textContent = v.shown + " of " + v.lists + " lists";
    field("live").textContent = "live at " + v.at;
    field("pageinfo").textContent = "page " + (v.page + 1) + " of " + v.pages;
    field("page").value = String(v.page);
    field("prev").disabled = v.page === 0;
    field("next").disabled = v.page + 1 >= v.pages;
    const stop = field("stop-state");
    stop.textContent = v.stop.raised ? "raised" : "down";
    stop.className = v.stop.raised ? "raised" : "";
    const facts = document.createDocumentFragment();
    for (const f of v.facts || []) {
      const d = document.createElement("div");
      const dt = document.createElement("dt");
      dt.textContent = f.Name;
      const dd = document.createElement("dd");
      dd.textContent = f.Value;
      d.append(dt, dd);
      facts.appendChild(d);
    }
    field("facts").replaceChildren(facts);
    let err = field("view-error");
    if (v.error) {
      if (!err) {
        err = document.createElement("p");
        err.id = "view-error";
        err.className = "error";
        form.after(err);
      }
      err.textContent = v.error;
    } else if (err) err.remove();
  }

  function connect() {
    if (source) source.close();
    const q = query();
    history.replaceState(null, "", "/ui/" + (q ? "?" + q : ""));
    const url = "/ui/events" + (q ? "?" + q : "");
    source = new EventSource(url);
    source.addEventListener("view", (e) => render(JSON.parse(e.data)));
    source.onerror = () => {
      field("live").textContent = "reconnecting…";
      if (source.readyState !== EventSource.CLOSED) return;
      // Refused for good. Over the server's or the session's limit of streams (429), the page
      // says so and asks again later; otherwise (the session ended, the server stops) the page
      // itself says what to do, the login form for one. EventSource hides the status: ask again.
      const probe = new AbortController();
      fetch(url, { signal: probe.signal }).then(async (r) => {
        if (r.status === 429) {
          field("live").textContent = "not live: " + await r.text();
          setTimeout(connect, 1000 * Number(r.headers.get("Retry-After") || 30));
        } else if (r.ok) {
          probe.abort();
          connect();
        } else setTimeout(() => location.reload(), 2000);
      }, () => setTimeout(() => location.reload(), 2000));
    };
  }

  form.addEventListener("submit", (e) => { e.preventDefault(); field("page").value = "0"; connect(); });
  let typing = null;
  field("filter").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { field("page").value = "0"; connect(); }, 250);
  });
  for (const b of document.querySelectorAll("button.sort")) {
    b.addEventListener("click", () => {
      const key = b.dataset.sort;
      field("desc").value = field("sort").value === key && field("desc").value !== "1" ? "1" : "";
      field("sort").value = key;
      for (const o of document.querySelectorAll("button.sort")) {
        const on = o === b;
        o.classList.toggle("active", on);
        o.setAttribute("aria-sort", on ? (field("desc").value === "1" ? "descending" : "ascending") : "none");
      }
      connect();
    });
  }
  field("prev").addEventListener("click", () => { field("page").value = String(Math.max(0, +field("page").value - 1)); connect(); });
  field("next").addEventListener("click", () => { field("page").value = String(+field("page").value + 1); connect(); });
  connect();
})();
