#!/usr/bin/python3
"""e2e: hostile JSON and hostile ranges sent to a running trigd and to trigctl (issue 56).

- Bodies nested 80,000 deep (cancel with an operator token of another namespace, cancel of an
  unknown run, start args, backfill, admin POST and PUT of schedules) are refused with 400 (403
  for the foreign token) and trigd keeps serving.
- One list of bad schedule documents (nested past 128 levels, 5,000 and 20,000 deep, a repeated
  key, a NUL, a number beyond a double, an unknown field, a syntax error, 700 KB of args) goes
  through `trigctl schedules apply`, its `--dry-run`, `POST /api/v1/schedules` and its
  `?dry_run=true`: all four refuse each with the same problems, and nothing is applied.
- A backfill over 0001..9999 of a minutely cron with max 2,000,000,000 (and with max 100,000) is
  refused at once naming the limit, trigd's memory stays flat, and trigctl's refusal does not
  blame PostgreSQL.
- `schedules replay --from 1969-12-31T23:59:59Z` replays from the earliest message left.

Run by ctest: hostile_input_e2e.py SRC BIN.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apilib import Trigd  # noqa: E402

SRC, BIN = sys.argv[1], sys.argv[2]
T = Trigd(BIN, "hostile")
ADMIN, OP_A = T.tokens["admin"], T.tokens["operator_a"]


def fail(msg):
    print("FAIL:", msg)
    print("--- trigd log")
    print(open(T.log_path).read()[-4000:])
    T.stop()
    sys.exit(1)


def trigctl(*args, stdin=None):
    return subprocess.run([f"{BIN}/trigctl", *args], env=T.env, capture_output=True, text=True, input=stdin,
                          timeout=120)


def rss_mb():
    with open(f"/proc/{T.trigd.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def still_serving(after):
    if T.trigd.poll() is not None:
        fail(f"trigd exited (code {T.trigd.returncode}) after {after}")
    status, _ = T.request("GET", "/api/v1/whoami", ADMIN)
    if status != 200:
        fail(f"whoami gave {status} after {after}")


def nested(depth):
    return "[" * depth + "]" * depth


try:
    schedules = [
        {"namespace": "b", "name": "manual", "program": {"name": "b.job"},
         "trigger": {"partition": {"dataset": "b.raw", "count": 99}}},
        {"namespace": "b", "name": "minutely", "program": {"name": "b.tick"},
         "trigger": {"time": {"cron": "* * * * *"}}, "enabled": False},
    ]
    status, reply = T.request("POST", "/api/v1/schedules", ADMIN, body=schedules)
    if status != 200:
        fail(f"apply: {status} {reply}")

    # A run of namespace b, for the operator of namespace a to try to cancel.
    status, started = T.request("POST", "/api/v1/schedules/b/manual/start", ADMIN, body={})
    if status != 200:
        fail(f"start: {status} {started}")
    run_b = Trigd.wait_for("the started run", lambda: (T.request("GET", f"/api/v1/jobs/{started['job_id']}", ADMIN)[1]
                                                        or {}).get("run_id"), 30)

    # --- defect 2: 80,000 levels of '[' ---------------------------------------------------------
    deep = nested(80000)
    hostile = [
        ("cancel, operator of another namespace", "POST", f"/api/v1/runs/{run_b}/cancel", OP_A,
         '{"reason":' + deep + "}", (400, 403)),
        ("cancel of an unknown run", "POST", "/api/v1/runs/no-such-run/cancel", ADMIN, '{"reason":' + deep + "}",
         (400, 404)),
        ("start args", "POST", "/api/v1/schedules/b/manual/start", ADMIN, '{"args":' + deep + "}", (400,)),
        ("backfill", "POST", "/api/v1/schedules/b/minutely/backfill", ADMIN, '{"from":' + deep + "}", (400,)),
        ("admin POST /schedules", "POST", "/api/v1/schedules", ADMIN, deep, (400,)),
        ("admin PUT", "PUT", "/api/v1/schedules/b/manual", ADMIN, '{"program":' + deep + "}", (400,)),
    ]
    for what, method, path, token, body, want in hostile:
        try:
            status, reply = T.request(method, path, token, raw=body.encode())
        except OSError as e:
            fail(f"{what}: no answer ({e})")
        if status not in want:
            fail(f"{what}: {status}, expected one of {want}: {reply}")
        still_serving(what)

    # --- defects 6 and 7, acceptance 3: one list of bad documents, four ways in -----------------
    def doc(**fields):
        d = {"namespace": "b", "name": "bad", "program": {"name": "b.job"},
             "trigger": {"partition": {"dataset": "b.raw"}}}
        d.update(fields)
        return json.dumps(d)

    good = doc()
    bad_documents = [
        ("args nested 129 deep", doc(program={"name": "b.job", "args": {"x": "@"}}).replace('"@"', nested(128))),
        ("args nested 5,000 deep", doc(program={"name": "b.job", "args": {"x": "@"}}).replace('"@"', nested(5000))),
        ("args nested 20,000 deep", doc(program={"name": "b.job", "args": {"x": "@"}}).replace('"@"', nested(20000))),
        ("a repeated key", good.replace('"name": "bad"', '"name": "bad", "name": "bad2"')),
        ("a NUL in a string", doc(program={"name": "b.job", "args": {"x": "a\u0000b"}})),
        ("a number beyond a double", doc(priority=1).replace('"priority": 1', '"priority": 1e400')),
        ("an unknown field", doc(colour="red")),
        ("a syntax error", good[:-5]),
        ("700 KB of args", doc(program={"name": "b.job", "args": {"pad": "x" * 700000}})),
    ]
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "bad.json")

    def cli_problems(dry_run):
        r = trigctl("schedules", "apply", *(["--dry-run"] if dry_run else []), "-f", path)
        if r.returncode != 1:
            fail(f"trigctl schedules apply{' --dry-run' if dry_run else ''}: exit {r.returncode}, expected 1: "
                 f"{r.stdout}{r.stderr}")
        lines = r.stderr.splitlines()
        listed = [line[len(path) + 2:] for line in lines if line.startswith(path + ": ")]
        return sorted(listed) if listed else [lines[-1].removeprefix("trigctl schedules apply: ")]

    def api_problems(dry_run):
        status, reply = T.request("POST", "/api/v1/schedules" + ("?dry_run=true" if dry_run else ""), ADMIN,
                                  raw=text.encode())
        if status != 400:
            fail(f"POST /api/v1/schedules{'?dry_run=true' if dry_run else ''}: {status}, expected 400: {reply}")
        listed = [(p["path"] + ": " if p["path"] else "") + p["message"] for p in reply["problems"]]
        return sorted(listed) if listed else [reply["error"]]

    for what, text in bad_documents:
        with open(path, "w") as f:
            f.write(text)
        seen = {"trigctl apply": cli_problems(False), "trigctl apply --dry-run": cli_problems(True),
                "API POST": api_problems(False), "API POST ?dry_run=true": api_problems(True)}
        if len({json.dumps(v) for v in seen.values()}) != 1:
            fail(f"{what}: the ways in disagree: {json.dumps(seen, indent=1)[:3000]}")
        if "PostgreSQL" in json.dumps(seen):
            fail(f"{what}: refused as a PostgreSQL error: {seen}")
        still_serving(what)
    status, _ = T.request("GET", "/api/v1/schedules/b/bad", ADMIN)
    if status != 404:
        fail(f"a refused document was applied: GET b/bad gave {status}")

    # --- defect 3: a backfill over 0001..9999 of a minutely cron ----------------------------------
    before = rss_mb()
    for max_fire_times, limit_named in ((2000000000, "at most 100000"), (100000, "more than 100000")):
        started_at = time.time()
        status, reply = T.request("POST", "/api/v1/schedules/b/minutely/backfill", ADMIN,
                                  body={"from": "0001-01-01T00:00:00Z", "to": "9999-12-31T23:59:59Z", "dry_run": True,
                                        "max": max_fire_times})
        took = time.time() - started_at
        if status != 400 or limit_named not in reply.get("error", ""):
            fail(f"backfill of max {max_fire_times}: {status} {reply}, expected 400 naming \"{limit_named}\"")
        if took > 5:
            fail(f"backfill of max {max_fire_times}: refused after {took:.1f} s")
    grown = rss_mb() - before
    if grown > 100:
        fail(f"trigd grew by {grown} MB refusing two backfills")
    r = trigctl("schedules", "backfill", "b/minutely", "--from", "0001-01-01T00:00:00Z", "--to",
                "9999-12-31T23:59:59Z", "--max", "2000000000", "--dry-run")
    if r.returncode != 1 or "at most 100000" not in r.stderr or "PostgreSQL" in r.stderr:
        fail(f"trigctl backfill of max 2000000000: exit {r.returncode}: {r.stderr}")
    still_serving("the backfills")

    # --- defect 10: replay from before 1970 -------------------------------------------------------
    r = trigctl("events", "emit", "partition", "b.raw", "dt=1")
    if r.returncode != 0:
        fail(f"events emit: {r.stderr}")
    with open(path, "w") as f:
        f.write(good)
    r = trigctl("schedules", "replay", "-f", path, "--from", "1969-12-31T23:59:59Z", "--json")
    if r.returncode != 0:
        fail(f"replay --from 1969-12-31T23:59:59Z: exit {r.returncode}: {r.stderr}")
    if json.loads(r.stdout)["messages"] < 1:
        fail(f"replay --from 1969-12-31T23:59:59Z read no message: {r.stdout[:500]}")
    print("OK: hostile bodies refused, one set of problems for four ways in, backfills bounded, replay from 1969")
finally:
    T.stop()
