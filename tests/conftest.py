"""Suite-wide settings: the `slow` marker's meaning, and a private knowledge cache.

`slow` marks the tests that drive real sshd or tmux or build large fixtures; the default run
(`python -m pytest`) leaves them out and `.ci/run` runs them too (pyproject.toml's addopts).
Every test process gets its own XDG_CACHE_HOME, so the suite never reads or writes the user's
~/.cache/allreduce-doctor, and child processes the tests start inherit it.
"""

import os
import tempfile

os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="allreduce-doctor-test-cache-")
