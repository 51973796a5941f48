"""The runbook engine: YAML decision trees over observations -> a Diagnosis.

    rs = load_runbooks(paths, known_facts, root="trunk")   # RunbookError on any problem
    diagnosis = walk(rs, observations, answers={"validated_scale": "two_nodes"})
    diagnosis.to_dict()                                     # JSON-safe

Modules: causes (the catalogue), model, loader (schema; YAML with locations is
allreduce_doctor.yamlsrc), cond_* + conditions (the safe condition language, see CONDITIONS.md),
graph (networkx checks, imported only to validate), render (DOT / Mermaid), walk, diagnosis. Did-you-mean hints come from
allreduce_doctor.suggest.
"""

from .causes import CAUSES, CauseInfo
from .conditions import UNKNOWN, Condition, Evaluation, compile_condition, evaluate
from .diagnosis import Diagnosis, EvidenceRow, Finding, Step
from .loader import load_runbook_text, load_runbooks, parse_runbook
from .model import CauseLeaf, Check, HealthyLeaf, Location, Outcome, Question, Runbook, RunbookSet
from .render import to_dot, to_mermaid
from .walk import walk


def __getattr__(name: str):
    """build_set on first use: it imports networkx, which only validation needs."""
    if name == "build_set":
        from .graph import build_set

        return build_set
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CAUSES", "CauseInfo", "CauseLeaf", "Check", "Condition", "Diagnosis", "Evaluation", "EvidenceRow",
    "Finding", "HealthyLeaf", "Location", "Outcome", "Question", "Runbook", "RunbookSet", "Step", "UNKNOWN",
    "build_set", "compile_condition", "evaluate", "load_runbook_text", "load_runbooks", "parse_runbook",
    "to_dot", "to_mermaid", "walk",
]
