#!/usr/bin/python3
"""e2e: trigd's HTTP API (SPEC §13) against docs/api/openapi.yaml, with tokens and roles.

Starts trigd (its API on a free port, a token file with an admin, an operator of namespace a
and a viewer) and a worker on this run's own database and topics, then calls every operation of
the OpenAPI document and validates each request body and each reply (status and body) against
it. Also: 401/403 for no token, a wrong token, a viewer applying, an operator of a in b, each
with nothing changed; oversized bodies, invalid JSON, unknown fields and query parameters, path
injection and a slow client refused with the error shape; tokens re-read on SIGHUP; without a
token file a non-loopback address refused; no token and no PostgreSQL password in trigd's log;
and `trigctl --api` printing exactly what trigctl prints from the database.

Run by ctest with Debian's python3 (python3-yaml, python3-jsonschema): api_e2e.py SRC BIN.
"""
import http.client
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time

import jsonschema
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apilib import Trigd, free_port  # noqa: E402

SRC, BIN = sys.argv[1], sys.argv[2]
SPEC = yaml.safe_load(open(os.path.join(SRC, "docs/api/openapi.yaml")))
called = set()  # operationIds exercised


def fail(msg):
    print("FAIL:", msg)
    if os.path.exists(T.log_path):
        print("--- trigd log")
        print(open(T.log_path).read()[-6000:])
    sys.exit(1)


def wait_for(what, fn, timeout=60):
    return Trigd.wait_for(what, fn, timeout)


# --- the OpenAPI document: the operation of a request, and its schemas ---------------------
def resolve(schema):
    while isinstance(schema, dict) and "$ref" in schema:
        node = SPEC
        for part in schema["$ref"][2:].split("/"):
            node = node[part]
        schema = node
    return schema


def validate(instance, schema, what):
    # The document's components beside the schema, so that #/components/... references resolve.
    validator = jsonschema.Draft202012Validator({**schema, "components": SPEC["components"]})
    errors = sorted(validator.iter_errors(instance), key=lambda e: e.path)
    if errors:
        fail(f"{what}: {errors[0].message} at {list(errors[0].path)}: {json.dumps(instance)[:400]}")


def operation(method, path):
    bare = path.split("?")[0]
    for template, item in SPEC["paths"].items():
        pattern = "^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$"
        if re.match(pattern, bare) and method.lower() in item:
            return template, item[method.lower()], item.get("parameters", [])
    return None, None, None


def call(method, path, token=None, body=None, raw=None, documented=True):
    """One request; the reply's status and JSON. Validated against the document when documented."""
    status, reply = T.request(method, path, token, body, raw)
    if reply is not None and "unparsed" in reply:
        fail(f"{method} {path}: {status} with no JSON: {reply}")
    if status >= 400:
        validate(reply, resolve({"$ref": "#/components/schemas/Error"}), f"{method} {path} error {status}")
    if documented:
        template, op, _ = operation(method, path)
        if op is None:
            fail(f"{method} {path}: no such operation in openapi.yaml")
        called.add(op["operationId"])
        if body is not None and "requestBody" in op and status < 400:
            rb = resolve(op["requestBody"])
            validate(body, rb["content"]["application/json"]["schema"], f"{method} {path} request")
        responses = op["responses"]
        if str(status) not in responses:
            fail(f"{method} {path}: status {status} is not documented ({sorted(responses)}): {reply}")
        r = resolve(responses[str(status)])
        validate(reply, r["content"]["application/json"]["schema"], f"{method} {path} {status}")
    return status, reply


def expect(status, method, path, **kw):
    got, reply = call(method, path, **kw)
    if got != status:
        fail(f"{method} {path}: {got}, expected {status}: {reply}")
    return reply


# --- set-up: trigd with its API and a token file, a worker, this run's database and topics ----
PG_PASSWORD = "pg-" + secrets.token_hex(8)
T = Trigd(BIN, "api", pg_password=PG_PASSWORD)
TOKENS, env, run, API_PORT, trigd = T.tokens, T.env, T.run, T.port, T.trigd
write_tokens = T.write_tokens

try:
    ADMIN, OP, VIEW = TOKENS["admin"], TOKENS["operator_a"], TOKENS["viewer"]

    # --- every operation ---------------------------------------------------------------------
    who = expect(200, "GET", "/api/v1/whoami", token=OP)
    assert {k: who[k] for k in ("role", "namespaces", "auth")} == {"role": "operator", "namespaces": ["a"],
                                                                   "auth": True}, who
    assert "suspendSchedule" in who["operations"] and "applySchedule" not in who["operations"], who
    doc = {"namespace": "a", "name": "ingest", "program": {"name": "a.ingest", "args": {}},
           "trigger": {"partition": {"dataset": f"{run}.raw"}}}
    out = expect(200, "PUT", "/api/v1/schedules/a/ingest", token=ADMIN, body=doc)
    assert out == {"schedule": "a/ingest", "version": 1, "changed": True}, out
    other = {"namespace": "b", "name": "other", "program": {"name": "b.other"},
             "trigger": {"time": {"cron": "0 * * * *"}}}
    out = expect(200, "POST", "/api/v1/schedules", token=ADMIN, body=[other, doc])
    assert [o["changed"] for o in out] == [True, False], out
    page = expect(200, "GET", "/api/v1/schedules?limit=1", token=VIEW)
    assert len(page["items"]) == 1 and page["next_offset"] == 1, page
    page = expect(200, "GET", "/api/v1/schedules?limit=1&offset=1", token=VIEW)
    assert len(page["items"]) == 1 and page["next_offset"] is None, page
    # A token of namespace a sees a's schedules only.
    page = expect(200, "GET", "/api/v1/schedules", token=OP)
    assert [s["name"] for s in page["items"]] == ["a/ingest"], page
    got = expect(200, "GET", "/api/v1/schedules/a/ingest", token=VIEW)
    assert got["document"]["program"]["name"] == "a.ingest", got
    expect(404, "GET", "/api/v1/schedules/a/nothing", token=VIEW)

    subprocess.run([f"{BIN}/trigctl", "events", "emit", "partition", f"{run}.raw", "dt=1"], env=env, check=True,
                   stdout=subprocess.DEVNULL)

    def succeeded():
        items = expect(200, "GET", "/api/v1/runs?schedule=a/ingest", token=VIEW)["items"]
        return items if items and items[0]["state"] == "succeeded" else None

    runs = wait_for("a succeeded run", succeeded, 60)
    run_id = runs[0]["run_id"]
    got = expect(200, "GET", f"/api/v1/runs/{run_id}", token=VIEW)
    assert got["run_id"] == run_id, got
    expect(404, "GET", "/api/v1/runs/00000000-0000-0000-0000-000000000000", token=VIEW)
    jobs = expect(200, "GET", "/api/v1/jobs?schedule=a/ingest&state=launched", token=VIEW)["items"]
    assert len(jobs) == 1, jobs
    job_id = jobs[0]["id"]
    expect(200, "GET", f"/api/v1/jobs/{job_id}", token=VIEW)
    why = expect(200, "GET", f"/api/v1/jobs/{job_id}/why", token=VIEW)
    assert why["job"] == job_id, why
    expect(404, "GET", "/api/v1/jobs/999999999", token=VIEW)
    expect(400, "GET", "/api/v1/jobs/abc", token=VIEW)
    expect(400, "GET", "/api/v1/jobs?state=sleeping", token=VIEW)
    expect(404, "GET", "/api/v1/jobs?schedule=a/nothing", token=VIEW)
    lag = expect(200, "GET", "/api/v1/lag", token=VIEW)
    assert lag["rows"] and all(r["group"] == run for r in lag["rows"]), lag
    out = expect(200, "POST", "/api/v1/schedules/a/ingest/suspend", token=OP)
    assert out["done"] == "suspended", out
    out = expect(200, "POST", "/api/v1/schedules/a/ingest/suspend", token=OP, body={})
    assert out["done"] == "already suspended", out
    out = expect(200, "POST", "/api/v1/schedules/a/ingest/resume", token=OP)
    assert out["done"] == "resumed", out
    expect(404, "POST", "/api/v1/schedules/a/nothing/resume", token=OP)

    # --- the operator's verbs: start, cancel, rerun, next, backfill, apply's dry run -------------
    sleeper = {"namespace": "a", "name": "sleeper", "program": {"name": "a.sleeper", "args": {"command": "sleep 600"}},
               "trigger": {"partition": {"dataset": f"{run}.never"}}}
    expect(200, "PUT", "/api/v1/schedules/a/sleeper", token=ADMIN, body=sleeper)
    expect(403, "POST", "/api/v1/schedules/a/sleeper/start", token=VIEW)
    expect(403, "POST", "/api/v1/schedules/b/other/start", token=OP)
    reply = expect(400, "POST", "/api/v1/schedules/a/sleeper/start", token=OP, body={"now": True})
    assert reply["problems"][0]["path"] == "now", reply
    reply = expect(400, "POST", "/api/v1/schedules/a/sleeper/start", token=OP, body={"force": "yes"})
    assert reply["problems"][0]["path"] == "force", reply
    expect(404, "POST", "/api/v1/schedules/a/nothing/start", token=OP)
    expect(200, "POST", "/api/v1/schedules/a/sleeper/suspend", token=OP)
    reply = expect(409, "POST", "/api/v1/schedules/a/sleeper/start", token=OP)
    assert "suspended" in reply["error"], reply
    expect(200, "POST", "/api/v1/schedules/a/sleeper/resume", token=OP)
    if expect(200, "GET", "/api/v1/jobs?schedule=a/sleeper", token=VIEW)["items"]:
        fail("a refused start opened a job")
    started = expect(200, "POST", "/api/v1/schedules/a/sleeper/start", token=OP, body={"args": {"mode": "x"}})
    assert started["schedule"] == "a/sleeper" and started["job_id"] > 0, started

    def launched():
        return expect(200, "GET", f"/api/v1/jobs/{started['job_id']}", token=VIEW).get("run_id")

    sleeper_run = wait_for("the started job's run", launched, 30)
    got = expect(200, "GET", f"/api/v1/runs/{sleeper_run}", token=VIEW)
    if got.get("started_by_hand") != "token:operator_a":
        fail(f"the run does not say the API's operator started it: {got}")
    expect(403, "POST", f"/api/v1/runs/{sleeper_run}/cancel", token=VIEW)
    reply = expect(400, "POST", f"/api/v1/runs/{sleeper_run}/cancel", token=OP, body={"reason": 3})
    assert reply["problems"][0]["path"] == "reason", reply
    cancelled = expect(200, "POST", f"/api/v1/runs/{sleeper_run}/cancel", token=OP, body={"reason": "e2e"})
    assert cancelled["run_id"] == sleeper_run and cancelled["why"] == "e2e", cancelled
    reply = expect(409, "POST", f"/api/v1/runs/{sleeper_run}/cancel", token=OP)
    assert "has finished (killed)" in reply["error"], reply
    expect(404, "POST", "/api/v1/runs/00000000-0000-0000-0000-000000000000/cancel", token=OP)
    expect(403, "POST", f"/api/v1/runs/{run_id}/rerun", token=VIEW)
    rerun = expect(200, "POST", f"/api/v1/runs/{run_id}/rerun", token=OP, body={"force": True})
    assert rerun["rerun_of"] == run_id and rerun["schedule"] == "a/ingest", rerun
    expect(404, "POST", "/api/v1/runs/00000000-0000-0000-0000-000000000000/rerun", token=OP)

    nxt = expect(200, "GET", "/api/v1/schedules/b/other/next?count=3", token=VIEW)
    assert len(nxt["fire_times"]) == 3 and nxt["state"] == "active", nxt
    expect(400, "GET", "/api/v1/schedules/a/ingest/next", token=VIEW)  # no time trigger
    expect(400, "GET", "/api/v1/schedules/b/other/next?count=0", token=VIEW)
    expect(403, "GET", "/api/v1/schedules/b/other/next", token=OP)
    hour = 3600
    now = time.time()
    window = {"from": time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(now - 4 * hour)),
              "to": time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(now - hour))}
    plan = expect(200, "POST", "/api/v1/schedules/b/other/backfill", token=ADMIN, body={**window, "dry_run": True})
    assert plan["dry_run"] is True and plan["produced"] == len(plan["fire_times"]) == 3, plan
    expect(403, "POST", "/api/v1/schedules/b/other/backfill", token=OP, body={**window, "dry_run": True})
    expect(403, "POST", "/api/v1/schedules/a/sleeper/backfill", token=VIEW, body={**window, "dry_run": True})
    reply = expect(400, "POST", "/api/v1/schedules/b/other/backfill", token=ADMIN, body={"from": "yesterday"})
    assert sorted(p["path"] for p in reply["problems"]) == ["from", "to"], reply
    reply = expect(400, "POST", "/api/v1/schedules/a/sleeper/backfill", token=OP, body=window)
    assert "no time trigger" in reply["error"], reply
    one = {"from": plan["fire_times"][0], "to": plan["fire_times"][1]}
    sent = expect(200, "POST", "/api/v1/schedules/b/other/backfill", token=ADMIN, body=one)
    assert sent["dry_run"] is False and sent["fire_times"] == [plan["fire_times"][0]], sent

    def b_run():
        items = expect(200, "GET", "/api/v1/runs?schedule=b/other", token=VIEW)["items"]
        return items[0] if items and items[0]["state"] == "succeeded" else None

    b_run = wait_for("the backfilled run of b/other", b_run, 60)
    # An operator of a reaches no run of b, finished or not: 403 before anything is read for it.
    expect(403, "POST", f"/api/v1/runs/{b_run['run_id']}/cancel", token=OP)
    expect(403, "POST", f"/api/v1/runs/{b_run['run_id']}/rerun", token=OP)
    if expect(200, "GET", f"/api/v1/runs/{b_run['run_id']}", token=VIEW).get("reruns"):
        fail("a refused rerun opened a job")

    def rerun_done():
        return (expect(200, "GET", f"/api/v1/jobs/{rerun['job_id']}", token=VIEW).get("run_state") == "succeeded")

    wait_for("the rerun to succeed", rerun_done, 60)

    # Lineages: the succeeded run of a/ingest started one (its id is the run's).
    page = expect(200, "GET", "/api/v1/lineages?state=succeeded", token=VIEW)
    if run_id not in [l["lineage"] for l in page["items"]]:
        fail(f"lineage {run_id} not among the succeeded ones: {page}")
    expect(400, "GET", "/api/v1/lineages?state=sleeping", token=VIEW)
    expect(403, "GET", "/api/v1/lineages", token=OP)  # a lineage spans namespaces
    lineage = expect(200, "GET", f"/api/v1/lineages/{run_id}", token=OP)
    assert lineage["lineage"] == run_id and [r["run_id"] for r in lineage["runs"]] == [run_id], lineage
    expect(403, "GET", f"/api/v1/lineages/{b_run['run_id']}", token=OP)
    expect(404, "GET", "/api/v1/lineages/nope", token=VIEW)
    drawn = expect(200, "GET", f"/api/v1/lineages/{run_id}/graph", token=OP)
    assert run_id in [n["run_id"] for n in drawn["nodes"]], drawn
    assert all(n["state"] in ("waiting", "launched", "running", "succeeded", "failed", "cancelled", "skipped")
               for n in drawn["nodes"]), drawn
    expect(403, "GET", f"/api/v1/lineages/{b_run['run_id']}/graph", token=OP)
    expect(404, "GET", "/api/v1/lineages/nope/graph", token=VIEW)
    # The dependency graph: the schedules a token reaches; of one namespace with ?namespace=.
    graph = expect(200, "GET", "/api/v1/graph", token=VIEW)
    assert {"schedule:a/ingest", "schedule:b/other"} <= {n["id"] for n in graph["nodes"]}, graph
    graph = expect(200, "GET", "/api/v1/graph", token=OP)
    assert "schedule:b/other" not in {n["id"] for n in graph["nodes"]}, graph
    graph = expect(200, "GET", "/api/v1/graph?namespace=a", token=VIEW)
    assert {n["namespace"] for n in graph["nodes"] if n["kind"] == "schedule"} == {"a"}, graph
    expect(403, "GET", "/api/v1/graph?namespace=b", token=OP)
    reply = expect(400, "GET", "/api/v1/graph?namespace=a%20b", token=VIEW)
    assert reply["problems"][0]["path"] == "namespace", reply
    # Versions: each applied document, newest first.
    versions = expect(200, "GET", "/api/v1/schedules/a/ingest/versions?limit=1", token=VIEW)
    assert len(versions["items"]) == 1 and versions["items"][0]["document"]["name"] == "ingest", versions
    expect(404, "GET", "/api/v1/schedules/a/nothing/versions", token=VIEW)
    same = expect(200, "PUT", "/api/v1/schedules/a/ingest", token=ADMIN, body=doc)
    assert same["changed"] is False, same
    again = expect(200, "GET", "/api/v1/schedules/a/ingest/versions", token=VIEW)["items"]
    assert [v["version"] for v in again] == [1], again  # an unchanged document adds no version
    expect(403, "GET", "/api/v1/schedules/b/other/versions", token=OP)
    expect(400, "GET", "/api/v1/schedules/a/ingest/versions?limit=0", token=VIEW)

    changed_doc = {**doc, "priority": 4}
    dry = expect(200, "PUT", "/api/v1/schedules/a/ingest?dry_run=true", token=ADMIN, body=changed_doc)
    assert dry["outcome"] == "changed" and dry["version"] == 2 and dry["diff"][0]["path"] == "priority", dry
    dry = expect(200, "POST", "/api/v1/schedules?dry_run=true", token=ADMIN, body=[changed_doc])
    assert [d["outcome"] for d in dry] == ["changed"], dry
    expect(403, "PUT", "/api/v1/schedules/a/ingest?dry_run=true", token=OP, body=changed_doc)
    expect(400, "PUT", "/api/v1/schedules/a/ingest?dry_run=yes", token=ADMIN, body=changed_doc)
    if expect(200, "GET", "/api/v1/schedules/a/ingest", token=VIEW)["version"] != 1:
        fail("a dry run applied the schedule")

    # --- trigctl --api prints what trigctl prints from the database ---------------------------
    def trigctl(args, api):
        e = dict(env)
        if api:
            e.update(TRIGD_API_URL=f"http://127.0.0.1:{API_PORT}", TRIGD_TOKEN=ADMIN, TRIGD_PG="host=/nonexistent")
        p = subprocess.run([f"{BIN}/trigctl"] + args, env=e, capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    for args in (["schedules", "list"], ["schedules", "list", "--json"], ["schedules", "show", "a/ingest"],
                 ["schedules", "show", "a/none"], ["jobs", "list"], ["jobs", "list", "--schedule", "a/ingest", "--json"],
                 ["jobs", "list", "--schedule", "ingest"], ["jobs", "show", str(job_id)], ["jobs", "why", str(job_id)],
                 ["jobs", "why", str(job_id), "--json"], ["runs", "list"], ["runs", "show", run_id],
                 ["runs", "list", "--schedule", "a/ingest", "--limit", "1"], ["lag"]):
        direct, through = trigctl(args, False), trigctl(args, True)
        if "why" in args:  # `jobs why` says when it checked: the database's clock at each call
            direct, through = (tuple(re.sub(r"checked.at\W+[0-9T:.-]+Z", "", str(x)) for x in r) for r in (direct, through))
        if direct != through:
            fail(f"trigctl {' '.join(args)}: direct {direct!r}\nthrough the API {through!r}")
    # The operator's verbs: what they read or refuse prints the same both ways.
    changed_file = os.path.join(T.tmp, "changed.json")
    json.dump(changed_doc, open(changed_file, "w"))
    backfill = ["schedules", "backfill", "b/other", "--from", window["from"], "--to", window["to"], "--dry-run"]
    for args in (["schedules", "next", "b/other"], ["schedules", "next", "b/other", "--count", "2", "--json"],
                 ["schedules", "next", "a/ingest"], ["schedules", "next", "a/nothing"], backfill, backfill + ["--json"],
                 ["schedules", "backfill", "a/sleeper", "--from", window["from"], "--to", window["to"]],
                 ["schedules", "apply", "--dry-run", "-f", changed_file],
                 ["schedules", "apply", "--dry-run", "-f", changed_file, "--json"],
                 ["runs", "cancel", sleeper_run], ["runs", "cancel", "nope"], ["runs", "rerun", "nope"],
                 ["runs", "start", "a/nothing"], ["runs", "start", "a/ingest", "--args", "[1]"],
                 ["lineages", "list"], ["lineages", "list", "--state", "succeeded", "--json"],
                 ["lineages", "list", "--state", "sleeping"], ["lineages", "show", run_id],
                 ["lineages", "show", run_id, "--json"], ["lineages", "show", "nope"],
                 ["lineages", "show", run_id, "--format", "dot"], ["lineages", "show", run_id, "--format", "png"],
                 ["graph"], ["graph", "--format", "json"], ["graph", "--namespace", "a"],
                 ["graph", "--format", "svg"], ["graph", "--namespace", "a b"]):
        direct, through = trigctl(args, False), trigctl(args, True)
        if direct != through:
            fail(f"trigctl {' '.join(args)}: direct {direct!r}\nthrough the API {through!r}")

    # What they change prints the same, but for the ids of the jobs and runs each opens.
    def ids(r):
        text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "RUN", str(r))
        return re.sub(r"job(_id)?\W+\d+|\(was \w+", "JOB", text)

    def both(args):
        direct, through = trigctl(args, False), trigctl(args, True)
        if direct[0] != 0 or ids(direct) != ids(through):
            fail(f"trigctl {' '.join(args)}: direct {direct!r}\nthrough the API {through!r}")
        return direct, through

    both(["runs", "start", "a/ingest", "--args", '{"mode": "delta"}'])
    both(["runs", "start", "a/ingest", "--json", "--force"])
    both(["runs", "rerun", run_id, "--json"])
    for api in (False, True):
        rc, out_text, err = trigctl(["runs", "start", "a/sleeper", "--json"], False)
        sleeping = json.loads(out_text)["run_id"]
        rc, out_text, err = trigctl(["runs", "cancel", sleeping, "--reason", "both ways"], api)
        if rc != 0 or not re.fullmatch(f"cancelled run {sleeping} of a/sleeper \\(was \\w+, attempt 1\\)\n", out_text):
            fail(f"trigctl runs cancel (api {api}): {rc} {out_text!r} {err!r}")
    docs_dir = os.path.join(T.tmp, "docs")
    os.mkdir(docs_dir)
    json.dump({**other, "priority": 3}, open(os.path.join(docs_dir, "other.json"), "w"))
    rc, out_text, err = trigctl(["schedules", "apply", "-f", docs_dir], True)
    if rc != 0 or out_text != "applied    b/other v2\n":
        fail(f"trigctl --api schedules apply: {rc} {out_text!r} {err!r}")
    rc, out_text, err = trigctl(["schedules", "suspend", "b/other"], True)
    if rc != 0 or out_text != "suspended b/other\n":
        fail(f"trigctl --api schedules suspend: {rc} {out_text!r} {err!r}")
    trigctl(["schedules", "resume", "b/other"], True)
    e = dict(env, TRIGD_API_URL=f"http://127.0.0.1:{API_PORT}", TRIGD_TOKEN="wrong")
    p = subprocess.run([f"{BIN}/trigctl", "jobs", "list"], env=e, capture_output=True, text=True)
    if p.returncode != 1 or p.stderr != "trigctl jobs list: unknown token\n":
        fail(f"trigctl --api with a wrong token: {p.returncode} {p.stderr!r}")
    e = dict(env, TRIGD_API_URL=f"http://127.0.0.1:{free_port()}")
    p = subprocess.run([f"{BIN}/trigctl", "jobs", "list"], env=e, capture_output=True, text=True)
    if p.returncode != 2:
        fail(f"trigctl --api with no API there: exit {p.returncode}, expected 2: {p.stderr!r}")

    # --- 401 and 403, with nothing changed ----------------------------------------------------
    changed = {**doc, "priority": 9}
    expect(401, "PUT", "/api/v1/schedules/a/ingest", body=changed)
    expect(401, "PUT", "/api/v1/schedules/a/ingest", token="not-a-token", body=changed)
    call_raw = http.client.HTTPConnection("127.0.0.1", API_PORT, timeout=10)
    call_raw.request("GET", "/api/v1/schedules", headers={"Authorization": "Basic " + ADMIN})
    if call_raw.getresponse().status != 401:
        fail("a Basic Authorization header was accepted")
    expect(403, "PUT", "/api/v1/schedules/a/ingest", token=VIEW, body=changed)
    expect(403, "DELETE", "/api/v1/schedules/a/ingest", token=OP)
    expect(403, "POST", "/api/v1/schedules/a/ingest/suspend", token=VIEW)
    expect(403, "POST", "/api/v1/schedules/b/other/suspend", token=OP)
    expect(403, "GET", "/api/v1/schedules/b/other", token=OP)
    expect(403, "GET", "/api/v1/runs?schedule=b/other", token=OP)
    expect(403, "POST", "/api/v1/schedules", token=VIEW, body=changed)
    got = expect(200, "GET", "/api/v1/schedules/a/ingest", token=VIEW)
    if got["version"] != 1 or got["document"].get("priority", 0) == 9:
        fail(f"a refused apply changed the schedule: {got}")
    got = expect(200, "GET", "/api/v1/schedules/b/other", token=VIEW)
    if got["state"] != "active":
        fail(f"a refused suspend changed the schedule: {got}")

    # --- bad input ------------------------------------------------------------------------------
    big = {**doc, "program": {"name": "a.ingest", "args": {"pad": "x" * (1 << 20)}}}
    reply = expect(413, "PUT", "/api/v1/schedules/a/ingest", token=ADMIN, raw=json.dumps(big).encode())
    assert "1048576" in reply["error"], reply
    reply = expect(400, "PUT", "/api/v1/schedules/a/ingest", token=ADMIN, raw=b'{"namespace": "a", ')
    assert reply["problems"][0]["message"].startswith("invalid JSON at line 1"), reply
    reply = expect(400, "POST", "/api/v1/runs/x/cancel", token=ADMIN, raw=b'{"reason": ')
    assert reply["error"] == "invalid JSON in the body", reply
    reply = expect(400, "PUT", "/api/v1/schedules/a/ingest", token=ADMIN, raw=json.dumps({**doc, "colour": 1}).encode())
    assert reply["problems"][0]["path"] == "colour", reply
    reply = expect(400, "PUT", "/api/v1/schedules/a/other-name", token=ADMIN, raw=json.dumps(doc).encode())
    assert reply["problems"][0]["path"] == "name", reply
    reply = expect(400, "GET", "/api/v1/schedules?colour=red", token=VIEW)
    assert reply["problems"][0]["path"] == "colour", reply
    expect(400, "GET", "/api/v1/schedules?limit=0", token=VIEW)
    # A page past the newest 10,000 rows ends there (ADR 0202); an offset past them is refused.
    page = expect(200, "GET", "/api/v1/schedules?limit=500&offset=9600", token=VIEW)
    assert page == {"items": [], "next_offset": None}, page
    expect(400, "GET", "/api/v1/schedules?offset=10001", token=VIEW)
    reply = expect(400, "GET", "/api/v1/schedules/a/x%20y", token=VIEW)
    assert reply["problems"][0]["path"] == "name", reply
    expect(400, "GET", "/api/v1/schedules/a/..", token=VIEW)
    for path in ("/api/v1/schedules/a/..%2F..%2Fetc", "/api/v1/schedules/a%2F..%2Fb/x", "/../../etc/passwd",
                 "/%2e%2e/%2e%2e/etc/passwd", "/api/v1/nothing"):
        status, reply = call("GET", path, token=VIEW, documented=False)
        if status not in (400, 404) or "error" not in (reply or {}):
            fail(f"GET {path}: {status} {reply}")
    expect(400, "POST", "/api/v1/schedules/a/ingest/suspend", token=OP, raw=b'{"now": true}')
    # A slow client: half a request line, then nothing. The server drops it after its read
    # timeout, and serves others meanwhile.
    slow = socket.create_connection(("127.0.0.1", API_PORT))
    slow.sendall(b"GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\n")
    started = time.time()
    expect(200, "GET", "/api/v1/whoami", token=VIEW)
    slow.settimeout(30)
    try:
        rest = slow.recv(4096)
        while rest and not rest.endswith(b"}"):
            more = slow.recv(4096)
            if not more:
                break
            rest += more
    except ConnectionResetError:
        rest = b""
    waited = time.time() - started
    if waited > 20:
        fail(f"a slow client held its connection {waited:.0f} s")
    if rest and not rest.startswith(b"HTTP/1.1 4"):
        fail(f"a slow client got {rest[:100]!r}")

    # --- tokens re-read on SIGHUP --------------------------------------------------------------
    expect(401, "GET", "/api/v1/whoami", token=TOKENS["late"])
    write_tokens(["admin", "operator_a", "viewer", "late"])
    trigd.send_signal(signal.SIGHUP)
    wait_for("the new token", lambda: call("GET", "/api/v1/whoami", token=TOKENS["late"], documented=False)[0] == 200, 10)
    page = expect(200, "GET", "/api/v1/schedules", token=TOKENS["late"])
    assert [s["name"] for s in page["items"]] == ["b/other"], page
    with open(T.tokens_file, "w") as f:
        f.write("[{")
    trigd.send_signal(signal.SIGHUP)
    wait_for("the refused reload", lambda: "tokens not reloaded" in open(T.log_path).read(), 10)
    expect(200, "GET", "/api/v1/whoami", token=TOKENS["late"])

    expect(200, "DELETE", "/api/v1/schedules/b/other", token=ADMIN)
    expect(404, "DELETE", "/api/v1/schedules/b/other", token=ADMIN)

    # --- the audit (audit_e2e.py tests it whole): the delete above, by its token's name ------
    page = expect(200, "GET", "/api/v1/audit?namespace=b&limit=1", token=VIEW)
    if [(a["action"], a["actor"], a["schedule"]) for a in page["items"]] != [("delete", "token:admin", "b/other")]:
        fail(f"the audit's newest row of b is not the delete: {page}")
    expect(403, "GET", "/api/v1/audit?namespace=b", token=OP)
    expect(400, "GET", "/api/v1/audit?since=yesterday", token=VIEW)

    missing = {op["operationId"] for item in SPEC["paths"].values() for m, op in item.items()
               if isinstance(op, dict) and "operationId" in op} - called
    if missing:
        fail(f"operations never called: {sorted(missing)}")

    # --- without a token file, only loopback -----------------------------------------------------
    e = dict(env, TRIGD_API=f"0.0.0.0:{free_port()}", TRIGD_METRICS=f"127.0.0.1:{free_port()}")
    e.pop("TRIGD_TOKENS", None)
    p = subprocess.run([f"{BIN}/trigd"], env=e, capture_output=True, text=True, timeout=30)
    if p.returncode != 1 or "is not a loopback address" not in p.stderr:
        fail(f"trigd on 0.0.0.0 without TRIGD_TOKENS: exit {p.returncode}: {p.stderr!r}")

    # --- no secret in the log ----------------------------------------------------------------------
    trigd.terminate()
    trigd.wait(timeout=10)
    log = open(T.log_path).read()
    for name, secret in list(TOKENS.items()) + [("the PostgreSQL password", PG_PASSWORD)]:
        if secret in log:
            fail(f"{name} appears in trigd's log")
    if "api: serving /api/v1" not in log:
        fail("trigd did not log where the API is served")
    print(f"api e2e: ok ({len(called)} operations)")
finally:
    T.stop()
