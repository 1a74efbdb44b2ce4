#!/usr/bin/python3
"""e2e: the web console in a real headless browser (Debian's chromium, chromium-driver and
python3-selenium).

Applies three schedules through the API, opens the console with a viewer's token (no operator
buttons), then an operator's: finds the schedule, clicks Run now and sees the run succeed with
the reference worker on the Runs page, clicks Rerun and sees a second run succeed, runs a
`sleep 600` schedule now and cancels its run (killed); then the run's lineage drawn as a graph
(with the run of a schedule it triggers, joined by an edge), a waiting job with its `why`, and
the Audit page naming the operator's cancel, filtered by actor.
Then the seed of dag_e2e.sh (nine programs, p4 failing; p8 and a tenth, dag/report, join per
lineage) run for three cycles: the dependency graph (nodes, edges, each schedule's state and last
run), the search that highlights a node with its upstream and downstream, each cycle's lineage
graph (every node's state: p4 failed, p7 and p9 skipped, dag/report waiting with its why), the
schedule page (document, versions and their diff, next fire times, runs and their timeline with
attempt, worker and duration on hover), keyboard use (Enter on a focused node opens it), a live
update without a reload, and a graph of 1,000 schedules laid out without freezing the page (the
time it took is printed). Screenshots of each page are kept in ARTEFACTS (console-*.png).

console_e2e.py SRC BIN ARTEFACTS
"""
import os
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apilib import Trigd  # noqa: E402

SRC, BIN, ARTEFACTS = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(ARTEFACTS, exist_ok=True)
for old in os.listdir(ARTEFACTS):
    if old.startswith("console-") and old.endswith(".png"):
        os.remove(os.path.join(ARTEFACTS, old))
started = time.time()
T = Trigd(BIN, "console", tokens=("admin", "operator", "viewer"))
browser = None


def fail(msg):
    print("FAIL:", msg)
    if browser:
        try:
            browser.save_screenshot(os.path.join(ARTEFACTS, "console-failure.png"))
            print("--- page:", browser.find_element(By.TAG_NAME, "body").text[:3000])
            for entry in browser.get_log("browser"):
                print("console:", entry)
        except WebDriverException:
            pass
    print("--- trigd log")
    print(open(T.log_path).read()[-4000:])
    sys.exit(1)


def wait(what, fn, timeout=30):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            v = fn()
            if v:
                return v
        except (WebDriverException, StaleElementReferenceException) as e:
            last = e
        time.sleep(0.2)
    fail(f"timed out waiting for {what}" + (f" ({last})" if last else ""))


def shot(name, full=False):
    """A screenshot of the window; `full`: of the whole page, the window made as tall as it."""
    size = browser.get_window_size()
    if full:
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(size["width"], min(2400, height + 140))
    browser.save_screenshot(os.path.join(ARTEFACTS, f"console-{name}.png"))
    if full:
        browser.set_window_size(size["width"], size["height"])


def css(selector):
    return browser.find_elements(By.CSS_SELECTOR, selector)


def go(hash_, timeout=30):
    """Shows page #hash_, drawn anew (the same hash twice is no hashchange: route() is called)."""
    browser.execute_script(
        "document.body.removeAttribute('data-loaded');"
        "if (location.hash === '#' + arguments[0]) route(); else location.hash = arguments[0];", hash_)
    wait(f"page {hash_}", lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") ==
         hash_.split("/")[0].split("?")[0], timeout)


def click(selector):
    """Clicks the first element of `selector`, found again if a live refresh redrew it."""
    def once():
        found = css(selector)
        if found:
            found[0].click()
        return bool(found)
    wait(f"{selector} to click", once)


def node_states(selector="svg.graph g.node"):
    """{node id: data-state} of the graph drawn."""
    return {n.get_attribute("data-node-id"): n.get_attribute("data-state") for n in css(selector)}


def edges():
    return {(p.get_attribute("data-from"), p.get_attribute("data-to")) for p in css("svg.graph path.edge")}


def use_token(name):
    box = browser.find_element(By.ID, "token")
    box.clear()
    box.send_keys(T.tokens[name])
    browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
    role = T.ROLES[name][0]
    wait(f"the console to say {role}", lambda: browser.find_element(By.ID, "whoami").text.startswith(role))


# The seed of dag_e2e.sh: p1 -> p2, p3; p2 -> p4, p5; p3 -> p6; p4 -> p7; p5 + p6 -> p8 (all);
# p7 -> p9. p4 exits 3. The joins (p8, and dag/report on p6 and p9) count per lineage.
UPSTREAM = {"p2": ["p1"], "p3": ["p1"], "p4": ["p2"], "p5": ["p2"], "p6": ["p3"], "p7": ["p4"], "p8": ["p5", "p6"],
            "p9": ["p7"], "report": ["p6", "p9"]}
EXPECT = {"p1": "succeeded", "p2": "succeeded", "p3": "succeeded", "p4": "failed", "p5": "succeeded",
          "p6": "succeeded", "p7": "skipped", "p8": "succeeded", "p9": "skipped", "report": "waiting"}
CYCLES = 3


def dag_doc(n, p1_args=None):
    if n == "p1":
        # A time leaf too, never due during the test: the schedule page has next fire times.
        trigger = {"any": [{"partition": {"dataset": f"{T.run}.dag"}}, {"time": {"cron": "0 6 1 1 *"}}]}
    else:
        join = len(UPSTREAM[n]) > 1
        leaves = [{"program": {"name": f"dag.{u}", "status": ["succeeded"],
                               "on_upstream_failure": "wait" if n == "report" else "discard",
                               **({"correlate": True} if join else {})}} for u in UPSTREAM[n]]
        trigger = leaves[0] if len(leaves) == 1 else {"all": leaves}
    command = "exit 3" if n == "p4" else "true"
    return {"namespace": "dag", "name": n, "program": {"name": f"dag.{n}", "args": {"command": command, **(p1_args or {})}},
            "trigger": trigger}


def apply_dag():
    admin = T.tokens["admin"]
    docs = [dag_doc(n) for n in EXPECT]
    status, reply = T.request("POST", "/api/v1/schedules", admin, docs)
    if status != 200:
        fail(f"apply the DAG: {status} {reply}")
    # A second version of p1: the schedule page diffs v1 and v2.
    status, reply = T.request("PUT", "/api/v1/schedules/dag/p1", admin, dag_doc("p1", {"day": "yesterday"}))
    if status != 200 or reply["version"] != 2:
        fail(f"apply p1 v2: {status} {reply}")
    for cycle in range(1, CYCLES + 1):
        T.trigctl("events", "emit", "partition", f"{T.run}.dag", f"dt={cycle}")


def dag_settled():
    status, reply = T.request("GET", "/api/v1/runs?limit=200", T.tokens["admin"])
    runs = [r for r in reply["items"] if r["schedule"].startswith("dag/")]
    done = [r for r in runs if r["state"] in ("succeeded", "failed")]
    status, jobs = T.request("GET", "/api/v1/jobs?state=pending_trigger&schedule=dag/report", T.tokens["admin"])
    return len(done) == 7 * CYCLES and len(runs) == 7 * CYCLES and len(jobs["items"]) == CYCLES


def dag_pages():
    wait("three cycles of the DAG to settle", dag_settled, 90)
    browser.set_window_size(1400, 1000)
    # The dependency graph of namespace dag: every node, every edge, each schedule's last run.
    go("graph?namespace=dag")
    want_edges = {(f"dataset:{T.run}.dag", "schedule:dag/p1")}
    want_edges |= {(f"schedule:dag/{u}", f"schedule:dag/{n}") for n, ups in UPSTREAM.items() for u in ups}
    if edges() != want_edges:
        fail(f"graph edges: got {sorted(edges())}, want {sorted(want_edges)}")
    want_states = {f"schedule:dag/{n}": {"skipped": "none", "waiting": "none"}.get(s, s) for n, s in EXPECT.items()}
    want_states[f"dataset:{T.run}.dag"] = "dataset"
    if node_states() != want_states:
        fail(f"graph nodes: got {node_states()}, want {want_states}")
    report = css('g.node[data-node-id="schedule:dag/report"]')[0].text
    if f"{CYCLES} open jobs" not in report or "active" not in report:
        fail(f"dag/report's node does not say active with {CYCLES} open jobs: {report!r}")
    if "last run ✗ failed" not in css('g.node[data-node-id="schedule:dag/p4"]')[0].text:
        fail("p4's node does not say its last run failed in words")
    shot("graph")
    # Search: p4, its upstream (p2, p1, the dataset) and downstream (p7, p9, report) light up.
    box = browser.find_element(By.ID, "graph-search")
    box.send_keys("dag/p4")
    lit = {n.get_attribute("data-node-id") for n in css("svg.graph g.node.hl")}
    want_lit = {"schedule:dag/p4", "schedule:dag/p2", "schedule:dag/p1", f"dataset:{T.run}.dag", "schedule:dag/p7",
                "schedule:dag/p9", "schedule:dag/report"}
    if lit != want_lit:
        fail(f"search dag/p4 lit {sorted(lit)}, want {sorted(want_lit)}")
    shot("graph-search")
    # Keyboard: Enter in the search focuses the match; Enter on it opens its schedule page.
    box.send_keys(Keys.ENTER)
    if browser.switch_to.active_element.get_attribute("data-node-id") != "schedule:dag/p4":
        fail("Enter in the search did not focus the matching node")
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait("dag/p4's page by keyboard", lambda: css('h2[data-schedule-page="dag/p4"]'))
    box = None
    browser.execute_script("document.getElementById('graph-search') && (document.getElementById('graph-search').value = '');"
                           "state.graphSearch = '';")

    # Each cycle's lineage: every node's state, the skipped ones, the waiting join with its why.
    status, p1_runs = T.request("GET", "/api/v1/runs?schedule=dag/p1&limit=10", T.tokens["admin"])
    lineages = sorted(r["run_id"] for r in p1_runs["items"])
    if len(lineages) != CYCLES:
        fail(f"expected {CYCLES} runs of dag/p1, got {p1_runs}")
    for i, lineage in enumerate(lineages):
        go(f"lineage/{lineage}")
        wait("the lineage graph", lambda: len(css("svg.graph g.node")) == len(EXPECT))
        got = {n.get_attribute("data-schedule").split("/")[1]: n.get_attribute("data-state") for n in css("svg.graph g.node")}
        if got != EXPECT:
            fail(f"lineage {lineage}: node states {got}, want {EXPECT}")
        node_of = {n.get_attribute("data-schedule").split("/")[1]: n.get_attribute("data-node-id")
                   for n in css("svg.graph g.node")}
        want = {(node_of[u], node_of[n]) for n, ups in UPSTREAM.items() for u in ups}
        if edges() != want:
            fail(f"lineage {lineage}: edges {sorted(edges())}, want {sorted(want)}")
        for name, word in (("p4", "failed"), ("p7", "skipped (upstream failed)"), ("report", "waiting")):
            text = css(f'g.node[data-node-id="{node_of[name]}"]')[0].text
            if word not in text:
                fail(f"lineage {lineage}: {name}'s node does not say {word!r}: {text!r}")
        waiting = css(f'g.node[data-node-id="{node_of["report"]}"]')[0]
        why = waiting.find_elements(By.TAG_NAME, "text")[2].text
        if not why.startswith("waits on trigger.all[1]") or "all[1]" not in waiting.get_attribute("aria-label"):
            fail(f"the waiting node's why line says {why!r} (label {waiting.get_attribute('aria-label')!r})")
        if len(css('svg.timeline g.bar')) != 7:
            fail(f"lineage {lineage}: the timeline has {len(css('svg.timeline g.bar'))} bars, want 7")
        if i == 0:
            shot("lineage-dag", full=True)
            first = (lineage, node_of)
    # trigctl prints the same graphs as Graphviz DOT.
    dot = T.trigctl("graph", "--namespace", "dag").stdout
    for u, n in (("p4", "p7"), ("p6", "report"), ("p5", "p8")):
        if f'"schedule:dag/{u}" -> "schedule:dag/{n}" [label="program"];' not in dot:
            fail(f"trigctl graph has no edge {u} -> {n}:\n{dot}")
    if 'label="dag/p4\\nactive, 0 open job(s)\\nlast run failed"' not in dot:
        fail(f"trigctl graph does not label p4 with its last run:\n{dot}")
    dot = T.trigctl("lineages", "show", first[0], "--format", "dot").stdout
    if dot.count("skipped (upstream failed)") != 2 or "dag/report\\nwaiting\\nwaits on trigger.all[1]" not in dot:
        fail(f"trigctl lineages show --format dot:\n{dot}")
    # Clicking a node opens its run; a waiting node its job.
    lineage, node_of = first
    go(f"lineage/{lineage}")
    click(f'g.node[data-node-id="{node_of["p4"]}"]')
    wait("p4's run page", lambda: css(f'h2[data-run-page="{node_of["p4"][4:]}"]'))
    fields = {dt.text: dd.text for dt, dd in zip(css("dl.fields dt"), css("dl.fields dd"))}
    if fields.get("schedule") != "dag/p4" or not fields.get("worker"):
        fail(f"the run page's fields: {fields}")
    shot("run")
    go(f"lineage/{lineage}")
    click(f'g.node[data-node-id="{node_of["report"]}"]')
    wait("the waiting job's page", lambda: css(f'h2[data-job-page="{node_of["report"][4:]}"]'))
    fields = {dt.text: dd.text for dt, dd in zip(css("dl.fields dt"), css("dl.fields dd"))}
    if fields.get("schedule") != "dag/report" or "dag.p9" not in browser.find_element(By.CSS_SELECTOR, "pre.why").text:
        fail(f"the job page's fields or why: {fields}")
    shot("job")

    # The schedule page: document, versions and their diff, next fire times, runs on a timeline.
    go("schedule/dag/p1")
    if "dag.p1" not in browser.find_element(By.ID, "schedule-document").text:
        fail("the schedule page shows no document")
    if len(css("tr[data-version]")) != 2 or not css("#version-diff .add") or not css("#version-diff .del"):
        fail("the schedule page shows no two versions with a diff")
    if "yesterday" not in " ".join(x.text for x in css("#version-diff .add")):
        fail("the diff of v1 and v2 does not show the added argument")
    if len(css("#next-fire-times li")) != 5:
        fail(f"next fire times: {browser.find_element(By.ID, 'next-fire-times').text!r}")
    bars = css('svg.timeline[data-timeline="schedule"] g.bar')
    if len(bars) != CYCLES:
        fail(f"the schedule's timeline has {len(bars)} bars, want {CYCLES}")
    tip = bars[0].find_element(By.TAG_NAME, "title").get_attribute("textContent")
    if not all(w in tip for w in ("attempt 1", "worker ", "running ", "total ")):
        fail(f"a bar's hover text lacks attempt, worker or duration: {tip!r}")
    ActionChains(browser).move_to_element(bars[0]).perform()
    for op in ("startSchedule", "suspendSchedule", "backfillSchedule"):
        if not css(f'button[data-op="{op}"]'):
            fail(f"an operator's schedule page has no {op} button")
    shot("schedule", full=True)
    # A schedule's name is a link to its page wherever it appears.
    go("runs?schedule=dag/p4")
    if not css('a.schedule-link[href="#schedule/dag/p4"]'):
        fail("the runs page does not link the schedule's name to its page")
    shot("runs-timeline")
    use_token("viewer")
    go("schedule/dag/p1")
    if css("button[data-op]"):
        fail("a viewer's schedule page shows buttons: " + ", ".join(b.text for b in css("button[data-op]")))
    use_token("operator")

    # Live: a change made elsewhere shows on the open page without a reload.
    go("graph?namespace=dag")
    browser.execute_script("window.__sameDocument = true;")
    status, reply = T.request("POST", "/api/v1/schedules/dag/report/suspend", T.tokens["admin"], {})
    if status != 200:
        fail(f"suspend dag/report: {status} {reply}")
    wait("the graph to show dag/report suspended without a reload",
         lambda: "suspended" in css('g.node[data-node-id="schedule:dag/report"]')[0].text, 20)
    if not browser.execute_script("return window.__sameDocument === true"):
        fail("the page was reloaded")
    browser.set_window_size(1280, 800)


def big_graph():
    """1,000 schedules in 100 chains of 10: the graph page lays them out without freezing."""
    docs = []
    for i in range(1000):
        chain, pos = divmod(i, 10)
        trigger = {"partition": {"dataset": f"{T.run}.big{chain}"}} if pos == 0 else {"program": {"name": f"big.s{i - 1}"}}
        docs.append({"namespace": "big", "name": f"s{i}", "program": {"name": f"big.s{i}"}, "trigger": trigger})
    for k in range(0, len(docs), 250):
        status, reply = T.request("POST", "/api/v1/schedules", T.tokens["admin"], docs[k:k + 250])
        if status != 200:
            fail(f"apply 1,000 schedules: {status} {str(reply)[:300]}")
    browser.execute_script(
        "window.__gap = 0; window.__last = performance.now();"
        "window.__beat = setInterval(() => { const t = performance.now();"
        " window.__gap = Math.max(window.__gap, t - window.__last); window.__last = t; }, 50);")
    started_at = time.time()
    go("graph?namespace=big", 150)
    took = time.time() - started_at
    drawn = len(css('svg.graph g.node[data-node-id^="schedule:big/"]'))
    gap = browser.execute_script("clearInterval(window.__beat); return window.__gap;")
    layout_ms = css("div.graph-box")[0].get_attribute("data-layout-ms")
    print(f"graph of 1,000 schedules: on screen in {took:.1f} s (layout and drawing {layout_ms} ms, in a worker); "
          f"the page's longest pause {gap:.0f} ms")
    if drawn != 1000 or len(css("svg.graph path.edge")) != 1000:
        fail(f"the big graph has {drawn} schedule nodes and {len(css('svg.graph path.edge'))} edges, want 1000 and 1000")
    if gap > 4000:
        fail(f"the page froze for {gap:.0f} ms while the 1,000-schedule graph loaded")
    shot("graph-1000")


try:
    admin = T.tokens["admin"]
    demo = {"namespace": "default", "name": "console-demo", "program": {"name": "console.demo", "args": {}},
            "trigger": {"partition": {"dataset": f"{T.run}.raw"}}}
    waiting = {"namespace": "default", "name": "console-waiting", "program": {"name": "console.waiting"},
               "trigger": {"partition": {"dataset": f"{T.run}.two", "count": 2}}}
    sleeper = {"namespace": "default", "name": "console-sleeper",
               "program": {"name": "console.sleeper", "args": {"command": "sleep 600"}},
               "trigger": {"partition": {"dataset": f"{T.run}.never"}}}
    # Runs after each demo run that succeeds, in its lineage: the lineage graph has an edge.
    after = {"namespace": "default", "name": "console-after", "program": {"name": "console.after", "args": {}},
             "trigger": {"program": {"name": "console.demo"}}}
    for doc in (demo, waiting, sleeper, after):
        status, reply = T.request("PUT", f"/api/v1/schedules/default/{doc['name']}", admin, doc)
        if status != 200:
            fail(f"apply {doc['name']}: {status} {reply}")
    T.trigctl("events", "emit", "partition", f"{T.run}.two", "dt=1")
    apply_dag()

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,800"):
        options.add_argument(a)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    browser.set_page_load_timeout(30)

    # A viewer sees the schedules, and no operator buttons.
    browser.get(f"http://127.0.0.1:{T.port}/")
    wait("the token prompt", lambda: "token" in browser.find_element(By.ID, "message").text)
    use_token("viewer")
    go("schedules")
    row = 'tr[data-schedule="default/console-demo"]'
    wait("the schedule in the list", lambda: css(row))
    if css("button[data-op]"):
        fail("a viewer's console shows operator buttons: " + ", ".join(b.text for b in css("button[data-op]")))

    # An operator: the buttons, and a run that succeeds.
    use_token("operator")
    go("schedules")
    wait("the schedule's buttons", lambda: css(row + " button[data-op]"))
    shot("schedules")
    if not css(row + ' button[data-op="startSchedule"]'):
        fail("an operator's console has no Run now button")
    click(row + ' button[data-op="startSchedule"]')
    wait("the run now reply", lambda: "started default/console-demo" in browser.find_element(By.ID, "message").text)

    def succeeded(n):
        go("runs?schedule=default/console-demo")
        return len(css('tr[data-state="succeeded"]')) >= n

    wait("the run to succeed on the Runs page", lambda: succeeded(1), 45)
    shot("runs")
    # Rerun it from the Runs page: a second run of the schedule succeeds.
    click('tr[data-state="succeeded"] button[data-op="rerunRun"]')
    wait("the rerun reply", lambda: "rerun of" in browser.find_element(By.ID, "message").text)
    wait("the rerun to succeed", lambda: succeeded(2), 45)
    # Run the sleeper now, then cancel its run from the Runs page: it ends killed.
    go("schedules")
    sleeper_row = 'tr[data-schedule="default/console-sleeper"]'
    click(sleeper_row + ' button[data-op="startSchedule"]')
    wait("the sleeper's run now reply", lambda: "started default/console-sleeper" in
         browser.find_element(By.ID, "message").text)

    def cancel_button():
        go("runs?schedule=default/console-sleeper")
        return css('button[data-op="cancelRun"]')

    wait("the sleeper's Cancel button", cancel_button, 30)
    click('button[data-op="cancelRun"]')
    wait("the cancel reply", lambda: "cancelled" in browser.find_element(By.ID, "message").text)
    go("runs?schedule=default/console-sleeper")
    wait("the cancelled run", lambda: css('tr[data-state="killed"]'))
    shot("runs-cancelled")
    # The state filter keeps only what it names.
    go("runs?state=failed")
    if css('tr[data-state="succeeded"]'):
        fail("the state filter shows succeeded runs under failed")
    go("runs?schedule=default/console-demo")
    run_id = css('tr[data-state="succeeded"] a.run-link')[0].text
    click(f'tr[data-run="{run_id}"] a.lineage-link')
    wait("the lineage graph", lambda: css(f'svg.graph g.node[data-node-id="run:{run_id}"]'))

    def drawn_with_downstream():
        go(f"lineage/{run_id}")
        return len(css("svg.graph g.node")) >= 2 and css("svg.graph path.edge")

    wait("the demo run and console-after's run below it, joined by an edge", drawn_with_downstream, 30)
    if not css("p[data-lineage-state]"):
        fail("the lineage page did not read the lineage from GET /api/v1/lineages/{id}")
    shot("lineage")
    go("lineage")
    wait("the lineage list", lambda: css(f'tr[data-lineage="{run_id}"]'))

    go("jobs")
    wait("the waiting job with its why", lambda: any("1 of 2" in p.text or "partition" in p.text
                                                     for p in css("pre.why")))
    shot("jobs")
    # The audit page: the operator's cancel by its token's name; its actor link filters by it.
    go("audit")
    wait("the cancel in the audit", lambda: css('tr[data-action="cancel"]'))
    if "token:operator" not in css('tr[data-action="cancel"]')[0].text:
        fail("the audit's cancel does not name the operator's token: " + css('tr[data-action="cancel"]')[0].text)
    go("audit?actor=token:admin")
    wait("the admin's applies only", lambda: css('tr[data-action="apply"]') and not css('tr[data-action="cancel"]'))
    shot("audit")
    dag_pages()
    big_graph()
    print(f"console e2e: ok in {time.time() - started:.0f} s; screenshots in {ARTEFACTS}")
finally:
    if browser:
        browser.quit()
    T.stop()
