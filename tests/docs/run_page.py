#!/usr/bin/env python3
"""Runs the commands of a documentation page as a reader would, and compares their output.

Usage: run_page.py ROOT BIN PAGE [PAGE ...]

Each page's command blocks run in order in one bash shell (variables, `cd` and background jobs
carry over from block to block), in a scratch folder that looks like a built clone: every
top-level entry of ROOT linked in, and build/bin linked to BIN. The services are the ones the
test suite runs (TRIGD_PG, TRIGD_KAFKA): the page gets a database, a topic prefix, a consumer
group, an API port and a metrics port of its own, as every e2e test does.

Blocks:
  ```sh        every command must succeed (a command that fails outside a condition fails the
               page: bash's ERR trap); the output is not compared
  ```console   `$ COMMAND` lines (a trailing `\\` continues one), each followed by the output
               expected of it, compared loosely: line by line, word by word, where a word that
               holds a digit (an id, a time, a count) matches any word, `…` as a word matches
               any words, and `…` alone on a line any lines; blank lines are ignored. The exit
               code must be 0.
  ```json      checked as a file of the repository when marked <!-- test: file PATH --> (the
               same JSON value); other JSON blocks are docs_check.py's

A comment on the line before a fence changes how the block is run:
  <!-- test: skip REASON -->  not run (a step the built tree has already done: set-up, build)
  <!-- test: retry N -->      (console) run again, every second, until its output matches, for
                              up to N seconds: for a state the reader waits for
  <!-- test: exit N -->       (console) each command of the block must exit N
  <!-- test: exact -->        (console) words with digits must be equal too: counts, fixed times

What the test changes in the commands, and why:
  eval "$(tools/services start)"   becomes nothing: the test's services are already exported
  tools/services stop              becomes nothing: other tests use the services
  127.0.0.1:8080, 127.0.0.1:9464   become the page's own API and metrics addresses
  -t trigd.                        (a kcat topic) takes the page's topic prefix
and in the output: the page's topic prefix reads `trigd.` again.
"""

import json
import os
import pathlib
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```(\w*)\s*$")
# Commands that set up, build or test the tree: the test runs on a built tree, and running them
# from the scratch folder would build another tree there.
BUILDS = re.compile(r"(^|[\s;&|(])(\./)?(tools/(setup|test|quickstart)\b|cmake\s|ninja\s)")
MARK = re.compile(r"^<!--\s*test:\s*(\w+)\s*(.*?)\s*-->$")


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def blocks(page):
    """(line, language, body lines, {mark: value}) of each fenced block."""
    lines = page.read_text().splitlines()
    i, out = 0, []
    while i < len(lines):
        m = FENCE.match(lines[i].strip())
        if m is None:
            i += 1
            continue
        marks, j = {}, i - 1
        while j >= 0 and MARK.match(lines[j].strip()):
            mm = MARK.match(lines[j].strip())
            marks[mm.group(1)] = mm.group(2)
            j -= 1
        start, body = i + 1, []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        out.append((start, m.group(1), body, marks))
        i += 1
    return out


def console_commands(body):
    """[(command, expected output lines)] of a console block."""
    out, i = [], 0
    while i < len(body):
        if not body[i].startswith("$ "):
            raise ValueError(f"console block: output before any command: {body[i]!r}")
        cmd = [body[i][2:]]
        while cmd[-1].endswith("\\") and i + 1 < len(body):
            i += 1
            cmd.append(body[i])
        i += 1
        expected = []
        while i < len(body) and not body[i].startswith("$ "):
            expected.append(body[i])
            i += 1
        out.append(("\n".join(cmd), expected))
    return out


def line_pattern(line, exact=False):
    parts, prev_dots = [], True
    for word in line.split():
        if word == "…":
            parts.append(r"\s*.*?")
            prev_dots = True
            continue
        sep = r"\s*" if prev_dots else r"\s+"
        parts.append(sep + (r"\S+" if re.search(r"\d", word) and not exact else re.escape(word)))
        prev_dots = False
    return re.compile(r"\s*" + "".join(parts) + r"\s*")


def matches(expected, actual, exact=False):
    exp = [l for l in expected if l.strip()]
    act = [l for l in actual if l.strip()]
    pats = [None if l.strip() == "…" else line_pattern(l, exact) for l in exp]
    memo = {}

    def go(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(pats):
            r = j == len(act)
        elif pats[i] is None:
            r = any(go(i + 1, k) for k in range(j, len(act) + 1))
        else:
            r = j < len(act) and pats[i].fullmatch(act[j]) is not None and go(i + 1, j + 1)
        memo[(i, j)] = r
        return r

    return go(0, 0)


class Shell:
    """One bash process fed command by command; its process group is killed at the end."""

    def __init__(self, cwd, env):
        self.dir = pathlib.Path(cwd)
        self.proc = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=cwd, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.n = 0
        self.send("set -o pipefail; trap 'echo \"$BASH_COMMAND\" >>\"$TRIGD_DOCS_ERR\"' ERR")

    def send(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def run(self, command, timeout=120):
        """(exit code, output, commands that failed) of COMMAND run in the shell."""
        self.n += 1
        out, err = self.dir / f".docs-out-{self.n}", self.dir / f".docs-err-{self.n}"
        done = f"__docs_done_{self.n}__"
        self.send(f"export TRIGD_DOCS_ERR={err}\n{{\n{command}\n}} >{out} 2>&1 </dev/null; echo \"{done} $?\"")
        deadline = time.monotonic() + timeout
        while True:
            if not select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise RuntimeError(f"no end of {command!r} within {timeout} s")
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the shell exited")
            if line.startswith(done):
                rc = int(line.split()[1])
                break
        failed = err.read_text().splitlines() if err.exists() else []
        return rc, out.read_text(errors="replace"), failed

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)


def substitute(command, env):
    command = command.replace('eval "$(tools/services start)"', ": the test exports its services")
    command = re.sub(r"(?m)^(\s*)tools/services stop\b.*$", r"\1: other tests use the services", command)
    command = command.replace(" -t trigd.", " -t " + env["TRIGD_TOPIC_PREFIX"])
    return command.replace("127.0.0.1:8080", env["TRIGD_API"]).replace("127.0.0.1:9464", env["TRIGD_METRICS"])


def run_page(root, bin_dir, page, env, log):
    work = pathlib.Path(tempfile.mkdtemp(prefix="docs-"))
    for entry in root.iterdir():
        if entry.name not in (".git", "build", ".local"):
            (work / entry.name).symlink_to(entry)
    (work / "build").mkdir()
    (work / "build/bin").symlink_to(bin_dir)
    shell = Shell(work, env)
    prefix = env["TRIGD_TOPIC_PREFIX"]
    failures, ran = [], 0
    try:
        for line, lang, body, marks in blocks(page):
            where = f"{page.relative_to(root)}:{line}"
            if lang == "json" and "file" in marks:
                want = json.loads((root / marks["file"]).read_text())
                if json.loads("\n".join(body)) != want:
                    failures.append(f"{where}: the block is not {marks['file']}")
                continue
            if lang not in ("sh", "console"):
                continue
            if "skip" in marks:
                if not marks["skip"]:
                    failures.append(f"{where}: a skipped block must say why")
                log(f"-- {where}: skipped ({marks['skip']})")
                continue
            if BUILDS.search("\n".join(body)):
                failures.append(f"{where}: set-up, build and test commands are not run here: mark the block skip")
                continue
            ran += 1
            if lang == "sh":
                command = substitute("\n".join(body), env)
                log(f"-- {where}\n{command}")
                rc, out, failed = shell.run(command)
                log(out.rstrip())
                if failed:
                    failures.append(f"{where}: failed: {failed[0]}\n{out}")
                    break
                continue
            wait = float(marks.get("retry") or 0)
            want_rc = int(marks.get("exit") or 0)
            deadline = time.monotonic() + wait
            while True:
                problems = []
                for command, expected in console_commands(body):
                    command = substitute(command, env)
                    rc, out, _ = shell.run(command)
                    out = out.replace(prefix, "trigd.")
                    log(f"-- {where}\n$ {command}\n{out.rstrip()}  [exit {rc}]")
                    if rc != want_rc:
                        problems.append(f"$ {command}: exit {rc}, expected {want_rc}\n{out}")
                    elif not matches(expected, out.splitlines(), "exact" in marks):
                        problems.append(f"$ {command}: output does not match\n--- expected\n"
                                        + "\n".join(expected) + f"\n--- got\n{out}")
                if not problems or time.monotonic() >= deadline:
                    break
                time.sleep(1)
            if problems:
                failures.append(f"{where}: " + "\n".join(problems))
                break
    finally:
        shell.close()
        for f in ("trigd.log", "worker.log"):
            if (work / f).exists():
                log(f"--- {f} (last lines)\n" + "\n".join((work / f).read_text(errors="replace").splitlines()[-30:]))
        shutil.rmtree(work, ignore_errors=True)
    if ran == 0:
        failures.append(f"{page.relative_to(root)}: no command block")
    return ran, failures


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    root, bin_dir = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
    pg, kafka = os.environ.get("TRIGD_PG"), os.environ.get("TRIGD_KAFKA")
    if not pg or not kafka:
        print("TRIGD_PG and TRIGD_KAFKA must point at the services tools/services starts")
        return 2
    status = 0
    for name in sys.argv[3:]:
        page = (root / name).resolve()
        run = f"docs{os.getpid()}{int(time.time())}"
        subprocess.run(["psql", pg, "-qc", f"CREATE DATABASE trigd_{run}"], check=True)
        api, metrics = free_ports(2)
        env = dict(os.environ, TRIGD_PG=f"{pg} dbname=trigd_{run}", TRIGD_TOPIC_PREFIX=f"{run}.",
                   TRIGD_GROUP=run, TRIGD_API=f"127.0.0.1:{api}", TRIGD_METRICS=f"127.0.0.1:{metrics}")
        env.pop("TRIGD_API_URL", None)
        env.pop("TRIGD_TOKEN", None)
        lines = []
        started = time.monotonic()
        ran, failures = run_page(root, bin_dir, page, env, lines.append)
        took = time.monotonic() - started
        subprocess.run(["psql", pg, "-qc", f"DROP DATABASE IF EXISTS trigd_{run} WITH (FORCE)"],
                       capture_output=True)
        if failures:
            print("\n".join(lines))
            for f in failures:
                print("FAIL " + f)
            status = 1
        print(f"{name}: {ran} blocks run in {took:.0f} s, {len(failures)} failed")
    return status


if __name__ == "__main__":
    sys.exit(main())
