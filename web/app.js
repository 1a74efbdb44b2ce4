// The trigd console: plain JavaScript on the HTTP API (/api/v1, docs/api.md), no build step.
// Pages by the location's hash: #schedules, #jobs, #runs, #lineage/RUN_ID, #audit. The buttons of an
// operation show only when the caller's role may call it (whoami's operations).
"use strict";

const state = { token: sessionStorage.getItem("trigd-token") || "", ops: new Set(), who: null };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
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
    throw new Error(((reply && reply.error) || "HTTP " + res.status) + (problems.length ? " (" + problems.join("; ") + ")" : ""));
  }
  return reply;
}

const enc = encodeURIComponent;
function schedulePath(name) {
  const [ns, ...rest] = name.split("/");
  return "/api/v1/schedules/" + enc(ns) + "/" + enc(rest.join("/"));
}
function stateBadge(s) { return el("span", { class: "state " + String(s).replace(/\s.*/, "") }, s); }
function time(t) { return t ? String(t).replace("T", " ").replace(/(\.\d+)?([+-]\d\d:\d\d|Z)$/, "") : "-"; }
function can(op) { return state.ops.has(op); }

function table(columns, rows, render) {
  return el("table", {},
    el("thead", {}, el("tr", {}, columns.map((c) => el("th", {}, c)))),
    el("tbody", {}, rows.map(render)));
}

// An operation behind a button: its reply said, then the page drawn again.
function action(label, op, method, path, done) {
  if (!can(op)) return null;
  return el("button", {
    "data-op": op,
    onclick: async (ev) => {
      ev.target.disabled = true;
      try {
        const r = await api(method, path, {});
        say(done(r), "ok");
      } catch (e) {
        say(e.message, "error");
      }
      route();
    },
  }, label);
}

async function schedulesPage(page) {
  const { items } = await api("GET", "/api/v1/schedules?limit=1000");
  page.append(el("h2", {}, "Schedules"),
    items.length === 0 ? el("p", { class: "muted" }, "No schedules yet: apply one with trigctl schedules apply.") :
    table(["name", "state", "version", "open jobs", "active runs", "next fire", ""], items, (s) =>
      el("tr", { "data-schedule": s.name },
        el("td", {}, el("a", { href: "#runs?schedule=" + enc(s.name) }, s.name)),
        el("td", {}, stateBadge(s.state)),
        el("td", {}, "v" + s.version),
        el("td", {}, el("a", { href: "#jobs?schedule=" + enc(s.name) }, s.open_jobs)),
        el("td", {}, s.active_runs),
        el("td", {}, time(s.next_fire_at)),
        el("td", {},
          action("Run now", "startSchedule", "POST", schedulePath(s.name) + "/start",
            (r) => "started " + s.name + (r && r.job_id ? ": job " + r.job_id : "")),
          " ",
          s.state === "suspended"
            ? action("Resume", "resumeSchedule", "POST", schedulePath(s.name) + "/resume", (r) => r.done + " " + s.name)
            : action("Suspend", "suspendSchedule", "POST", schedulePath(s.name) + "/suspend", (r) => r.done + " " + s.name)))));
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

async function jobsPage(page, params) {
  const schedule = params.get("schedule") || "";
  const q = schedule ? "&schedule=" + enc(schedule) : "";
  const [c, t] = await Promise.all([
    api("GET", "/api/v1/jobs?state=pending_constraint&limit=50" + q),
    api("GET", "/api/v1/jobs?state=pending_trigger&limit=50" + q),
  ]);
  const jobs = c.items.concat(t.items);
  const whys = await Promise.all(jobs.map((j) => api("GET", "/api/v1/jobs/" + j.id + "/why").catch((e) => ({ summary: e.message }))));
  page.append(el("h2", {}, "Waiting jobs" + (schedule ? " of " + schedule : "")),
    jobs.length === 0 ? el("p", { class: "muted" }, "No job is waiting.") :
    table(["job", "schedule", "state", "opened", "why"], jobs, (j, i) =>
      el("tr", { "data-job": j.id },
        el("td", {}, j.id),
        el("td", {}, j.schedule),
        el("td", {}, stateBadge(j.state)),
        el("td", {}, time(j.opened_at)),
        el("td", {}, el("pre", { class: "why" }, explain(whys[i]))))));
}

async function runsPage(page, params) {
  const schedule = params.get("schedule") || "";
  const only = params.get("state") || "";
  const { items } = await api("GET", "/api/v1/runs?limit=200" + (schedule ? "&schedule=" + enc(schedule) : ""));
  const rows = only ? items.filter((r) => r.state === only) : items;
  const scheduleInput = el("input", { id: "filter-schedule", placeholder: "namespace/name", value: schedule });
  const stateSelect = el("select", { id: "filter-state" },
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
  page.append(el("h2", {}, "Runs"),
    el("div", { class: "filters" }, scheduleInput, stateSelect, el("button", { onclick: apply }, "Filter")),
    rows.length === 0 ? el("p", { class: "muted" }, "No runs.") :
    table(["run", "schedule", "program", "state", "attempt", "launched", "finished", ""], rows, (r) =>
      el("tr", { "data-run": r.run_id, "data-state": r.state },
        el("td", {}, el("a", { href: "#lineage/" + enc(r.run_id) }, r.run_id)),
        el("td", {}, r.schedule),
        el("td", {}, r.program),
        el("td", {}, stateBadge(r.state)),
        el("td", {}, r.attempt),
        el("td", {}, time(r.launched_at)),
        el("td", {}, time(r.finished_at)),
        el("td", {},
          ["launched", "running", "retry_wait"].includes(r.state)
            ? action("Cancel", "cancelRun", "POST", "/api/v1/runs/" + enc(r.run_id) + "/cancel", () => "cancelled " + r.run_id)
            : action("Rerun", "rerunRun", "POST", "/api/v1/runs/" + enc(r.run_id) + "/rerun",
              (x) => "rerun of " + r.run_id + (x && x.run_id ? ": " + x.run_id : ""))))));
}

// The upstream runs of a run: the program events among its launch request's triggered_by.
function upstreamOf(run) {
  let request = run.request;
  if (typeof request === "string") { try { request = JSON.parse(request); } catch (e) { request = {}; } }
  return ((request && request.triggered_by) || [])
    .filter((t) => t.type === "program" && t.payload && t.payload.run_id)
    .map((t) => t.payload.run_id);
}

// A lineage as a graph: from the lineage API when trigd serves it, else the runs reached from
// this one through triggered_by, upstream to the root, drawn as a tree.
async function lineagePage(page, id) {
  page.append(el("h2", {}, "Lineage"));
  if (!id) {
    if (!can("listLineages")) {
      page.append(el("p", { class: "muted" }, "Pick a run on the Runs page to see its lineage."));
      return;
    }
    const { items } = await api("GET", "/api/v1/lineages?limit=100");
    page.append(items.length === 0 ? el("p", { class: "muted" }, "No lineages yet.") :
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
  const nodes = new Map();
  const edges = [];
  if (can("getLineage")) {
    const l = await api("GET", "/api/v1/lineages/" + enc(id));
    page.append(el("p", { "data-lineage-state": l.state }, "lineage ", l.lineage, " ", stateBadge(l.state),
      " started ", time(l.started_at), ": ", l.run_count, " run(s), ", l.active_runs, " active, ",
      l.failed_runs, " failed or killed, ", l.open_jobs, " open job(s)"));
    for (const r of l.runs || []) {
      nodes.set(r.run_id, r);
      for (const u of r.upstream || []) edges.push([u, r.run_id]);
    }
  } else {
    const todo = [id];
    while (todo.length && nodes.size < 100) {
      const rid = todo.shift();
      if (nodes.has(rid)) continue;
      const run = await api("GET", "/api/v1/runs/" + enc(rid)).catch(() => ({ run_id: rid, state: "unknown" }));
      nodes.set(rid, run);
      for (const u of upstreamOf(run)) { edges.push([u, rid]); todo.push(u); }
    }
  }
  // Depth of each run: the longest path from a root.
  const depth = new Map();
  const d = (r, seen) => {
    if (depth.has(r)) return depth.get(r);
    if (seen.has(r)) return 0;
    seen.add(r);
    const ups = edges.filter((e) => e[1] === r).map((e) => d(e[0], seen) + 1);
    const v = ups.length ? Math.max(...ups) : 0;
    depth.set(r, v);
    return v;
  };
  for (const r of nodes.keys()) d(r, new Set());
  const levels = [];
  for (const [r, v] of depth) (levels[v] = levels[v] || []).push(r);
  const W = 300, H = 54, GX = 40, GY = 40;
  const pos = new Map();
  levels.forEach((rs, y) => rs.forEach((r, x) => pos.set(r, [20 + x * (W + GX), 20 + y * (H + GY)])));
  const width = 40 + Math.max(1, ...levels.map((l) => l.length)) * (W + GX);
  const height = 40 + levels.length * (H + GY);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "graph");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text) e.textContent = text;
    svg.append(e);
    return e;
  };
  for (const [a, b] of edges) {
    if (!pos.has(a) || !pos.has(b)) continue;
    const [x1, y1] = pos.get(a), [x2, y2] = pos.get(b);
    add("line", { x1: x1 + W / 2, y1: y1 + H, x2: x2 + W / 2, y2: y2 });
  }
  for (const [r, [x, y]] of pos) {
    const run = nodes.get(r) || {};
    const g = add("a", { href: "#lineage/" + enc(r) });
    const rect = document.createElementNS(ns, "rect");
    for (const [k, v] of Object.entries({ x, y, width: W, height: H, class: run.state || "", "data-run": r })) rect.setAttribute(k, v);
    g.append(rect);
    for (const [i, t] of [(run.schedule_name || run.schedule || "?") + "  " + (run.state || ""), r].entries()) {
      const text = document.createElementNS(ns, "text");
      text.setAttribute("x", x + 10);
      text.setAttribute("y", y + 22 + i * 18);
      text.textContent = t;
      g.append(text);
    }
  }
  page.append(el("p", { class: "muted" }, nodes.size + " run(s); roots at the top, each run below the runs that triggered it."), svg);
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

async function route() {
  const generation = ++routeGeneration;
  const hash = location.hash.replace(/^#/, "") || "schedules";
  const [path, query] = hash.split("?");
  const [name, ...rest] = path.split("/");
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.id === "nav-" + name);
  const page = el("div", { id: "page-" + name });
  try {
    if (name === "jobs") await jobsPage(page, new URLSearchParams(query));
    else if (name === "runs") await runsPage(page, new URLSearchParams(query));
    else if (name === "lineage") await lineagePage(page, decodeURIComponent(rest.join("/")));
    else if (name === "audit") await auditPage(page, new URLSearchParams(query));
    else await schedulesPage(page);
  } catch (e) {
    say(e.message, "error");
  }
  if (generation !== routeGeneration) return;
  document.getElementById("page").replaceChildren(page);
  document.body.setAttribute("data-loaded", name);
}

document.getElementById("token-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  state.token = document.getElementById("token").value;
  sessionStorage.setItem("trigd-token", state.token);
  say("");
  if (await whoami()) route();
});
window.addEventListener("hashchange", route);
whoami().then(route);
