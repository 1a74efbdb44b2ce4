#!/usr/bin/env python3
"""A trigd worker in Python: an example of the worker protocol (docs/worker.md).

It consumes launch requests of one target, starts none that is past its `start_by` or whose
attempt trigd ended (the control topic), runs `program.args.command` with /bin/sh, sends
`started`, a `heartbeat` every third of the run's heartbeat_timeout, and `succeeded` (exit 0),
`failed` (another exit) or `killed` (a signal) on the program topic. Standard library only; Kafka
is reached through kcat (`apt-get install kcat`), so the protocol stays in plain sight. A real
worker would use a Kafka client library (confluent-kafka, franz-go, …) in the same way.

    TRIGD_KAFKA=127.0.0.1:9092 tools/examples/worker.py --target default

Environment: TRIGD_KAFKA (default 127.0.0.1:9092), TRIGD_TOPIC_PREFIX (default trigd.),
TRIGD_GROUP (default trigd; the worker's consumer group is <group>-pyworker-<target>).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone

UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(duration, default=300.0):
    """'2m' -> 120.0; '1h30m' -> 5400.0; the default for anything else."""
    total, number = 0.0, ""
    i = 0
    try:
        while i < len(duration):
            if duration[i].isdigit():
                number += duration[i]
                i += 1
                continue
            unit = "ms" if duration.startswith("ms", i) else duration[i]
            total += int(number) * UNITS[unit]
            number, i = "", i + len(unit)
        return total if total > 0 and not number else default
    except (KeyError, ValueError):
        return default


class Reporter:
    """Sends each program event with its own `kcat -P` (kcat reads standard input in blocks, so
    one long-lived kcat would hold heartbeats back until its buffer filled)."""

    def __init__(self, brokers, topic):
        self.brokers, self.topic = brokers, topic

    def report(self, request, status):
        event = {
            "id": str(uuid.uuid4()),
            "type": "program",
            "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "payload": {"program": request["program"]["name"], "run_id": request["run_id"],
                        "status": status, "attempt": request.get("attempt", 1)},
        }
        sent = subprocess.run(["kcat", "-P", "-b", self.brokers, "-t", self.topic, "-k", request["program"]["name"]],
                              input=json.dumps(event), text=True, capture_output=True, timeout=30)
        if sent.returncode != 0:
            print(f"worker.py: report {status} of run {request['run_id']} not sent: {sent.stderr.strip()}",
                  file=sys.stderr, flush=True)

    def close(self):
        pass


def past_start_by(request):
    """Why the request must not start because its start deadline is past (trigd counts the
    attempt lost by then), or None."""
    start_by = request.get("start_by")
    if not isinstance(start_by, str):
        return None  # a request from a trigd that wrote no deadline
    try:
        deadline = datetime.fromisoformat(start_by.replace("Z", "+00:00"))
    except ValueError:
        return None
    return f"past its start deadline {start_by}" if datetime.now(timezone.utc) > deadline else None


class Ended:
    """The attempts trigd ended, from the control topic: read whole (every partition, no consumer
    group), to its end once before the first request, then as it goes. Each message names a run
    and an attempt: that attempt and earlier ones of the run must not start; a later one (a
    retry) runs. An entry is forgotten 10 minutes after the attempt's start_by (its own deadline
    refuses it then), and at most LIMIT runs are kept."""

    LIMIT = 100000

    def __init__(self, brokers, topic):
        self.lock = threading.Lock()
        self.runs = {}  # run id -> (highest attempt ended, why, forget at: epoch seconds)
        read = ["kcat", "-C", "-b", brokers, "-t", topic, "-o", "beginning", "-q", "-f", "%s\n"]
        whole = subprocess.run(read + ["-e"], capture_output=True, text=True)
        if whole.returncode != 0:
            raise SystemExit(f"worker.py: cannot read {topic}: {whole.stderr.strip()}")
        for line in whole.stdout.splitlines():
            self.add(line)
        # Again from the beginning (what came between the two reads is not missed), following.
        self.follower = subprocess.Popen(read + ["-u"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=lambda: [self.add(line) for line in self.follower.stdout], daemon=True).start()

    def add(self, line):
        try:
            m = json.loads(line)
            run_id, attempt = m["run_id"], m["attempt"]
            if not isinstance(run_id, str) or not isinstance(attempt, int):
                return
        except (ValueError, KeyError, TypeError):
            return
        try:
            start_by = datetime.fromisoformat(m["start_by"].replace("Z", "+00:00")).timestamp()
            forget_at = start_by + 600
        except (KeyError, AttributeError, ValueError):
            forget_at = time.time() + 7 * 86400  # the control topic's retention
        why = f"trigd ended attempt {attempt} ({m.get('status') or m.get('type')}, reason {m.get('reason')})"
        with self.lock:
            if self.runs.get(run_id, (0,))[0] <= attempt:
                self.runs[run_id] = (attempt, why, forget_at)
            if len(self.runs) > self.LIMIT:
                now = time.time()
                self.runs = {k: v for k, v in self.runs.items() if v[2] > now}
                while len(self.runs) > self.LIMIT:
                    del self.runs[min(self.runs, key=lambda k: self.runs[k][2])]

    def why(self, request):
        with self.lock:
            entry = self.runs.get(request["run_id"])
        if entry and request.get("attempt", 1) <= entry[0] and time.time() < entry[2]:
            return entry[1]
        return None


def run(request, reporter):
    """Runs one request to its end, heartbeating meanwhile."""
    command = request["program"].get("args", {}).get("command")
    reporter.report(request, "started")
    if not isinstance(command, str) or not command:
        # Nothing to run (no command): done. A command that is not a string cannot run: failed.
        reporter.report(request, "succeeded" if command in (None, "") else "failed")
        return
    env = dict(os.environ, TRIGD_RUN_ID=request["run_id"], TRIGD_ATTEMPT=str(request.get("attempt", 1)),
               TRIGD_SCHEDULE=request.get("schedule", ""))
    child = subprocess.Popen(["/bin/sh", "-c", command], env=env, start_new_session=True)
    every = max(0.5, seconds(request.get("heartbeat_timeout", "5m")) / 3)
    while True:
        try:
            code = child.wait(timeout=every)
            break
        except subprocess.TimeoutExpired:
            reporter.report(request, "heartbeat")
    reporter.report(request, "succeeded" if code == 0 else "killed" if code < 0 else "failed")


def main():
    parser = argparse.ArgumentParser(description="A trigd worker in Python (see docs/worker.md)")
    parser.add_argument("--target", default="default")
    args = parser.parse_args()
    brokers = os.environ.get("TRIGD_KAFKA", "127.0.0.1:9092")
    prefix = os.environ.get("TRIGD_TOPIC_PREFIX", "trigd.")
    group = os.environ.get("TRIGD_GROUP", "trigd") + "-pyworker-" + args.target
    reporter = Reporter(brokers, prefix + "events.program")
    ended = Ended(brokers, prefix + "control")
    # A balanced consumer: workers of one group share the target's partitions; offsets are
    # committed by kcat (at least once: a request may come again after a crash, with the same
    # run id, so the (run id, attempt) pairs already taken are skipped).
    consumer = subprocess.Popen(
        ["kcat", "-b", brokers, "-G", group, "-f", "%s\n", "-u",
         "-X", "auto.offset.reset=earliest", prefix + "launch." + args.target],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    signal.signal(signal.SIGTERM, lambda *_: consumer.terminate())
    taken = set()
    threads = []
    print(f"worker.py: consuming {prefix}launch.{args.target} in group {group}", file=sys.stderr, flush=True)
    for line in consumer.stdout:
        try:
            request = json.loads(line)
            key = (request["run_id"], request.get("attempt", 1))
            request["program"]["name"]
        except (ValueError, KeyError, TypeError):
            print(f"worker.py: skipped a request that names no run: {line.strip()[:200]}", file=sys.stderr)
            continue
        if key in taken:
            continue
        taken.add(key)
        why = ended.why(request) or past_start_by(request)
        if why:  # nothing is reported for it
            print(f"worker.py: run {key[0]} attempt {key[1]}: not started: {why}", file=sys.stderr, flush=True)
            continue
        t = threading.Thread(target=run, args=(request, reporter), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    reporter.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
