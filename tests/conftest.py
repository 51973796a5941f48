"""Suite-wide settings: the fast default run, the `slow` marker, and a private knowledge cache.

The default run (`python -m pytest`) spreads the tests over every core with pytest-xdist when it
is installed (it is in the `test` extra) and leaves out the `slow` tests: the ones that drive a
real sshd or tmux, build and install a wheel, inflate large inputs, or fuzz with thousands of
examples. `.ci/run` runs the default and then `-m slow`: every test. Which tests are slow is listed here,
once, with the reason, rather than in each file.

Every test process gets its own XDG_CACHE_HOME, so the suite never reads or writes the user's
~/.cache/allreduce-doctor, and the child processes the tests start inherit it.
"""

from __future__ import annotations

import os
import tempfile

import pytest

os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="allreduce-doctor-test-cache-")

SLOW_FILES = {  # path under tests/ -> why it is slow
    "tui/test_tui_tmux.py": "drives the real command in tmux",
    "fleet/test_fleet_ssh.py": "fans out over a real sshd on 127.0.0.1",
    "integration/test_packaging.py": "builds and installs a wheel",
    "snapshot/test_bundle_memory.py": "inflates a large archive to measure its peak",
    "evidence/test_streaming.py": "writes and scans a large synthetic NCCL log",
    "runbook/test_rb_fuzz.py": "hypothesis: thousands of random conditions and walks",
}
SLOW_FIXTURES = {"sshd": "starts a real sshd"}


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Use every core when pytest-xdist is there and the run did not say otherwise (-n, -p no:xdist)."""
    if (config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", 0) is None
            and not os.environ.get("PYTEST_XDIST_WORKER") and not config.getoption("collectonly")
            and not config.getoption("usepdb", False)):
        config.option.numprocesses = "auto"


def pytest_collection_modifyitems(config, items):
    tests_dir = os.path.dirname(__file__)
    for item in items:
        where = os.path.relpath(str(item.path), tests_dir).replace(os.sep, "/")
        if where in SLOW_FILES or SLOW_FIXTURES.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
