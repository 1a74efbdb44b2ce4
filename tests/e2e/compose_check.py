#!/usr/bin/env python3
"""Validates compose.yaml and the observability files it mounts, without Docker.

No Docker engine runs where the tests run, so this is what keeps compose.yaml, the Dockerfile,
the Prometheus config and the Grafana dashboard from drifting away from the code and from
SPEC §7 (metric names, types, labels) and §8 (TRIGD_* variables): every file compose mounts or
builds from exists, the services find each other under the names and ports they are given, and
every dashboard query names only metrics and labels trigd exports.

Usage: compose_check.py REPO_ROOT. Prints one line per check and "N passed, M failed";
exits 1 when any check fails.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import yaml

# SPEC §7: name -> (type, labels).
SPEC_METRICS = {
    "trigd_events_total": ("counter", {"type", "outcome"}),
    "trigd_dead_letters_total": ("counter", {"reason"}),
    "trigd_jobs_total": ("counter", {"transition"}),
    "trigd_jobs": ("gauge", {"state"}),
    "trigd_runs_total": ("counter", {"outcome"}),
    "trigd_constraint_checks_total": ("counter", {"constraint", "result"}),
    "trigd_event_to_launch_seconds": ("histogram", set()),
    "trigd_consumer_lag": ("gauge", {"topic", "partition"}),
    "trigd_transaction_retries_total": ("counter", set()),
}
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")
# Labels Prometheus attaches to every scraped series.
TARGET_LABELS = {"job", "instance"}
# SPEC §8: the variables every binary reads.
SPEC_ENV = {"TRIGD_KAFKA", "TRIGD_PG", "TRIGD_METRICS", "TRIGD_TOPIC_PREFIX", "TRIGD_GROUP"}
REQUIRED_SERVICES = ["kafka", "postgres", "topics", "trigd", "worker", "prometheus", "grafana"]
PROMQL_FUNCTIONS = {
    "sum", "avg", "min", "max", "count", "topk", "bottomk", "quantile", "stddev", "stdvar",
    "count_values", "group", "rate", "irate", "increase", "delta", "idelta", "deriv",
    "histogram_quantile", "abs", "ceil", "floor", "round", "clamp", "clamp_min", "clamp_max",
    "sum_over_time", "avg_over_time", "max_over_time", "min_over_time", "count_over_time",
    "last_over_time", "absent", "absent_over_time", "changes", "resets", "vector", "scalar",
    "label_replace", "label_join", "time", "timestamp", "sort", "sort_desc",
}
PROMQL_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
                   "group_left", "group_right", "inf", "nan"}


class Check:
    """Collects the results of named checks; a check is a function that raises AssertionError."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def run(self, name, fn):
        try:
            fn()
        except AssertionError as e:
            self.failed += 1
            print(f"FAIL {name}: {e}")
        except Exception as e:  # A crash in a check is a failure of that check, not of the run.
            self.failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
        else:
            self.passed += 1
            print(f"ok   {name}")


def ensure(cond, message):
    if not cond:
        raise AssertionError(message)


def host_port(address):
    """'host:port' -> (host, int port)."""
    host, _, port = address.rpartition(":")
    ensure(port.isdigit(), f"'{address}' is not host:port")
    return host, int(port)


def libpq_fields(conninfo):
    """'host=a port=1 user=u' -> dict (libpq key=value form without quoting)."""
    fields = {}
    for part in conninfo.split():
        key, sep, value = part.partition("=")
        ensure(sep == "=", f"'{part}' in '{conninfo}' is not key=value")
        fields[key] = value
    return fields


def strip_grafana_variables(expr):
    """Grafana's $__rate_interval, ${var} and $var become a duration Prometheus accepts."""
    return re.sub(r"\$\{?\w+\}?", "1m", expr)


def promql_parts(expr):
    """Returns (metric names, label names, function names) an expression refers to."""
    expr = strip_grafana_variables(expr)
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    expr = re.sub(r"'(?:[^'\\]|\\.)*'", "''", expr)
    labels = set()
    for body in re.findall(r"\{([^}]*)\}", expr):
        labels.update(re.findall(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)", body))
    expr = re.sub(r"\{[^}]*\}", " ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    for body in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", expr):
        labels.update(x.strip() for x in body.split(",") if x.strip())
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    metrics, functions = set(), set()
    for name, call in re.findall(r"(?<![\w.])([A-Za-z_:][\w:]*)(\s*\()?", expr):
        if call:
            functions.add(name)
        elif name.lower() not in PROMQL_KEYWORDS:
            metrics.add(name)
    return metrics, labels, functions


def base_metric(name, exported):
    """The exported metric a series name belongs to (histogram suffixes stripped), or None."""
    if name in exported and exported[name][0] != "histogram":
        return name
    for suffix in HISTOGRAM_SUFFIXES:
        base = name[: -len(suffix)]
        if name.endswith(suffix) and base in exported and exported[base][0] == "histogram":
            return base
    return None


def exported_metrics(root):
    """Metric name -> type as engine/metrics/metrics.cc registers them."""
    text = open(os.path.join(root, "engine/metrics/metrics.cc")).read()
    found = re.findall(r"Build(Counter|Gauge|Histogram)\(\)\s*\.Name\(\"(\w+)\"\)", text)
    return {name: kind.lower() for kind, name in found}


def dashboard_targets(dashboard):
    """Every (panel, target) pair, including panels nested in collapsed rows."""
    for panel in dashboard.get("panels", []):
        for p in [panel] + panel.get("panels", []):
            for t in p.get("targets", []):
                yield p, t


def main():
    if len(sys.argv) != 2:
        print("usage: compose_check.py REPO_ROOT", file=sys.stderr)
        return 2
    root = os.path.abspath(sys.argv[1])
    check = Check()
    state = {}

    def inside_repo(rel, base=root):
        path = os.path.normpath(os.path.join(base, rel))
        ensure(path == root or path.startswith(root + os.sep), f"{rel} leaves the repository")
        return path

    def load_compose():
        with open(os.path.join(root, "compose.yaml")) as f:
            doc = yaml.safe_load(f)
        ensure(isinstance(doc, dict) and isinstance(doc.get("services"), dict),
               "compose.yaml has no services mapping")
        state["services"] = doc["services"]
    check.run("compose.yaml is well-formed YAML with services", load_compose)
    if "services" not in state:
        print(f"{check.passed} passed, {check.failed} failed")
        return 1
    services = state["services"]

    def env(service):
        e = services.get(service, {}).get("environment", {})
        if isinstance(e, list):  # ["K=V", ...] form
            e = dict(x.partition("=")[::2] for x in e)
        return {k: str(v) for k, v in (e or {}).items()}

    def services_present():
        missing = [s for s in REQUIRED_SERVICES if s not in services]
        ensure(not missing, f"missing services: {missing}")
        for s in REQUIRED_SERVICES:
            ensure("image" in services[s] or "build" in services[s], f"{s} has neither image nor build")
    check.run("every service is present (kafka, postgres, topics, trigd, worker, prometheus, grafana)",
              services_present)

    def images():
        ensure(services["kafka"].get("image") == "apache/kafka:4.1.1",
               f"kafka image is {services['kafka'].get('image')}, expected apache/kafka:4.1.1")
        ensure(re.fullmatch(r"postgres:15(\..*)?", services["postgres"].get("image", "")),
               f"postgres image is {services['postgres'].get('image')}, expected postgres:15")
        ensure(services["prometheus"].get("image", "").startswith("prom/prometheus"), "prometheus image")
        ensure(services["grafana"].get("image", "").startswith("grafana/grafana"), "grafana image")
        kafka_env = env("kafka")
        ensure("broker" in kafka_env.get("KAFKA_PROCESS_ROLES", "") and
               "controller" in kafka_env.get("KAFKA_PROCESS_ROLES", ""), "kafka is not a KRaft broker+controller")
    check.run("images: apache/kafka:4.1.1 in KRaft mode, postgres:15, prom/prometheus, grafana/grafana", images)

    def builds():
        built = [s for s in ("topics", "trigd", "worker") if "build" in services[s]]
        ensure(built == ["topics", "trigd", "worker"], f"topics, trigd and worker must be built; built: {built}")
        for s in built:
            b = services[s]["build"]
            b = {"context": b} if isinstance(b, str) else b
            context = inside_repo(b.get("context", "."))
            ensure(os.path.isdir(context), f"{s}: build context {b.get('context')} is not a directory")
            dockerfile = inside_repo(b.get("dockerfile", "Dockerfile"), context)
            ensure(os.path.isfile(dockerfile), f"{s}: dockerfile {b.get('dockerfile')} does not exist")
            text = open(dockerfile).read()
            ensure(re.search(r"^FROM debian:12\b", text, re.M), f"{dockerfile} is not based on debian:12")
            command = services[s].get("command")
            ensure(isinstance(command, list) and command, f"{s}: command must be an exec-form list")
            binary = command[0]
            ensure(binary.startswith("build/bin/"), f"{s}: runs {binary}, not a build/bin binary")
            target = binary[len("build/bin/"):]
            ensure(re.search(rf"ninja[^\n]*\b{re.escape(target)}\b", text),
                   f"{s}: the Dockerfile does not build {target}")
            ensure(os.path.isfile(os.path.join(root, "engine/app", target.replace("-", "_") + "_main.cc")),
                   f"{s}: no engine/app source for {target}")
        ensure(services["topics"]["command"][1:] == ["topics", "create"], "topics must run `trigctl topics create`")
    check.run("topics, trigd and worker build from an existing Debian 12 Dockerfile that builds their binaries",
              builds)

    def volumes():
        count = 0
        for name, s in services.items():
            for v in s.get("volumes", []) or []:
                source = v.get("source") if isinstance(v, dict) else v.split(":")[0]
                if isinstance(v, dict) and v.get("type") != "bind":
                    continue
                if not source.startswith((".", "/")):
                    continue  # a named volume
                ensure(os.path.exists(inside_repo(source)), f"{name}: volume source {source} does not exist")
                count += 1
        ensure(count >= 3, f"expected the Prometheus config, Grafana provisioning and dashboard mounts; saw {count}")
    check.run("every bind-mounted host path exists in the repository", volumes)

    def env_names():
        for name in services:
            for key in env(name):
                if key.startswith("TRIGD_"):
                    ensure(key in SPEC_ENV, f"{name}: {key} is not a SPEC §8 variable ({sorted(SPEC_ENV)})")
        for name in ("topics", "trigd", "worker"):
            ensure("TRIGD_KAFKA" in env(name), f"{name} lacks TRIGD_KAFKA")
        for key in ("TRIGD_PG", "TRIGD_METRICS"):
            ensure(key in env("trigd"), f"trigd lacks {key}")
    check.run("TRIGD_* variables are SPEC §8 names and trigd has TRIGD_KAFKA, TRIGD_PG, TRIGD_METRICS", env_names)

    def kafka_address():
        kafka_env = env("kafka")
        advertised = dict(
            (x.split("://")[0], x.split("://")[1])
            for x in kafka_env.get("KAFKA_ADVERTISED_LISTENERS", "").split(","))
        for name in ("topics", "trigd", "worker"):
            address = env(name)["TRIGD_KAFKA"]
            ensure(address in advertised.values(),
                   f"{name}: TRIGD_KAFKA={address} is not an advertised listener ({advertised})")
            host, _ = host_port(address)
            ensure(host == "kafka", f"{name}: TRIGD_KAFKA host is {host}, expected the kafka service")
    check.run("TRIGD_KAFKA names the kafka service's advertised in-network listener", kafka_address)

    def pg_address():
        pg_env = env("postgres")
        for name in ("trigd", "worker", "topics"):
            if "TRIGD_PG" not in env(name):
                continue
            f = libpq_fields(env(name)["TRIGD_PG"])
            ensure(f.get("host") == "postgres", f"{name}: TRIGD_PG host {f.get('host')}, expected postgres")
            ensure(f.get("port", "5432") == "5432", f"{name}: TRIGD_PG port {f.get('port')}, expected 5432")
            ensure(f.get("user") == pg_env.get("POSTGRES_USER"), f"{name}: TRIGD_PG user differs from POSTGRES_USER")
            ensure(f.get("password") == pg_env.get("POSTGRES_PASSWORD"),
                   f"{name}: TRIGD_PG password differs from POSTGRES_PASSWORD")
            ensure(f.get("dbname") == pg_env.get("POSTGRES_DB"), f"{name}: TRIGD_PG dbname differs from POSTGRES_DB")
    check.run("TRIGD_PG matches the postgres service's host, user, password and database", pg_address)

    def prometheus_config_path():
        for v in services["prometheus"].get("volumes", []):
            parts = v.split(":")
            if parts[1] == "/etc/prometheus/prometheus.yml":
                return inside_repo(parts[0])
        raise AssertionError("prometheus does not mount a config at /etc/prometheus/prometheus.yml")

    def metrics_port():
        ensure("TRIGD_METRICS" in env("trigd"), "trigd lacks TRIGD_METRICS")
        host, port = host_port(env("trigd")["TRIGD_METRICS"])
        ensure(host in ("0.0.0.0", "", "[::]", "::"),
               f"TRIGD_METRICS listens on {host}: Prometheus in another container cannot reach it")
        with open(prometheus_config_path()) as f:
            config = yaml.safe_load(f)
        jobs = {j["job_name"]: j for j in config.get("scrape_configs", [])}
        ensure("trigd" in jobs, "prometheus.yml has no job trigd")
        job = jobs["trigd"]
        interval = job.get("scrape_interval", config.get("global", {}).get("scrape_interval"))
        ensure(interval == "5s", f"trigd job scrape_interval is {interval}, expected 5s")
        targets = [t for sc in job.get("static_configs", []) for t in sc.get("targets", [])]
        ensure(targets == [f"trigd:{port}"], f"trigd job targets {targets}, expected ['trigd:{port}']")
        ensure(job.get("metrics_path", "/metrics") == "/metrics", "trigd job metrics_path is not /metrics")
    check.run("the Prometheus target is trigd at TRIGD_METRICS's port, scraped every 5s", metrics_port)

    def promtool():
        tool = shutil.which("promtool")
        ensure(tool, "promtool not found (tools/setup installs the prometheus package)")
        r = subprocess.run([tool, "check", "config", prometheus_config_path()], capture_output=True, text=True)
        ensure(r.returncode == 0, f"promtool check config: {r.stdout}{r.stderr}")
    check.run("promtool check config accepts tools/prometheus/prometheus.yml", promtool)

    def depends_on():
        expected = {
            ("topics", "kafka"): "service_healthy",
            ("trigd", "postgres"): "service_healthy",
            ("trigd", "topics"): "service_completed_successfully",
            ("worker", "trigd"): None,
            ("prometheus", "trigd"): None,
            ("grafana", "prometheus"): None,
        }
        for (s, dep), condition in expected.items():
            deps = services[s].get("depends_on", {})
            ensure(dep in deps, f"{s} does not depend on {dep}")
            if condition:
                got = deps[dep].get("condition") if isinstance(deps, dict) else None
                ensure(got == condition, f"{s} -> {dep}: condition {got}, expected {condition}")
        for s, spec in services.items():
            deps = spec.get("depends_on", {})
            for dep in deps:
                ensure(dep in services, f"{s} depends on unknown service {dep}")
                if isinstance(deps, dict) and deps[dep].get("condition") == "service_healthy":
                    ensure("healthcheck" in services[dep], f"{s} waits for {dep} to be healthy but it has no healthcheck")
        for s in ("kafka", "postgres", "trigd", "prometheus", "grafana"):
            hc = services[s].get("healthcheck", {})
            ensure(isinstance(hc.get("test"), list) and hc["test"], f"{s} has no healthcheck test")
        ensure(services["topics"].get("restart", "no") == "no", "topics is one-shot and must not restart")
    check.run("depends_on conditions and healthchecks order the start-up", depends_on)

    def grafana_provisioning():
        mounts = {}
        for v in services["grafana"].get("volumes", []):
            parts = v.split(":")
            mounts[parts[1]] = inside_repo(parts[0])
        ensure("/etc/grafana/provisioning" in mounts, "grafana does not mount /etc/grafana/provisioning")
        prov = mounts["/etc/grafana/provisioning"]
        datasources = []
        for fn in sorted(os.listdir(os.path.join(prov, "datasources"))):
            with open(os.path.join(prov, "datasources", fn)) as f:
                datasources += yaml.safe_load(f).get("datasources", [])
        prom = [d for d in datasources if d.get("type") == "prometheus"]
        ensure(len(prom) == 1, f"expected one Prometheus datasource, found {len(prom)}")
        ensure(prom[0].get("uid") == "prometheus", f"datasource uid {prom[0].get('uid')}, expected prometheus")
        url = prom[0].get("url", "")
        ensure(re.fullmatch(r"http://prometheus:9090/?", url), f"datasource url {url}, expected http://prometheus:9090")
        providers = []
        for fn in sorted(os.listdir(os.path.join(prov, "dashboards"))):
            with open(os.path.join(prov, "dashboards", fn)) as f:
                providers += yaml.safe_load(f).get("providers", [])
        paths = {p.get("options", {}).get("path") for p in providers}
        dashboards = [c for c, h in mounts.items() if h.endswith("trigd-dashboard.json")]
        ensure(dashboards, "grafana does not mount tools/grafana/trigd-dashboard.json")
        ensure(os.path.dirname(dashboards[0]) in paths,
               f"dashboard mounted at {dashboards[0]} but providers read {sorted(p for p in paths if p)}")
        state["dashboard_path"] = mounts[dashboards[0]]
    check.run("Grafana provisions the prometheus datasource and the mounted dashboard's folder", grafana_provisioning)

    def load_dashboard():
        path = state.get("dashboard_path", os.path.join(root, "tools/grafana/trigd-dashboard.json"))
        with open(path) as f:
            d = json.load(f)
        state["dashboard"] = d  # The later checks can still run when only a property here is wrong.
        ensure(d.get("schemaVersion") == 39, f"schemaVersion {d.get('schemaVersion')}, expected 39")
        ensure(d.get("uid") and d.get("title"), "dashboard needs a uid and a title")
        variables = {v["name"] for v in d.get("templating", {}).get("list", [])}
        targets = list(dashboard_targets(d))
        ensure(targets, "dashboard has no queries")
        for panel, t in targets:
            for ds in (panel.get("datasource"), t.get("datasource")):
                uid = (ds or {}).get("uid")
                ensure(uid in ("prometheus", "${DS_PROMETHEUS}"),
                       f"panel '{panel.get('title')}': datasource uid {uid}")
                if uid == "${DS_PROMETHEUS}":
                    ensure("DS_PROMETHEUS" in variables, "panels use ${DS_PROMETHEUS} but no such variable exists")
            ensure(t.get("expr"), f"panel '{panel.get('title')}' has a target without expr")
    check.run("the dashboard JSON parses (schemaVersion 39) and every query uses the Prometheus datasource",
              load_dashboard)

    def layout():
        d = state["dashboard"]
        boxes = []
        for p in d["panels"]:
            g = p["gridPos"]
            ensure(g["x"] >= 0 and g["x"] + g["w"] <= 24, f"panel '{p.get('title')}' exceeds the 24-column grid")
            for q, h in boxes:
                overlap = (g["x"] < h["x"] + h["w"] and h["x"] < g["x"] + g["w"] and
                           g["y"] < h["y"] + h["h"] and h["y"] < g["y"] + g["h"])
                ensure(not overlap, f"panels '{p.get('title')}' and '{q}' overlap")
            boxes.append((p.get("title"), g))
        ids = [p["id"] for p in d["panels"]]
        ensure(len(ids) == len(set(ids)), "panel ids are not unique")
    check.run("dashboard panels fit the grid without overlapping, with unique ids", layout)

    def metrics_registered():
        exported = exported_metrics(root)
        for name, (kind, _) in SPEC_METRICS.items():
            ensure(exported.get(name) == kind,
                   f"engine/metrics/metrics.cc registers {name} as {exported.get(name)}, SPEC §7 says {kind}")
    check.run("engine/metrics/metrics.cc registers every SPEC §7 metric with its type", metrics_registered)

    def dashboard_metrics():
        exported = {n: (t, SPEC_METRICS.get(n, (t, set()))[1]) for n, t in exported_metrics(root).items()}
        exported.update(SPEC_METRICS)
        used = set()
        for panel, t in dashboard_targets(state["dashboard"]):
            metrics, labels, functions = promql_parts(t.get("expr", ""))
            title = panel.get("title")
            ensure(metrics, f"'{title}': {t['expr']} names no metric")
            allowed_labels = set(TARGET_LABELS)
            for m in metrics:
                base = base_metric(m, exported)
                ensure(base, f"'{title}': {m} is not a trigd metric (SPEC §7, with _bucket/_count/_sum for histograms)")
                used.add(base)
                allowed_labels |= exported[base][1]
                if m.endswith("_bucket"):
                    allowed_labels.add("le")
            unknown_fn = functions - PROMQL_FUNCTIONS
            ensure(not unknown_fn, f"'{title}': unknown PromQL functions {sorted(unknown_fn)}")
            ensure(labels <= allowed_labels,
                   f"'{title}': labels {sorted(labels - allowed_labels)} are not labels of {sorted(metrics)}")
            legend = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", t.get("legendFormat", "")))
            ensure(legend <= labels, f"'{title}': legend uses {sorted(legend - labels)}, which the query drops")
        missing = set(SPEC_METRICS) - used
        ensure(not missing, f"no panel shows {sorted(missing)}")
    check.run("every dashboard query names only trigd metrics and their labels, and every SPEC §7 metric is shown",
              dashboard_metrics)

    def latency_quantiles():
        quantiles = set()
        for _, t in dashboard_targets(state["dashboard"]):
            m = re.search(r"histogram_quantile\(\s*([0-9.]+)\s*,.*trigd_event_to_launch_seconds_bucket", t.get("expr", ""))
            if m:
                quantiles.add(float(m.group(1)))
        ensure({0.5, 0.9, 0.99} <= quantiles, f"event-to-launch quantiles shown: {sorted(quantiles)}")
    check.run("the dashboard shows event-to-launch p50, p90 and p99", latency_quantiles)

    print(f"{check.passed} passed, {check.failed} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
