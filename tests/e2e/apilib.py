"""Shared by the API's e2e tests: a run's own database and topics on the services tools/services
starts, a token file, trigd with its API on a free port, and a reference worker."""
import hashlib
import http.client
import json
import os
import secrets
import socket
import subprocess
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Trigd:
    """trigd (API on a free port, TRIGD_TOKENS of `roles`) and a worker, on a fresh database."""

    ROLES = {"admin": ("admin", ["*"]), "operator_a": ("operator", ["a"]), "operator": ("operator", ["*"]),
             "viewer": ("viewer", ["*"]), "late": ("viewer", ["b"])}

    def __init__(self, bin_dir, name, tokens=("admin", "operator_a", "viewer"), pg_password=None):
        self.bin = bin_dir
        self.tmp = tempfile.mkdtemp()
        self.run = f"{name}{os.getpid()}{int(time.time())}"
        base_pg = os.environ["TRIGD_PG"]
        subprocess.run(["psql", base_pg, "-qc", f"CREATE DATABASE trigd_{self.run}"], check=True,
                       stdout=subprocess.DEVNULL)
        pg = f"{base_pg} dbname=trigd_{self.run}" + (f" password={pg_password}" if pg_password else "")
        self.env = dict(os.environ, TRIGD_PG=pg, TRIGD_TOPIC_PREFIX=f"{self.run}.", TRIGD_GROUP=self.run,
                        TRIGD_METRICS=f"127.0.0.1:{free_port()}")
        for v in ("TRIGD_API_URL", "TRIGD_TOKEN", "TRIGD_TOKENS", "TRIGD_API"):
            self.env.pop(v, None)
        self.tokens = {n: secrets.token_urlsafe(24) for n in self.ROLES}
        self.tokens_file = os.path.join(self.tmp, "tokens.json")
        self.write_tokens(tokens)
        self.port = free_port()
        self.log_path = os.path.join(self.tmp, "trigd.log")
        self.procs = []
        self.trigctl("topics", "create")
        subprocess.run([f"{bin_dir}/trigd", "migrate"], env=self.env, check=True, stdout=subprocess.DEVNULL)
        self.log = open(self.log_path, "w")
        env_api = dict(self.env, TRIGD_API=f"127.0.0.1:{self.port}", TRIGD_TOKENS=self.tokens_file)
        self.trigd = subprocess.Popen([f"{bin_dir}/trigd"], env=env_api, stdout=self.log, stderr=subprocess.STDOUT)
        self.procs.append(self.trigd)
        self.procs.append(subprocess.Popen([f"{bin_dir}/trigd-worker"], env=self.env, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL))
        self.wait_for("the API", self._up, 60)

    def write_tokens(self, names):
        with open(self.tokens_file, "w") as f:
            # Each token named after its key: the audit's actor is token:KEY.
            json.dump([{"sha256": hashlib.sha256(self.tokens[n].encode()).hexdigest(), "role": self.ROLES[n][0],
                        "namespaces": self.ROLES[n][1], "name": n} for n in names], f)

    def _up(self):
        try:
            return self.request("GET", "/api/v1/whoami", self.tokens["admin"])[0] == 200
        except OSError:
            if self.trigd.poll() is not None:
                raise SystemExit("FAIL: trigd exited:\n" + open(self.log_path).read())
            return False

    def request(self, method, path, token=None, body=None, raw=None):
        headers = {}
        if token is not None:
            headers["Authorization"] = "Bearer " + token
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None:
            headers["Content-Type"] = "application/json"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        text = resp.read()
        conn.close()
        try:
            return resp.status, (json.loads(text) if text else None)
        except ValueError:
            return resp.status, {"unparsed": text[:200].decode(errors="replace")}

    def trigctl(self, *args):
        return subprocess.run([f"{self.bin}/trigctl", *args], env=self.env, check=True, capture_output=True, text=True)

    @staticmethod
    def wait_for(what, fn, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = fn()
            if v:
                return v
            time.sleep(0.2)
        raise SystemExit("FAIL: timed out waiting for " + what)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        self.log.close()
