"""Load a page in headless Chromium over the DevTools protocol (`--remote-debugging-pipe`, stdlib only).

Collects console errors, uncaught exceptions, error log entries and every request that is not a
local file, evaluates expressions in the page and saves a screenshot. Chromium comes from the
system packages (`apt-get install -y chromium`, done by .ci/run).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# What works on this kind of machine (as root, no network): see the environment notes.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
    "--window-size=1200,1600",
]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageLoad:
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, error log entries
    requests: list[str] = field(default_factory=list)  # URLs other than file: and data:
    values: dict[str, Any] = field(default_factory=dict)  # expression -> value


class Browser:
    def __init__(self, executable: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        commands_read, self.commands = os.pipe()
        self.replies, replies_write = os.pipe()

        def wire() -> None:  # Chromium reads commands on fd 3 and writes replies on fd 4
            read, write = os.dup(commands_read), os.dup(replies_write)  # neither is 3 or 4 (in use)
            os.dup2(read, 3)  # dup2 makes them inheritable
            os.dup2(write, 4)

        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            preexec_fn=wire,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(commands_read)
        os.close(replies_write)
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {timeout} s")
            self.events.append(self._read())

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            chunk = os.read(self.replies, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):  # it may be gone already
            self.send("Browser.close")
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.commands)
        os.close(self.replies)
        shutil.rmtree(self.profile, ignore_errors=True)


def load(executable: str, page: Path, expressions: list[str], screenshot: Path) -> PageLoad:
    """Open `page`, wait for its load event, evaluate `expressions`, save a full-page screenshot."""
    browser = Browser(executable)
    try:
        (target,) = [t for t in browser.send("Target.getTargets")["targetInfos"] if t["type"] == "page"][:1]
        session = browser.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            browser.send(f"{domain}.enable", session=session)
        browser.events.clear()
        browser.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        browser.wait_for("Page.loadEventFired")
        result = PageLoad()
        for expression in expressions:
            value = browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
            result.values[expression] = value["result"].get("value")
        shot = browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session)
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        for event in browser.events:
            params = event.get("params", {})
            if event.get("method") == "Runtime.exceptionThrown":
                result.errors.append(str(params["exceptionDetails"].get("text")))
            elif event.get("method") == "Runtime.consoleAPICalled" and params.get("type") == "error":
                result.errors.append(json.dumps(params.get("args")))
            elif event.get("method") == "Log.entryAdded" and params["entry"].get("level") == "error":
                result.errors.append(str(params["entry"].get("text")))
            elif event.get("method") == "Network.requestWillBeSent":
                url = str(params["request"]["url"])
                if not url.startswith(("file:", "data:")):
                    result.requests.append(url)
        return result
    finally:
        browser.close()
