# How each host of a fleet run ended, as JSON for `pirex fleet run` (pirex/fleet.py reads it): the
# task a host failed at or was unreachable in, and why (pirex's own error line where it printed one),
# the bundle's path on the host, and whether the fetched copy verified. Written after every host's
# failure and at the end, to the file PIREX_FLEET_STATUS names; nothing without it. Enabled by
# ANSIBLE_CALLBACKS_ENABLED=pirex_fleet (pirex fleet sets it); the playbook's own output is unchanged.

from __future__ import annotations

import json
import os
import tempfile

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: pirex_fleet
    type: aggregate
    short_description: each host's ending of fleet/run.yml, as JSON for pirex fleet
    description: Writes the file named by PIREX_FLEET_STATUS.
"""

RUN_TASK = "run the experiment"  # fleet/run.yml's task names
VERIFY_TASK = "verify the bundle"
BUNDLE_LINE = "pirex-fleet-bundle:"  # pirex fleet on-host's last line
MAX_MESSAGE = 400


def message(res: dict) -> str:
    """The telling line of a failed task: pirex's error, else the command's last stderr line, else Ansible's."""
    for key in ("stderr", "stdout", "msg"):
        lines = [ln.strip() for ln in str(res.get(key) or "").splitlines() if ln.strip()]
        errors = [ln.split("pirex: error:", 1)[1].strip() for ln in lines if "pirex: error:" in ln]
        if errors:
            return errors[-1][:MAX_MESSAGE]
    msg = " ".join(str(res.get("msg") or "").split()).removeprefix("Task failed: ")
    last = [ln.strip() for ln in str(res.get("stderr") or res.get("stdout") or "").splitlines() if ln.strip()][-3:]
    if last and msg in ("", "non-zero return code"):
        return " / ".join(last)[:MAX_MESSAGE]
    return (msg or "no message")[:MAX_MESSAGE]


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "pirex_fleet"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.path = os.environ.get("PIREX_FLEET_STATUS")
        self.hosts: dict[str, dict] = {}

    def _host(self, result) -> dict:
        return self.hosts.setdefault(result.host.get_name(), {"failed": None, "bundle": None, "verified": False})

    def v2_runner_on_ok(self, result) -> None:
        h, name, res = self._host(result), result.task.get_name(), result.result
        lines = [ln for ln in str(res.get("stdout") or "").splitlines() if ln.startswith(BUNDLE_LINE)]
        if name.startswith(RUN_TASK) and lines:
            h["bundle"] = lines[-1][len(BUNDLE_LINE) :].strip()
        elif name.startswith(VERIFY_TASK):
            h["verified"] = True

    def v2_runner_on_failed(self, result, ignore_errors: bool = False) -> None:
        if not ignore_errors:
            self._failed(result, unreachable=False)

    def v2_runner_on_unreachable(self, result) -> None:
        self._failed(result, unreachable=True)

    def _failed(self, result, unreachable: bool) -> None:
        h = self._host(result)
        if not h["failed"]:  # the first failure is the reason; what follows it is a consequence
            h["failed"] = {"task": result.task.get_name(), "unreachable": unreachable,
                           "message": message(result.result)}  # fmt: skip
        self._write()

    def v2_playbook_on_stats(self, stats) -> None:
        self._write()

    def _write(self) -> None:
        if not self.path:
            return
        directory = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".status-")
        with os.fdopen(fd, "w") as f:
            json.dump({"hosts": self.hosts}, f, indent=2)
        os.replace(tmp, self.path)
