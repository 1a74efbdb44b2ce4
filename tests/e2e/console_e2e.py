#!/usr/bin/python3
"""e2e: the web console in a real headless browser (Debian's chromium, chromium-driver and
python3-selenium).

Applies three schedules through the API, opens the console with a viewer's token (no operator
buttons), then an operator's: finds the schedule, clicks Run now and sees the run succeed with
the reference worker on the Runs page, clicks Rerun and sees a second run succeed, runs a
`sleep 600` schedule now and cancels its run (killed); then the run's lineage drawn as a graph
(with the run of a schedule it triggers, joined by an edge), a waiting job with its `why`, and
the Audit page naming the operator's cancel, filtered by actor.
Screenshots of each page are kept in ARTEFACTS (console-*.png).

console_e2e.py SRC BIN ARTEFACTS
"""
import os
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

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


def shot(name):
    browser.save_screenshot(os.path.join(ARTEFACTS, f"console-{name}.png"))


def css(selector):
    return browser.find_elements(By.CSS_SELECTOR, selector)


def go(hash_):
    """Shows page #hash_, drawn anew (the same hash twice is no hashchange: route() is called)."""
    browser.execute_script(
        "document.body.removeAttribute('data-loaded');"
        "if (location.hash === '#' + arguments[0]) route(); else location.hash = arguments[0];", hash_)
    wait(f"page {hash_}", lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") ==
         hash_.split("/")[0].split("?")[0])


def use_token(name):
    box = browser.find_element(By.ID, "token")
    box.clear()
    box.send_keys(T.tokens[name])
    browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
    role = T.ROLES[name][0]
    wait(f"the console to say {role}", lambda: browser.find_element(By.ID, "whoami").text.startswith(role))


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
    css(row + ' button[data-op="startSchedule"]')[0].click()
    wait("the run now reply", lambda: "started default/console-demo" in browser.find_element(By.ID, "message").text)

    def succeeded(n):
        go("runs?schedule=default/console-demo")
        return len(css('tr[data-state="succeeded"]')) >= n

    wait("the run to succeed on the Runs page", lambda: succeeded(1), 45)
    shot("runs")
    # Rerun it from the Runs page: a second run of the schedule succeeds.
    css('tr[data-state="succeeded"] button[data-op="rerunRun"]')[0].click()
    wait("the rerun reply", lambda: "rerun of" in browser.find_element(By.ID, "message").text)
    wait("the rerun to succeed", lambda: succeeded(2), 45)
    # Run the sleeper now, then cancel its run from the Runs page: it ends killed.
    go("schedules")
    sleeper_row = 'tr[data-schedule="default/console-sleeper"]'
    wait("the sleeper's Run now", lambda: css(sleeper_row + ' button[data-op="startSchedule"]'))[0].click()
    wait("the sleeper's run now reply", lambda: "started default/console-sleeper" in
         browser.find_element(By.ID, "message").text)

    def cancel_button():
        go("runs?schedule=default/console-sleeper")
        return css('button[data-op="cancelRun"]')

    wait("the sleeper's Cancel button", cancel_button, 30)[0].click()
    wait("the cancel reply", lambda: "cancelled" in browser.find_element(By.ID, "message").text)
    go("runs?schedule=default/console-sleeper")
    wait("the cancelled run", lambda: css('tr[data-state="killed"]'))
    shot("runs-cancelled")
    # The state filter keeps only what it names.
    go("runs?state=failed")
    if css('tr[data-state="succeeded"]'):
        fail("the state filter shows succeeded runs under failed")
    go("runs?schedule=default/console-demo")
    run_link = css('tr[data-state="succeeded"] a')[0]
    run_id = run_link.text
    run_link.click()
    wait("the lineage graph", lambda: css(f'svg.graph rect[data-run="{run_id}"]'))

    def drawn_with_downstream():
        go(f"lineage/{run_id}")
        return len(css("svg.graph rect")) >= 2 and css("svg.graph line")

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
    print(f"console e2e: ok in {time.time() - started:.0f} s; screenshots in {ARTEFACTS}")
finally:
    if browser:
        browser.quit()
    T.stop()
