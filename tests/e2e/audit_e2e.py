#!/usr/bin/python3
"""e2e: the audit (docs/security.md#audit). Every verb done through the API (named tokens) and
through trigctl straight to PostgreSQL (os:USER@HOST) is read back, one row each with its actor,
by `trigctl audit list --json` and GET /api/v1/audit, with their filters (since, actor,
namespace), a token's namespaces, and `trigctl --api audit list` printing what trigctl prints
from the database. A refused verb adds no row; `runs show` names who started a run by hand.

Run by ctest with Debian's python3: audit_e2e.py SRC BIN.
"""
import getpass
import json
import os
import socket
import subprocess
import sys
import time
from urllib.parse import quote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apilib import Trigd  # noqa: E402

SRC, BIN = sys.argv[1], sys.argv[2]
T = Trigd(BIN, "audit", tokens=("admin", "operator_a", "viewer", "late"))
ADMIN, OP, VIEW, LATE = (T.tokens[n] for n in ("admin", "operator_a", "viewer", "late"))
OS_ACTOR = f"os:{getpass.getuser()}@{socket.gethostname()}"


def fail(msg):
    print("FAIL:", msg)
    print("--- trigd log")
    print(open(T.log_path).read()[-4000:])
    sys.exit(1)


def expect(status, method, path, token, body=None):
    got, reply = T.request(method, path, token, body)
    if got != status:
        fail(f"{method} {path}: {got}, expected {status}: {reply}")
    return reply


def trigctl(*args, api=False):
    e = dict(T.env)
    if api:
        e.update(TRIGD_API_URL=f"http://127.0.0.1:{T.port}", TRIGD_TOKEN=VIEW, TRIGD_PG="host=/nonexistent")
    p = subprocess.run([f"{BIN}/trigctl", *args], env=e, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"trigctl {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p.stdout


def launched_run(job_id):
    def run():
        return expect(200, "GET", f"/api/v1/jobs/{job_id}", VIEW).get("run_id")
    return T.wait_for(f"job {job_id}'s run", run, 30)


def audit(query=""):
    """Every row the API lists for `query`, oldest first, as (actor, action, schedule)."""
    page = expect(200, "GET", "/api/v1/audit?limit=1000" + ("&" + query if query else ""), VIEW)
    return [(a["actor"], a["action"], a["schedule"]) for a in reversed(page["items"])]


run = T.run
sleeper = lambda ns, name: {"namespace": ns, "name": name,  # noqa: E731
                            "program": {"name": f"{ns}.{name}", "args": {"command": "sleep 600"}},
                            "trigger": {"partition": {"dataset": f"{run}.never"}}}
hourly = {"namespace": "b", "name": "hourly", "program": {"name": "b.hourly"}, "trigger": {"time": {"cron": "0 * * * *"}}}
now = time.time()
window = {"from": time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(now - 3 * 3600)),
          "to": time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(now - 2 * 3600))}
try:
    # --- through the API, by named tokens -----------------------------------------------------
    expect(200, "PUT", "/api/v1/schedules/a/api", ADMIN, sleeper("a", "api"))
    expect(200, "POST", "/api/v1/schedules", ADMIN, [hourly, sleeper("a", "api")])  # a/api unchanged: no row
    expect(200, "POST", "/api/v1/schedules/a/api/suspend", OP)
    expect(200, "POST", "/api/v1/schedules/a/api/suspend", OP)  # already suspended: no row
    expect(409, "POST", "/api/v1/schedules/a/api/start", OP)  # refused: no row
    expect(200, "POST", "/api/v1/schedules/a/api/resume", OP)
    started = expect(200, "POST", "/api/v1/schedules/a/api/start", OP, {"args": {"mode": "x"}})
    api_run = launched_run(started["job_id"])
    expect(200, "POST", f"/api/v1/runs/{api_run}/cancel", OP, {"reason": "e2e"})
    expect(409, "POST", f"/api/v1/runs/{api_run}/cancel", OP)  # finished: no row
    rerun = expect(200, "POST", f"/api/v1/runs/{api_run}/rerun", OP)
    expect(200, "POST", "/api/v1/schedules/b/hourly/backfill", ADMIN, {**window, "dry_run": True})  # no row
    expect(200, "POST", "/api/v1/schedules/b/hourly/backfill", ADMIN, window)
    expect(403, "DELETE", "/api/v1/schedules/b/hourly", OP)  # refused: no row
    time.sleep(0.05)  # the rows below are later by this at least: --since tells them apart

    # --- through trigctl straight to PostgreSQL ---------------------------------------------
    doc = os.path.join(T.tmp, "cli.json")
    json.dump(sleeper("a", "cli"), open(doc, "w"))
    trigctl("schedules", "apply", "-f", doc)
    trigctl("schedules", "suspend", "a/cli")
    trigctl("schedules", "resume", "a/cli")
    cli_job = json.loads(trigctl("runs", "start", "a/cli", "--json"))
    cli_run = cli_job["run_id"] or launched_run(cli_job["job_id"])
    trigctl("runs", "cancel", cli_run)
    trigctl("runs", "rerun", cli_run, "--json")
    trigctl("schedules", "backfill", "b/hourly", "--from", window["to"],
            "--to", time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(now - 3600)))
    trigctl("schedules", "delete", "b/hourly")
    trigctl("events", "emit", "partition", f"{run}.never", "dt=1")  # a producer's event: no row

    # --- read back ----------------------------------------------------------------------------
    api_rows = [("token:admin", "apply", "a/api"), ("token:admin", "apply", "b/hourly"),
                ("token:operator_a", "suspend", "a/api"), ("token:operator_a", "resume", "a/api"),
                ("token:operator_a", "start", "a/api"), ("token:operator_a", "cancel", "a/api"),
                ("token:operator_a", "rerun", "a/api"), ("token:admin", "backfill", "b/hourly")]
    cli_rows = [(OS_ACTOR, v, s) for v, s in (("apply", "a/cli"), ("suspend", "a/cli"), ("resume", "a/cli"),
                                               ("start", "a/cli"), ("cancel", "a/cli"), ("rerun", "a/cli"),
                                               ("backfill", "b/hourly"), ("delete", "b/hourly"))]
    if audit() != api_rows + cli_rows:
        fail(f"the audit through the API: {audit()}\nexpected {api_rows + cli_rows}")
    direct = json.loads(trigctl("audit", "list", "--json", "--limit", "1000"))
    if [(a["actor"], a["action"], a["schedule"]) for a in reversed(direct)] != api_rows + cli_rows:
        fail(f"trigctl audit list --json: {direct}")
    rows = {(a["action"], a["schedule"], a["actor"]): a for a in direct}
    cancel = rows[("cancel", "a/api", "token:operator_a")]
    if cancel["run_id"] != api_run or cancel["detail"].get("why") != "e2e" or cancel["namespace"] != "a":
        fail(f"the API's cancel: {cancel}")
    if rows[("rerun", "a/api", "token:operator_a")]["detail"].get("job_id") != rerun["job_id"]:
        fail(f"the API's rerun: {rows[('rerun', 'a/api', 'token:operator_a')]}")
    backfill = rows[("backfill", "b/hourly", "token:admin")]["detail"]
    if backfill.get("ticks") != 1:
        fail(f"the API's backfill: {backfill}")
    if rows[("start", "a/api", "token:operator_a")]["detail"].get("args") != {"mode": "x"}:
        fail(f"the API's start: {rows[('start', 'a/api', 'token:operator_a')]}")

    # Filters, both ways, and combined. `since`: the time of trigctl's first change.
    mid = rows[("apply", "a/cli", OS_ACTOR)]["at"]
    for query, flags, want in (
            ("actor=token:operator_a", ["--actor", "token:operator_a"], [r for r in api_rows if r[0] == "token:operator_a"]),
            (f"actor={quote(OS_ACTOR)}", ["--actor", OS_ACTOR], cli_rows),
            ("namespace=b", ["--namespace", "b"], [r for r in api_rows + cli_rows if r[2].startswith("b/")]),
            (f"since={quote(mid)}", ["--since", mid], cli_rows),
            (f"since={quote(mid)}&namespace=a", ["--since", mid, "--namespace", "a"], cli_rows[:6])):
        if audit(query) != want:
            fail(f"GET /api/v1/audit?{query}: {audit(query)}\nexpected {want}")
        got = json.loads(trigctl("audit", "list", "--json", *flags))
        if [(a["actor"], a["action"], a["schedule"]) for a in reversed(got)] != want:
            fail(f"trigctl audit list {' '.join(flags)}: {got}")
    # A token of namespace b sees b's rows only; a namespace out of its reach is 403.
    page = expect(200, "GET", "/api/v1/audit", LATE)
    if sorted({a["namespace"] for a in page["items"]}) != ["b"] or len(page["items"]) != 4:
        fail(f"a token of b: {page}")
    expect(403, "GET", "/api/v1/audit?namespace=a", LATE)
    expect(400, "GET", "/api/v1/audit?since=yesterday", VIEW)
    expect(400, "GET", "/api/v1/audit?actor=", VIEW)
    # trigctl --api prints what trigctl prints from the database.
    for flags in ([], ["--json"], ["--namespace", "a", "--limit", "3"], ["--actor", OS_ACTOR, "--json"]):
        if trigctl("audit", "list", *flags) != trigctl("audit", "list", *flags, api=True):
            fail(f"trigctl audit list {' '.join(flags)} differs through the API")
    table = trigctl("audit", "list", "--limit", "1").splitlines()
    if len(table) != 2 or table[0].split() != ["AT", "ACTOR", "ACTION", "SCHEDULE", "RUN_ID", "DETAIL"] \
            or OS_ACTOR not in table[1] or " delete " not in table[1]:
        fail(f"trigctl audit list: {table}")

    # runs show names who started a run by hand, as the audit names them (a rerun: its rerunner).
    if json.loads(trigctl("runs", "show", api_run, "--json")).get("started_by_hand") != "token:operator_a":
        fail(f"runs show {api_run}: {trigctl('runs', 'show', api_run)}")
    if expect(200, "GET", f"/api/v1/runs/{cli_run}", VIEW).get("started_by_hand") != OS_ACTOR:
        fail(f"GET /api/v1/runs/{cli_run}: {expect(200, 'GET', f'/api/v1/runs/{cli_run}', VIEW)}")
    shown = trigctl("runs", "show", cli_run)
    if not any(line.split()[:2] == ["started_by_hand:", OS_ACTOR] for line in shown.splitlines()):
        fail(f"runs show {cli_run}: {shown}")
    rerun_run = launched_run(rerun["job_id"])
    if expect(200, "GET", f"/api/v1/runs/{rerun_run}", VIEW).get("started_by_hand") != "token:operator_a":
        fail("the rerun's run does not name its rerunner")
    print(f"audit e2e: ok ({len(api_rows) + len(cli_rows)} rows)")
finally:
    T.stop()
