"""Diagnoses with hostile values: markup of every target format inside values, and planted secrets."""

from __future__ import annotations

import copy

from tests.export.goldens import stored_diagnosis

HOSTILE = "a | b {code}rm -rf /{code} [x|http://evil.example] *bold* !img.png! <script>x</script> @here #12 `t` _e_ \\| {{m}}"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SLACK_TOKEN = "xoxb-1234567890-abcdefghij"


def hostile_diagnosis() -> dict:
    d = copy.deepcopy(stored_diagnosis("roce-pfc-off"))
    d["root_cause"]["summary"] = HOSTILE
    d["context"]["host"] = "node|{x}*"
    d["evidence"][0]["observed"] = HOSTILE
    d["evidence"][0]["expected"] = HOSTILE
    d["remediation"][0]["step"] = HOSTILE
    d["verification"][0] = "# not a heading " + HOSTILE
    # a long value, shown raw: it must survive the folding (code fences, {noformat}, </details>)
    d["evidence"][1]["observed"] = [{"name": f"n{i}", "text": "```\n</details>\n{noformat}\n{code}" + HOSTILE} for i in range(3)]
    return d


def planted_secrets_diagnosis() -> dict:
    """A token in an NCCL variable of a process environment, a secret-named variable, URL credentials."""
    d = copy.deepcopy(stored_diagnosis("roce-pfc-off"))
    env = {"NCCL_DEBUG_FILE": f"/tmp/nccl.{GITHUB_TOKEN}.log", "HF_TOKEN": "plainvalue123",
           "NCCL_NET_PLUGIN_URL": "https://bob:hunter2@plugins.example.com/x.so", "NCCL_IB_HCA": "mlx5_0,mlx5_1"}
    d["evidence"].append({"node": "roce.pfc", "fact": "nccl.processes", "status": "ok", "reason": "",
                          "source": "psutil", "expected": "-", "observed": [{"pid": 4242, "name": "python", "env": env}]})
    d["path"][-1]["value"] = {"nccl.env.vars.NCCL_DEBUG_FILE": f"/tmp/nccl.{GITHUB_TOKEN}.log"}
    d["findings"][0]["value"] = [{"name": "p", "note": f"slack {SLACK_TOKEN}"}]
    d["remediation"].append({"owner": "platform", "step": f"rotate token={GITHUB_TOKEN[:10]}xyz"})
    return d
