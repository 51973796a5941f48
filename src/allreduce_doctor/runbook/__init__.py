"""The runbook engine: YAML decision trees over observations -> a Diagnosis.

    rs = load_runbooks(paths, known_facts, root="trunk")   # RunbookError on any problem
    diagnosis = walk(rs, observations, answers={"validated_scale": "two_nodes"})
    diagnosis.to_dict()                                     # JSON-safe

Modules: causes (the catalogue), model, loader (schema; YAML with locations is
allreduce_doctor.yamlsrc), cond_* + conditions (the safe condition language, see CONDITIONS.md),
graph (networkx checks, imported only to validate), render (DOT / Mermaid), walk, diagnosis. Did-you-mean hints come from
allreduce_doctor.suggest.
"""

from .causes import CauseInfo
from .conditions import UNKNOWN, Condition, Evaluation, compile_condition, evaluate
from .diagnosis import Diagnosis, EvidenceRow, Finding, Step
from .model import CauseLeaf, Check, HealthyLeaf, Location, Outcome, Question, Runbook, RunbookSet
from .walk import walk

# Loading and drawing resolve on first use: a walk from the knowledge cache needs neither the
# loader (YAML) nor the graph checks (networkx).
# CAUSES too: reading it parses the catalogue unless the Doctor has taken it from the cache first.
_LAZY = {"CAUSES": "causes", "build_set": "graph", "load_runbook_text": "loader", "load_runbooks": "loader", "parse_runbook": "loader",
         "to_dot": "render", "to_mermaid": "render"}

__all__ = [
    "CAUSES", "CauseInfo", "CauseLeaf", "Check", "Condition", "Evaluation", "EvidenceRow", "Diagnosis",
    "Finding", "HealthyLeaf", "Location", "Outcome", "Question", "Runbook", "RunbookSet", "Step", "UNKNOWN",
    "build_set", "compile_condition", "evaluate", "load_runbook_text", "load_runbooks", "parse_runbook",
    "to_dot", "to_mermaid", "walk",
]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
