"""The launcher's status page in a real browser.

Starts a short local job (fabps-launch --status-port-file, 2 passes of
Fashion-MNIST on real pservers, masters and trainers), loads its page in
headless Chromium through Selenium (Debian chromium, chromium-driver,
python3-selenium; /usr/bin/python3) and checks the DOM: both pservers are
listed as running while the job runs, a pass's test accuracy appears, the
plots are drawn, and a process's log link opens its log. A screenshot goes
to <build>/tests/cmd/status-page.png.

  /usr/bin/python3 status_page_browser_test.py --build-dir BUILD
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

BUILD_DIR = None


def wait_for(what, predicate, timeout_s, proc=None):
    """Polls predicate() until it returns a true value; fails after timeout_s
    or as soon as `proc` (the launcher) has exited."""
    end = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"launcher exited ({proc.returncode}) "
                                 f"while waiting for {what}")
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout_s} s waiting "
                                 f"for {what}")
        time.sleep(0.2)


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


class StatusPageBrowserTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="fabps-status-page-")
        self.dir = self.tmp.name
        self.port_file = os.path.join(self.dir, "status.port")
        self.out = open(os.path.join(self.dir, "launch.out"), "w")
        self.launcher = subprocess.Popen(
            [os.path.join(BUILD_DIR, "cmd/launch/fabps-launch"),
             # Running until the browser is up (1.5 s a pass).
             "--passes", "8", "--pservers", "2", "--trainers", "2",
             "--provider", "tcp;ofi_rxm",
             "--run-dir", os.path.join(self.dir, "run"),
             "--data-dir", os.path.join(self.dir, "data"),
             "--status-port-file", self.port_file,
             "--status-linger", "120"],
            stdout=self.out, stderr=subprocess.STDOUT)
        self.driver = None

    def tearDown(self):
        if self.driver is not None:
            self.driver.quit()  # ends chromedriver and its Chromium
        if self.launcher.poll() is None:
            self.launcher.send_signal(signal.SIGTERM)
            try:
                self.launcher.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.launcher.kill()
                self.launcher.wait(timeout=10)
        self.out.close()
        if sys.exc_info()[0] is not None or self._outcome_failed():
            with open(os.path.join(self.dir, "launch.out")) as f:
                sys.stderr.write("==== launcher output ====\n" + f.read())
        self.tmp.cleanup()

    def _outcome_failed(self):
        result = getattr(self._outcome, "result", None)
        errors = getattr(result, "errors", []) + getattr(result, "failures",
                                                         [])
        return any(test is self for test, _ in errors)

    def start_browser(self):
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for arg in ["--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-quic", "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1280,1100",
                    "--user-data-dir=" + os.path.join(self.dir, "chromium")]:
            options.add_argument(arg)
        service = Service(executable_path="/usr/bin/chromedriver",
                          log_path=os.path.join(self.dir, "chromedriver.log"))
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.set_page_load_timeout(30)
        self.driver.set_script_timeout(30)

    # The page rebuilds its tables every second, so an element found now
    # may be gone a moment later: each reading of the DOM is one script,
    # run between two rebuilds.
    def dom(self):
        return self.driver.execute_script("""
          const q = s => [...document.querySelectorAll(s)];
          const rows = role => q(`#processes tbody tr[data-role='${role}']`);
          return {
            health: document.getElementById('health').textContent,
            pservers: rows('pserver').map(r => r.querySelector('.st').textContent),
            trainers: rows('trainer').length,
            masters: rows('master').length,
            accuracies: q('#passes tbody tr td.accuracy').map(e => e.textContent),
            accuracy_card: document.getElementById('accuracy').textContent,
            acc_dots: q('#plot-acc circle').length,
            rate_lines: q('#plot-rate polyline').length,
            pserver0_log: q("#processes tbody tr[data-name='pserver-0'] a.log")
                          .map(a => a.href)[0] || null,
          };""")

    def test_page_of_a_running_job(self):
        port = wait_for(
            "the status port file",
            lambda: open(self.port_file).read().strip()
            if os.path.exists(self.port_file) else None,
            60, self.launcher)
        base = f"http://127.0.0.1:{int(port)}/"
        t0 = time.monotonic()
        self.start_browser()
        self.driver.get(base)
        print(f"page loaded after {time.monotonic() - t0:.1f} s")

        # While the job runs: both pservers listed and running.
        dom = WebDriverWait(self.driver, 90, 0.2).until(
            lambda d: (lambda v: v if v["pservers"] == ["running", "running"]
                       else None)(self.dom()))
        self.assertIn(dom["health"], ("starting", "running", "degraded"))
        self.assertEqual(dom["trainers"], 2)
        self.assertEqual(dom["masters"], 2)  # the leader and the standby

        # A pass's test accuracy shows in the table, the card and the plot.
        dom = WebDriverWait(self.driver, 150, 0.2).until(
            lambda d: (lambda v: v if v["accuracies"] and
                       v["accuracies"][0] not in ("", "-") else None)(
                           self.dom()))
        acc = float(dom["accuracies"][0])
        print(f"accuracy {acc} shown after {time.monotonic() - t0:.1f} s")
        self.assertGreater(acc, 0.5, "10 classes: chance is 0.1")
        self.assertLessEqual(acc, 1.0)
        self.assertNotEqual(dom["accuracy_card"], "-")
        self.assertGreaterEqual(dom["acc_dots"], 1)
        self.assertGreaterEqual(dom["rate_lines"], 1)
        # What the page shows is what /status.json says.
        code, text = http_get(base + "status.json")
        self.assertEqual(code, 200)
        status = json.loads(text)
        self.assertAlmostEqual(status["pass_results"][0]["accuracy"], acc,
                               places=3)

        # Keep a screenshot of the page as it is now.
        shot = os.path.join(BUILD_DIR, "tests", "cmd", "status-page.png")
        os.makedirs(os.path.dirname(shot), exist_ok=True)
        self.assertTrue(self.driver.save_screenshot(shot))
        print("screenshot:", shot)

        # The log link of pserver-0 opens its log.
        href = self.dom()["pserver0_log"]
        self.assertEqual(href, base + "logs/pserver-0.log")
        self.driver.get(href)
        body = self.driver.find_element(By.TAG_NAME, "body").text
        self.assertIn("claimed index 0", body)
        self.assertIn("serving on", body)

        # Only logs of the run directory are served.
        for bad in ["logs/..%2Fstatus.port", "logs/store",
                    "logs/%2Fetc%2Fpasswd.log", "logs/../launch.out"]:
            code, _ = http_get(base + bad)
            self.assertEqual(code, 404, bad)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    args, rest = parser.parse_known_args()
    BUILD_DIR = os.path.abspath(args.build_dir)
    unittest.main(argv=[sys.argv[0]] + rest)
