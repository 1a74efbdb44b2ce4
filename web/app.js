// The trigd console: plain JavaScript on the HTTP API (/api/v1, docs/api.md), no build step.
// Pages by the location's hash: #graph, #schedules, #schedule/NS/NAME, #jobs, #job/ID, #runs,
// #run/ID, #lineage, #lineage/ID, #audit. The buttons of an operation show only when the caller's role
// may call it (whoami's operations). Graphs are laid out by dagre (web/vendor) in a worker
// (layout-worker.js) and drawn as SVG; pages are read again every few seconds (docs/adr/0233).
"use strict";

const state = { token: sessionStorage.getItem("trigd-token") || "", ops: new Set(), who: null, graphSearch: "" };
const POLL_MS = 5000;
const BACKOFF_MS = 30000;
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// Appends children, arrays flattened, nothing for null or false.
function put(parent, ...children) {
  parent.append(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
}

function say(text, kind) {
  const m = document.getElementById("message");
  m.textContent = text || "";
  m.className = kind || "";
}

async function api(method, path, body) {
  const headers = {};
  if (state.token) headers["Authorization"] = "Bearer " + state.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const reply = await res.json().catch(() => null);
  if (!res.ok) {
    const problems = (reply && reply.problems || []).map((p) => (p.path ? p.path + ": " : "") + p.message);
    const e = new Error(((reply && reply.error) || "HTTP " + res.status) + (problems.length ? " (" + problems.join("; ") + ")" : ""));
    e.status = res.status;
    e.retryAfter = Number(res.headers.get("Retry-After")) || 0;
    throw e;
  }
  return reply;
}

const enc = encodeURIComponent;
function schedulePath(name) {
  const [ns, ...rest] = name.split("/");
  return "/api/v1/schedules/" + enc(ns) + "/" + enc(rest.join("/"));
}
function can(op) { return state.ops.has(op); }
function time(t) { return t ? String(t).replace("T", " ").replace(/(\.\d+)?([+-]\d\d(:\d\d)?|Z)$/, "") : "-"; }
function ms(t) { return t ? Date.parse(String(t).replace(" ", "T").replace(/([+-]\d\d)$/, "$1:00")) : NaN; }
function duration(msecs) {
  if (!isFinite(msecs)) return "-";
  const s = msecs / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + Math.round(s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.round((s % 3600) / 60) + " min";
}

// Every state in words with an icon: colour only repeats what they say.
const ICON = {
  succeeded: "✓", failed: "✗", cancelled: "⊘", killed: "⊘", skipped: "↷", running: "▶", retry_wait: "↻",
  launched: "↗", waiting: "◷", pending_trigger: "◷", pending_constraint: "◷", active: "●", suspended: "‖",
  discarded: "–", deleted: "✗",
};
const WORDS = { skipped: "skipped (upstream failed)", retry_wait: "retry wait", pending_trigger: "collecting events",
  pending_constraint: "waiting on constraints" };
function stateText(s) { return (ICON[s] ? ICON[s] + " " : "") + (WORDS[s] || s); }
function stateBadge(s) { return el("span", { class: "state " + String(s).replace(/\s.*/, ""), "data-state": s }, stateText(s)); }

function scheduleLink(name) {
  return name ? el("a", { href: "#schedule/" + name.split("/").map(enc).join("/"), class: "schedule-link" }, name) : "-";
}

function table(columns, rows, render) {
  return el("table", {},
    el("thead", {}, el("tr", {}, columns.map((c) => el("th", {}, c)))),
    el("tbody", {}, rows.map(render)));
}

function section(title, ...children) { return el("section", { class: "card" }, el("h3", {}, title), ...children); }

// An operation behind a button: its reply said, then the page drawn again.
function action(label, op, method, path, done, body) {
  if (!can(op)) return null;
  return el("button", {
    "data-op": op,
    onclick: async (ev) => {
      ev.target.disabled = true;
      try {
        const r = await api(method, path, body ? body() : {});
        say(done(r), "ok");
      } catch (e) {
        say(e.message, "error");
      }
      route();
    },
  }, label);
}

// ---- Graphs: dagre in a worker, SVG from its coordinates -------------------------------------

let worker = null;
let layoutId = 0;
const layoutWaiting = new Map();
function layout(nodes, edges, options) {
  if (!worker) {
    worker = new Worker("layout-worker.js");
    worker.onmessage = (ev) => {
      const done = layoutWaiting.get(ev.data.id);
      layoutWaiting.delete(ev.data.id);
      if (done) done(ev.data);
    };
  }
  const id = ++layoutId;
  return new Promise((resolve) => {
    layoutWaiting.set(id, resolve);
    worker.postMessage({ id, nodes, edges, options });
  });
}

// A node's box: its lines (the first bold) decide its size.
function nodeSize(lines) {
  const chars = Math.max(...lines.map((l, i) => String(l).length * (i === 0 ? 1.1 : 1)));
  return { width: Math.min(300, Math.max(120, 20 + chars * 7)), height: 12 + lines.length * 16 };
}

function truncate(text, n) { text = String(text); return text.length > n ? text.slice(0, n - 1) + "…" : text; }

// The graphs drawn, by key: a refresh with the same nodes and edges updates them in place.
const drawn = new Map();

// Draws nodes [{id, lines, classes, state, label, open}] and edges [{from, to, kind}] as an
// SVG in a scrolling box. `key` names the graph for in-place refreshes.
async function drawGraph(key, nodes, edges, options) {
  const signature = nodes.map((n) => n.id + "|" + n.lines.length).join(",") + "#" + edges.map((e) => e.from + ">" + e.to).join(",");
  const old = drawn.get(key);
  if (old && old.signature === signature) {
    for (const n of nodes) decorate(old.groups.get(n.id), n);
    return old.box;
  }
  const started = performance.now();
  const sizes = nodes.map((n) => Object.assign({ id: n.id }, nodeSize(n.lines)));
  const laid = await layout(sizes, edges, options);
  const size = new Map(sizes.map((s) => [s.id, s]));
  // A graph a little wider than the page is scaled down to fit; a larger one scrolls.
  const fit = laid.width > window.innerWidth - 60 && laid.width < 1.5 * (window.innerWidth - 60);
  const root = svg("svg", { class: "graph" + (fit ? " fit" : ""), width: Math.ceil(laid.width), height: Math.ceil(laid.height),
    viewBox: `0 0 ${Math.ceil(laid.width)} ${Math.ceil(laid.height)}`,
    role: "group", "aria-label": options && options.label || "graph" });
  root.append(svg("defs", {}, svg("marker", { id: "arrow-" + key, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
    markerHeight: 7, orient: "auto-start-reverse" }, svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }))));
  const kindOf = new Map(edges.map((e) => [e.from + ">" + e.to, e.kind]));
  const edgeLayer = svg("g", { class: "edges" });
  for (const e of laid.edges) {
    const d = e.points.map((p, i) => (i ? "L" : "M") + p.x.toFixed(1) + " " + p.y.toFixed(1)).join(" ");
    const kind = kindOf.get(e.from + ">" + e.to) || "";
    edgeLayer.append(svg("path", { d, class: "edge " + kind, "data-from": e.from, "data-to": e.to,
      "marker-end": "url(#arrow-" + key + ")" }, kind ? svg("title", {}, kind + " leaf") : null));
  }
  root.append(edgeLayer);
  const nodeLayer = svg("g", { class: "nodes" });
  const groups = new Map();
  const byId = new Map(nodes.map((n) => [n.id, n]));
  for (const p of laid.nodes) {
    const n = byId.get(p.id);
    const s = size.get(p.id);
    const g = svg("g", { transform: `translate(${(p.x - s.width / 2).toFixed(1)},${(p.y - s.height / 2).toFixed(1)})`,
      "data-node-id": p.id, tabindex: 0, role: "link" });
    g.append(svg("rect", { width: s.width, height: s.height, rx: 6 }));
    g.addEventListener("click", () => n.open && n.open());
    g.addEventListener("keydown", (ev) => {
      if ((ev.key === "Enter" || ev.key === " ") && n.open) { ev.preventDefault(); n.open(); }
    });
    decorate(g, n);
    groups.set(p.id, g);
    nodeLayer.append(g);
  }
  root.append(nodeLayer);
  const box = el("div", { class: "graph-box", "data-graph": key, "data-layout-ms": Math.round(performance.now() - started) }, root);
  drawn.set(key, { signature, box, groups });
  return box;
}

// A node's text, classes and accessible name (also on refresh).
function decorate(g, n) {
  if (!g) return;
  g.setAttribute("class", "node " + (n.classes || ""));
  g.setAttribute("data-state", n.state || "");
  if (n.schedule) g.setAttribute("data-schedule", n.schedule);
  g.setAttribute("aria-label", n.label || n.lines.join(", "));
  for (const t of g.querySelectorAll("text, title")) t.remove();
  n.lines.forEach((line, i) => g.append(svg("text", { x: 8, y: 19 + i * 16, class: i === 0 ? "title" : "line" }, truncate(line, 44))));
  g.append(svg("title", {}, n.label || n.lines.join("\n")));
}

// ---- Pages -----------------------------------------------------------------------------------

async function graphPage(page, params) {
  const ns = params.get("namespace") || "";
  const g = await api("GET", "/api/v1/graph" + (ns ? "?namespace=" + enc(ns) : ""));
  const namespaces = new Set(g.nodes.filter((n) => n.kind === "schedule").map((n) => n.namespace));
  if (ns) namespaces.add(ns);
  const select = el("select", { id: "graph-namespace", "aria-label": "namespace" },
    el("option", { value: "" }, "every namespace"),
    [...namespaces].sort().map((n) => el("option", n === ns ? { value: n, selected: "" } : { value: n }, n)));
  select.addEventListener("change", () => { location.hash = "#graph" + (select.value ? "?namespace=" + enc(select.value) : ""); });
  const search = el("input", { id: "graph-search", type: "search", placeholder: "search: highlights a node, its upstream and downstream",
    "aria-label": "search the graph", value: state.graphSearch });
  const nodes = g.nodes.map((n) => {
    if (n.kind !== "schedule") {
      return { id: n.id, lines: [n.kind, n.name], classes: "kind-" + n.kind, state: n.kind, label: n.kind + " " + n.name };
    }
    const last = n.last_run_state;
    const lines = [n.name, stateText(n.state) + " · " + n.open_jobs + " open job" + (n.open_jobs === 1 ? "" : "s"),
      last ? "last run " + stateText(last) : "no run yet"];
    if (n.time) lines.push("time: " + n.time);
    return { id: n.id, lines, schedule: n.name, classes: "kind-schedule " + (last || "none") + (n.state === "suspended" ? " suspended" : ""),
      state: last || "none", label: n.name + ", " + n.state + ", " + n.open_jobs + " open jobs, " + (last ? "last run " + last : "no run yet"),
      open: () => { location.hash = "#schedule/" + n.name; } };
  });
  const box = nodes.length ? await drawGraph("deps", nodes, g.edges, { label: "dependency graph" }) : null;
  search.addEventListener("input", () => { state.graphSearch = search.value; highlight(box, g, search.value); });
  search.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" || !box) return;
    const first = box.querySelector("g.node.match");
    if (first) first.focus();
  });
  const schedules = g.nodes.filter((n) => n.kind === "schedule").length;
  put(page, el("h2", {}, "Dependency graph" + (ns ? " of " + ns : "")),
    el("div", { class: "filters" }, select, search,
      el("span", { class: "muted", id: "graph-count" }, schedules + " schedule(s), " + (g.nodes.length - schedules) +
        " dataset, event or program node(s), " + g.edges.length + " edge(s)")),
    legend([["succeeded", "last run succeeded"], ["failed", "last run failed"], ["running", "running"], ["none", "no run yet"],
      ["suspended", "suspended (dashed)"]], [["partition", "partition"], ["program", "program"], ["event", "event"], ["silence", "silence"]]),
    box || el("p", { class: "muted" }, "No schedules yet: apply one with trigctl schedules apply."));
  highlight(box, g, state.graphSearch);
}

function legend(states, edges) {
  return el("div", { class: "legend", "aria-hidden": "true" },
    states.map(([s, t]) => el("span", { class: "key node-key " + s }, t)),
    (edges || []).map(([k, t]) => el("span", { class: "key edge-key " + k }, t + " leaf")));
}

// The nodes whose name has `q`, and every node upstream and downstream of them.
function highlight(box, g, q) {
  if (!box) return;
  q = (q || "").trim().toLowerCase();
  const svgEl = box.querySelector("svg");
  svgEl.classList.toggle("searching", !!q);
  for (const x of svgEl.querySelectorAll(".hl, .match")) x.classList.remove("hl", "match");
  if (!q) return;
  const up = new Map(), down = new Map();
  for (const e of g.edges) {
    (down.get(e.from) || down.set(e.from, []).get(e.from)).push(e.to);
    (up.get(e.to) || up.set(e.to, []).get(e.to)).push(e.from);
  }
  const matches = g.nodes.filter((n) => n.name.toLowerCase().includes(q)).map((n) => n.id);
  const lit = new Set(matches);
  for (const dir of [up, down]) {
    const todo = [...matches];
    const seen = new Set(matches);
    while (todo.length) {
      for (const next of dir.get(todo.pop()) || []) {
        if (!seen.has(next)) { seen.add(next); lit.add(next); todo.push(next); }
      }
    }
  }
  for (const id of lit) {
    const n = svgEl.querySelector(`g.node[data-node-id="${CSS.escape(id)}"]`);
    if (n) n.classList.add("hl");
  }
  for (const id of matches) {
    const n = svgEl.querySelector(`g.node[data-node-id="${CSS.escape(id)}"]`);
    if (n) n.classList.add("match");
  }
  for (const p of svgEl.querySelectorAll("path.edge")) {
    if (lit.has(p.getAttribute("data-from")) && lit.has(p.getAttribute("data-to"))) p.classList.add("hl");
  }
}

async function schedulesPage(page) {
  const { items } = await api("GET", "/api/v1/schedules?limit=1000");
  put(page, el("h2", {}, "Schedules"),
    items.length === 0 ? el("p", { class: "muted" }, "No schedules yet: apply one with trigctl schedules apply.") :
    table(["name", "state", "version", "open jobs", "active runs", "next fire", ""], items, (s) =>
      el("tr", { "data-schedule": s.name },
        el("td", {}, scheduleLink(s.name)),
        el("td", {}, stateBadge(s.state)),
        el("td", {}, "v" + s.version),
        el("td", {}, el("a", { href: "#jobs?schedule=" + enc(s.name) }, s.open_jobs)),
        el("td", {}, el("a", { href: "#runs?schedule=" + enc(s.name) }, s.active_runs)),
        el("td", {}, time(s.next_fire_at)),
        el("td", {}, scheduleButtons(s)))));
}

function scheduleButtons(s) {
  return [
    action("Run now", "startSchedule", "POST", schedulePath(s.name) + "/start",
      (r) => "started " + s.name + (r && r.job_id ? ": job " + r.job_id : "")),
    " ",
    s.state === "suspended"
      ? action("Resume", "resumeSchedule", "POST", schedulePath(s.name) + "/resume", (r) => r.done + " " + s.name)
      : action("Suspend", "suspendSchedule", "POST", schedulePath(s.name) + "/suspend", (r) => r.done + " " + s.name),
  ];
}

// `jobs why` for people, from its JSON.
function explain(e) {
  const lines = [e.summary || ""];
  for (const t of e.trigger || []) {
    if (t.needed === false) continue;
    lines.push((t.satisfied ? "✓ " : "✗ ") + (t.path || "trigger") + ": " + t.detail + (t.next_fire_at ? " (next fire " + time(t.next_fire_at) + ")" : ""));
  }
  for (const c of e.constraints || []) {
    if (c.result === "satisfied") continue;
    lines.push("✗ " + c.constraint + ": " + c.reason + (c.next_check_at ? " (next check " + time(c.next_check_at) + ")" : ""));
  }
  if (e.next_check_at) lines.push("next check: " + time(e.next_check_at));
  if (e.wakes_on) lines.push("wakes on: " + e.wakes_on);
  return lines.filter(Boolean).join("\n");
}

async function openJobs(schedule, limit) {
  const q = schedule ? "&schedule=" + enc(schedule) : "";
  const [c, t] = await Promise.all([
    api("GET", "/api/v1/jobs?state=pending_constraint&limit=" + limit + q),
    api("GET", "/api/v1/jobs?state=pending_trigger&limit=" + limit + q),
  ]);
  const jobs = c.items.concat(t.items);
  const whys = await Promise.all(jobs.map((j) => api("GET", "/api/v1/jobs/" + j.id + "/why").catch((e) => ({ summary: e.message }))));
  return jobs.map((j, i) => Object.assign({ why: whys[i] }, j));
}

function jobsTable(jobs, withSchedule) {
  return table(["job"].concat(withSchedule ? ["schedule"] : [], ["state", "opened", "why"]), jobs, (j) =>
    el("tr", { "data-job": j.id },
      el("td", {}, el("a", { href: "#job/" + j.id }, j.id)),
      withSchedule ? el("td", {}, scheduleLink(j.schedule || j.schedule_name)) : null,
      el("td", {}, stateBadge(j.state)),
      el("td", {}, time(j.opened_at)),
      el("td", {}, el("pre", { class: "why" }, explain(j.why)))));
}

async function jobsPage(page, params) {
  const schedule = params.get("schedule") || "";
  const jobs = await openJobs(schedule, 50);
  put(page, el("h2", {}, "Waiting jobs" + (schedule ? " of " + schedule : "")),
    jobs.length === 0 ? el("p", { class: "muted" }, "No job is waiting.") : jobsTable(jobs, true));
}

function runsTable(rows, withSchedule) {
  return table(["run"].concat(withSchedule ? ["schedule"] : [], ["program", "state", "attempt", "worker", "launched", "finished", ""]), rows, (r) =>
    el("tr", { "data-run": r.run_id, "data-state": r.state },
      el("td", {}, el("a", { href: "#run/" + enc(r.run_id), class: "run-link" }, r.run_id)),
      withSchedule ? el("td", {}, scheduleLink(r.schedule)) : null,
      el("td", {}, r.program),
      el("td", {}, stateBadge(r.state)),
      el("td", {}, r.attempt),
      el("td", {}, r.worker || "-"),
      el("td", {}, time(r.launched_at)),
      el("td", {}, time(r.finished_at)),
      el("td", {}, runButtons(r), " ", el("a", { href: "#lineage/" + enc(r.run_id), class: "lineage-link" }, "lineage"))));
}

function runButtons(r) {
  return ["launched", "running", "retry_wait"].includes(r.state)
    ? action("Cancel", "cancelRun", "POST", "/api/v1/runs/" + enc(r.run_id) + "/cancel", () => "cancelled " + r.run_id)
    : action("Rerun", "rerunRun", "POST", "/api/v1/runs/" + enc(r.run_id) + "/rerun",
      (x) => "rerun of " + r.run_id + (x && x.run_id ? ": " + x.run_id : ""));
}

async function runsPage(page, params) {
  const schedule = params.get("schedule") || "";
  const only = params.get("state") || "";
  const { items } = await api("GET", "/api/v1/runs?limit=200" + (schedule ? "&schedule=" + enc(schedule) : ""));
  const rows = only ? items.filter((r) => r.state === only) : items;
  const scheduleInput = el("input", { id: "filter-schedule", placeholder: "namespace/name", value: schedule, "aria-label": "schedule" });
  const stateSelect = el("select", { id: "filter-state", "aria-label": "state" },
    ["", "launched", "running", "retry_wait", "succeeded", "failed", "killed"].map((s) =>
      el("option", s === only ? { value: s, selected: "" } : { value: s }, s || "any state")));
  const apply = () => {
    const p = new URLSearchParams();
    if (scheduleInput.value) p.set("schedule", scheduleInput.value);
    if (stateSelect.value) p.set("state", stateSelect.value);
    location.hash = "#runs" + (p.toString() ? "?" + p : "");
  };
  stateSelect.addEventListener("change", apply);
  scheduleInput.addEventListener("change", apply);
  put(page, el("h2", {}, "Runs"),
    el("div", { class: "filters" }, scheduleInput, stateSelect, el("button", { onclick: apply }, "Filter")),
    rows.length === 0 ? el("p", { class: "muted" }, "No runs.") : [
      section("Timeline", timeline(rows.slice(0, 40), (r) => r.schedule, "runs")),
      runsTable(rows, true)]);
}

// Runs as bars on a time axis, oldest at the top: queued (launched to started), running
// (started to finished, or now) and the outcome in words. Hover or focus: attempt, worker,
// durations. Enter or a click opens the run.
function timeline(runs, labelOf, key) {
  const now = Date.now();
  const rows = runs.map((r) => {
    const launched = ms(r.attempt_launched_at || r.launched_at);
    const first = ms(r.launched_at);
    const started = ms(r.attempt_started_at);
    const finished = ms(r.finished_at);
    const end = isFinite(finished) ? finished : now;
    return { r, first: isFinite(first) ? first : launched, launched, started: isFinite(started) ? Math.min(started, end) : NaN, end, finished };
  }).filter((x) => isFinite(x.launched)).sort((a, b) => a.first - b.first || a.launched - b.launched);
  if (!rows.length) return el("p", { class: "muted" }, "No runs to draw.");
  const t0 = Math.min(...rows.map((x) => x.first));
  const t1 = Math.max(t0 + 1000, ...rows.map((x) => x.end));
  const LABEL = 190, WIDTH = 720, OUT = 150, ROW = 24, TOP = 26;
  const x = (t) => LABEL + ((t - t0) / (t1 - t0)) * WIDTH;
  const root = svg("svg", { class: "timeline", width: LABEL + WIDTH + OUT, height: TOP + rows.length * ROW + 6,
    role: "group", "aria-label": "runs timeline", "data-timeline": key });
  for (let i = 0; i <= 4; i++) {
    const t = t0 + ((t1 - t0) * i) / 4;
    root.append(svg("line", { x1: x(t), x2: x(t), y1: TOP - 6, y2: TOP + rows.length * ROW, class: "tick" }),
      svg("text", { x: x(t), y: 14, class: "axis", "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" },
        new Date(t).toISOString().slice(11, 19)));
  }
  rows.forEach((row, i) => {
    const r = row.r;
    const y = TOP + i * ROW;
    const queuedEnd = isFinite(row.started) ? row.started : row.end;
    const ran = isFinite(row.started) ? row.end - row.started : NaN;
    const tip = [r.run_id, (labelOf(r) || "") + " · " + (WORDS[r.state] || r.state), "attempt " + r.attempt,
      "worker " + (r.worker || "-"), "queued " + duration(queuedEnd - row.launched),
      "running " + duration(ran), "total " + duration(row.end - row.first) + (isFinite(row.finished) ? "" : " so far")].join("\n");
    const g = svg("g", { class: "bar " + r.state, "data-run": r.run_id, "data-state": r.state, tabindex: 0, role: "link",
      "aria-label": tip.replace(/\n/g, ", ") });
    const open = () => { location.hash = "#run/" + enc(r.run_id); };
    g.addEventListener("click", open);
    g.addEventListener("keydown", (ev) => { if (ev.key === "Enter") open(); });
    g.append(svg("title", {}, tip),
      svg("text", { x: LABEL - 8, y: y + 15, "text-anchor": "end", class: "label" }, truncate(labelOf(r) || r.run_id, 28)));
    if (row.first < row.launched) g.append(svg("rect", { x: x(row.first), y: y + 10, width: Math.max(1, x(row.launched) - x(row.first)), height: 2, class: "retry" }));
    g.append(svg("rect", { x: x(row.launched), y: y + 5, width: Math.max(2, x(queuedEnd) - x(row.launched)), height: 12, class: "queued" }));
    if (isFinite(row.started)) g.append(svg("rect", { x: x(row.started), y: y + 4, width: Math.max(3, x(row.end) - x(row.started)), height: 14, class: "running" }));
    g.append(svg("text", { x: x(row.end) + 6, y: y + 15, class: "outcome" }, stateText(r.state) + " · " + duration(row.end - row.first)));
    root.append(g);
  });
  return el("div", { class: "timeline-box" }, root,
    el("p", { class: "legend muted" }, el("span", { class: "key queued" }, "queued"), el("span", { class: "key running" }, "running"),
      " then the outcome; hover or focus a bar for attempt, worker and durations"));
}

// One schedule: state and buttons, next fire times, open jobs, runs and their timeline,
// decisions, the document and its versions with a diff.
async function schedulePage(page, name) {
  const path = schedulePath(name);
  const [s, versions, jobs, runs, next, recent] = await Promise.all([
    api("GET", path),
    api("GET", path + "/versions?limit=50").catch(() => ({ items: [] })),
    openJobs(name, 20),
    api("GET", "/api/v1/runs?limit=30&schedule=" + enc(name)),
    api("GET", path + "/next?count=5").catch((e) => ({ error: e.message, fire_times: [] })),
    api("GET", "/api/v1/jobs?limit=6&schedule=" + enc(name)),
  ]);
  const details = await Promise.all(recent.items.map((j) => api("GET", "/api/v1/jobs/" + j.id).catch(() => null)));
  const decisions = [];
  for (const j of details.filter(Boolean)) {
    for (const h of j.history || []) decisions.push(Object.assign({ job: j.id }, typeof h === "string" ? { what: h } : h));
  }
  decisions.sort((a, b) => String(b.at || "").localeCompare(String(a.at || "")));
  const backfill = can("backfillSchedule") ? backfillForm(s.name) : null;
  put(page, 
    el("h2", { "data-schedule-page": s.name }, s.name, " ", stateBadge(s.state), " ", el("span", { class: "muted" }, "v" + s.version)),
    el("div", { class: "toolbar" }, scheduleButtons(s), " ",
      el("a", { href: "#graph?namespace=" + enc(s.name.split("/")[0]) }, "in the graph"), " · ",
      el("a", { href: "#runs?schedule=" + enc(s.name) }, "all runs")),
    backfill,
    el("div", { class: "columns" },
      section("Next fire times",
        next.fire_times.length
          ? el("ol", { id: "next-fire-times" }, next.fire_times.map((f) => el("li", {}, time(f.utc) + " UTC", next.timezone !== "UTC" ? el("span", { class: "muted" }, " (" + time(f.local) + " " + next.timezone + ")") : null)))
          : el("p", { class: "muted", id: "next-fire-times" }, next.error ? "none: " + next.error : "none: no time trigger, or suspended")),
      section("Open jobs", jobs.length ? jobsTable(jobs, false) : el("p", { class: "muted" }, "No job is waiting."))),
    section("Recent runs", runs.items.length ? [timeline(runs.items.slice(0, 30), (r) => "attempt " + r.attempt + " · " + r.run_id.slice(-8), "schedule"), runsTable(runs.items, false)]
      : el("p", { class: "muted" }, "No runs yet.")),
    section("Decision history", decisions.length
      ? table(["at", "job", "decision"], decisions.slice(0, 40), (d) => el("tr", { class: "decision" },
        el("td", {}, time(d.at)), el("td", {}, el("a", { href: "#job/" + d.job }, d.job)), el("td", {}, d.what || JSON.stringify(d))))
      : el("p", { class: "muted" }, "No decisions yet.")),
    el("div", { class: "columns" },
      section("Document", el("pre", { class: "document", id: "schedule-document" }, JSON.stringify(s.document, null, 2))),
      section("Versions", versionsView(versions.items))));
}

function backfillForm(name) {
  const from = el("input", { id: "backfill-from", "data-keep": "", placeholder: "from, e.g. 2026-11-22T00:00:00Z", "aria-label": "backfill from" });
  const to = el("input", { id: "backfill-to", "data-keep": "", placeholder: "to (RFC 3339)", "aria-label": "backfill to" });
  const dry = el("input", { id: "backfill-dry", type: "checkbox", checked: "" });
  return el("div", { class: "filters backfill" }, el("strong", {}, "Backfill"), from, to,
    el("label", {}, dry, " dry run"),
    action("Backfill", "backfillSchedule", "POST", schedulePath(name) + "/backfill",
      (r) => (r.dry_run ? "dry run: " : "backfill: ") + (r.fire_times ? r.fire_times.length : 0) + " fire time(s), " + r.launched + " launched",
      () => ({ from: from.value, to: to.value, dry_run: dry.checked })));
}

// The versions, and the diff (jsdiff, web/vendor) of the two chosen.
function versionsView(items) {
  if (!items.length) return el("p", { class: "muted" }, "No stored versions.");
  const pick = (id, chosen) => el("select", { id, "aria-label": id === "diff-from" ? "diff from version" : "diff to version" },
    items.map((v) => el("option", v.version === chosen ? { value: v.version, selected: "" } : { value: v.version }, "v" + v.version + " · " + time(v.applied_at))));
  const newest = items[0].version;
  const older = items.length > 1 ? items[1].version : newest;
  const a = pick("diff-from", older), b = pick("diff-to", newest);
  const out = el("pre", { class: "diff", id: "version-diff" });
  const show = () => {
    const doc = (v) => JSON.stringify((items.find((x) => String(x.version) === String(v)) || {}).document, null, 2) + "\n";
    const parts = Diff.diffLines(doc(a.value), doc(b.value));
    const lines = [];
    for (const p of parts) {
      for (const line of p.value.replace(/\n$/, "").split("\n")) {
        lines.push(el("span", { class: p.added ? "add" : p.removed ? "del" : "same" }, (p.added ? "+ " : p.removed ? "- " : "  ") + line + "\n"));
      }
    }
    out.replaceChildren(...lines);
    if (a.value === b.value) out.prepend(el("span", { class: "muted" }, "(the same version)\n"));
  };
  a.addEventListener("change", show);
  b.addEventListener("change", show);
  show();
  return [table(["version", "applied"], items, (v) => el("tr", { "data-version": v.version }, el("td", {}, "v" + v.version), el("td", {}, time(v.applied_at)))),
    el("div", { class: "filters" }, "diff ", a, " → ", b), out];
}

function fields(obj, keys) {
  return el("dl", { class: "fields" }, keys.filter(([k]) => obj[k] !== undefined && obj[k] !== null && obj[k] !== "").map(([k, label, render]) =>
    [el("dt", {}, label), el("dd", {}, render ? render(obj[k]) : String(obj[k]))]));
}

function historyTable(history) {
  const rows = (history || []).map((h) => (typeof h === "string" ? { what: h } : h));
  const what = (h) => h.what || Object.entries(h).filter(([k]) => k !== "at")
    .map(([k, v]) => (k === "status" ? stateText(v) : k + " " + (typeof v === "object" ? JSON.stringify(v) : v))).join(" · ");
  return rows.length ? table(["at", "what"], rows, (h) => el("tr", {}, el("td", {}, time(h.at)), el("td", {}, what(h))))
    : el("p", { class: "muted" }, "No history.");
}

async function runPage(page, id) {
  const r = await api("GET", "/api/v1/runs/" + enc(id));
  put(page, el("h2", { "data-run-page": r.run_id }, "Run ", r.run_id, " ", stateBadge(r.state)),
    el("div", { class: "toolbar" }, runButtons(r), " ", el("a", { href: "#lineage/" + enc(r.run_id) }, "its lineage")),
    section("Run", fields(r, [["schedule_name", "schedule", scheduleLink], ["schedule", "schedule", scheduleLink], ["program", "program"],
      ["attempt", "attempt"], ["max_attempts", "max attempts"], ["worker", "worker"], ["launched_at", "launched", time],
      ["attempt_started_at", "started", time], ["finished_at", "finished", time], ["reason", "reason"], ["job_id", "job", (j) => el("a", { href: "#job/" + j }, j)],
      ["lineage", "lineage", (l) => el("a", { href: "#lineage/" + enc(l) }, l)]])),
    section("History", historyTable(r.history)));
}

async function jobPage(page, id) {
  const [j, why] = await Promise.all([api("GET", "/api/v1/jobs/" + enc(id)), api("GET", "/api/v1/jobs/" + enc(id) + "/why").catch((e) => ({ summary: e.message }))]);
  put(page, el("h2", { "data-job-page": j.id }, "Job ", j.id, " ", stateBadge(j.state)),
    section("Job", fields(j, [["schedule_name", "schedule", scheduleLink], ["schedule_version", "version"], ["opened_at", "opened", time],
      ["ready_at", "ready", time], ["next_check_at", "next check", time], ["finished_at", "finished", time], ["discard_reason", "discarded because"],
      ["run_id", "run", (x) => el("a", { href: "#run/" + enc(x) }, x)]])),
    section("Why", el("pre", { class: "why" }, explain(why))),
    section("Decision history", historyTable(j.history)));
}

// A lineage: its runs, waiting jobs and skipped schedules as a graph coloured and labelled by
// state (GET /api/v1/lineages/{id}/graph), and its runs on a timeline; without an id, the list.
async function lineagePage(page, id) {
  put(page, el("h2", {}, "Lineage"));
  if (!id) {
    if (!can("listLineages")) {
      put(page, el("p", { class: "muted" }, "Pick a run on the Runs page to see its lineage."));
      return;
    }
    const { items } = await api("GET", "/api/v1/lineages?limit=100");
    put(page, items.length === 0 ? el("p", { class: "muted" }, "No lineages yet.") :
      table(["lineage", "state", "started", "runs", "active", "failed", "open jobs"], items, (l) =>
        el("tr", { "data-lineage": l.lineage, "data-state": l.state },
          el("td", {}, el("a", { href: "#lineage/" + enc(l.lineage) }, l.lineage)),
          el("td", {}, stateBadge(l.state)),
          el("td", {}, time(l.started_at)),
          el("td", {}, l.runs),
          el("td", {}, l.active_runs),
          el("td", {}, l.failed_runs),
          el("td", {}, l.open_jobs))));
    return;
  }
  const [l, g] = await Promise.all([api("GET", "/api/v1/lineages/" + enc(id)), api("GET", "/api/v1/lineages/" + enc(id) + "/graph")]);
  const nodes = g.nodes.map((n) => {
    const lines = [n.schedule || n.program, stateText(n.state) + (n.attempt > 1 ? " · attempt " + n.attempt : "")];
    if (n.state === "waiting" && n.why) lines.push(n.why);
    else if (n.detail && !["succeeded", "failed", "killed", "cancelled"].includes(n.detail)) lines.push(n.detail);
    const target = n.run_id ? "#run/" + enc(n.run_id) : n.job_id ? "#job/" + n.job_id : "#schedule/" + n.schedule;
    return { id: n.id, lines, schedule: n.schedule, classes: n.state, state: n.state,
      label: (n.schedule || "") + ": " + (WORDS[n.state] || n.state) + (n.why ? ", " + n.why : n.detail ? ", " + n.detail : ""),
      open: () => { location.hash = target; } };
  });
  const box = await drawGraph("lineage", nodes, g.edges, { label: "lineage graph", rankdir: "LR" });
  put(page, el("p", { "data-lineage-state": l.state }, "lineage ", l.lineage, " ", stateBadge(l.state),
    " started ", time(l.started_at), ": ", l.run_count, " run(s), ", l.active_runs, " active, ",
    l.failed_runs, " failed or killed, ", l.open_jobs, " open job(s)"),
    legend(["waiting", "launched", "running", "succeeded", "failed", "cancelled", "skipped"].map((s) => [s, stateText(s)])),
    box,
    el("p", { class: "muted" }, "Each node after the nodes that triggered it; Enter or a click opens its run, job or schedule."),
    section("Timeline", timeline(l.runs || [], (r) => r.schedule, "lineage")));
}

// Who changed what (GET /api/v1/audit), newest first, filtered by actor, namespace and since.
async function auditPage(page, params) {
  const q = new URLSearchParams({ limit: "200" });
  for (const k of ["actor", "namespace", "since"]) if (params.get(k)) q.set(k, params.get(k));
  const { items } = await api("GET", "/api/v1/audit?" + q);
  const inputs = {
    actor: el("input", { id: "filter-actor", placeholder: "token:NAME or os:USER@HOST", value: params.get("actor") || "" }),
    namespace: el("input", { id: "filter-namespace", placeholder: "namespace", value: params.get("namespace") || "" }),
    since: el("input", { id: "filter-since", placeholder: "since (RFC 3339)", value: params.get("since") || "" }),
  };
  const apply = () => {
    const p = new URLSearchParams();
    for (const [k, input] of Object.entries(inputs)) if (input.value) p.set(k, input.value);
    location.hash = "#audit" + (p.toString() ? "?" + p : "");
  };
  for (const input of Object.values(inputs)) input.addEventListener("change", apply);
  page.append(el("h2", {}, "Audit"),
    el("div", { class: "filters" }, inputs.actor, inputs.namespace, inputs.since, el("button", { onclick: apply }, "Filter")),
    items.length === 0 ? el("p", { class: "muted" }, "No changes recorded.") :
    table(["at", "actor", "action", "schedule", "run", "what changed"], items, (a) =>
      el("tr", { "data-audit": a.seq, "data-action": a.action },
        el("td", {}, time(a.at)),
        el("td", {}, el("a", { href: "#audit?actor=" + enc(a.actor) }, a.actor)),
        el("td", {}, a.action),
        el("td", {}, a.schedule),
        el("td", {}, a.run_id ? el("a", { href: "#lineage/" + enc(a.run_id) }, a.run_id) : "-"),
        el("td", {}, el("code", {}, JSON.stringify(a.detail))))));
}

async function whoami() {
  try {
    const w = await api("GET", "/api/v1/whoami");
    state.who = w;
    state.ops = new Set(w.operations);
    document.getElementById("whoami").textContent = w.auth ? w.role + " of " + w.namespaces.join(", ") : "no tokens (loopback)";
    document.getElementById("token").style.display = w.auth ? "" : "none";
    document.querySelector("#token-form button").style.display = w.auth ? "" : "none";
    return true;
  } catch (e) {
    state.ops = new Set();
    document.getElementById("whoami").textContent = "";
    say(e.message + " (enter a token)", "error");
    return false;
  }
}

// Each drawing of a page has a number: one that finishes after a newer one started (an action's
// refresh still loading when the user opens another page) is dropped, not drawn over it.
let routeGeneration = 0;
let pollTimer = null;

async function route(live) {
  const generation = ++routeGeneration;
  clearTimeout(pollTimer);
  const hash = location.hash.replace(/^#/, "") || "graph";
  const [path, query] = hash.split("?");
  const [name, ...rest] = path.split("/");
  const id = rest.map(decodeURIComponent).join("/");
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.id === "nav-" + name);
  const page = el("div", { id: "page-" + name });
  let next = POLL_MS;
  try {
    if (name === "jobs") await jobsPage(page, new URLSearchParams(query));
    else if (name === "runs") await runsPage(page, new URLSearchParams(query));
    else if (name === "lineage") await lineagePage(page, id);
    else if (name === "schedule") await schedulePage(page, id);
    else if (name === "run") await runPage(page, id);
    else if (name === "job") await jobPage(page, id);
    else if (name === "schedules") await schedulesPage(page);
    else if (name === "audit") await auditPage(page, new URLSearchParams(query));
    else await graphPage(page, new URLSearchParams(query));
    if (live && document.getElementById("message").className === "error") say("");
  } catch (e) {
    say(e.message, "error");
    next = e.status === 503 || e.status === 429 ? Math.max(BACKOFF_MS, e.retryAfter * 1000) : BACKOFF_MS;
    if (live) { if (generation === routeGeneration) pollTimer = setTimeout(poll, next); return; }
  }
  if (generation !== routeGeneration) return;
  const old = document.getElementById("page");
  const focused = document.activeElement;
  const focusKey = focused && old.contains(focused) ? (focused.getAttribute("data-node-id") || focused.id) : null;
  for (const input of old.querySelectorAll("[data-keep]")) {
    const same = page.querySelector("#" + CSS.escape(input.id));
    if (same) same.value = input.value;
  }
  old.replaceChildren(page);
  if (focusKey) {
    const again = page.querySelector(`[data-node-id="${CSS.escape(focusKey)}"]`) || document.getElementById(focusKey);
    if (again) again.focus({ preventScroll: true });
  }
  document.body.setAttribute("data-loaded", name);
  document.body.setAttribute("data-refreshed", String(Date.now()));
  pollTimer = setTimeout(poll, next);
}

// Live: the page read again, one reading at a time, not while hidden or typed in.
function poll() {
  const a = document.activeElement;
  const typing = a && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName) && document.getElementById("page").contains(a);
  if (document.hidden || typing) { pollTimer = setTimeout(poll, POLL_MS); return; }
  route(true);
}

document.getElementById("token-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  state.token = document.getElementById("token").value;
  sessionStorage.setItem("trigd-token", state.token);
  say("");
  if (await whoami()) route();
});
window.addEventListener("hashchange", () => {
  if (document.getElementById("message").className === "ok") say("");
  route();
});
whoami().then(() => route());
