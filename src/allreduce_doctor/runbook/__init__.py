"""The runbook engine: YAML decision trees over observations -> a Diagnosis.

    rs = load_runbooks(paths, known_facts, root="trunk")   # RunbookError on any problem
    diagnosis = walk(rs, observations, answers={"validated_scale": "two_nodes"})
    diagnosis.to_dict()                                     # JSON-safe

Modules: causes (the catalogue), model, loader (schema; YAML with locations is
allreduce_doctor.yamlsrc), cond_* + conditions (the safe condition language, see CONDITIONS.md),
graph (networkx checks), render (DOT / Mermaid), walk, diagnosis. Did-you-mean hints come from
allreduce_doctor.suggest.
"""

from .causes import CAUSES, CauseInfo
from .conditions import UNKNOWN, Condition, Evaluation, compile_condition, evaluate
from .diagnosis import Diagnosis, EvidenceRow, Finding, Step
from .graph import build_set, to_dot, to_mermaid
from .loader import load_runbook_text, load_runbooks, parse_runbook
from .model import CauseLeaf, Check, HealthyLeaf, Location, Outcome, Question, Runbook, RunbookSet
from .walk import walk

__all__ = [
    "CAUSES", "CauseInfo", "CauseLeaf", "Check", "Condition", "Diagnosis", "Evaluation", "EvidenceRow",
    "Finding", "HealthyLeaf", "Location", "Outcome", "Question", "Runbook", "RunbookSet", "Step", "UNKNOWN",
    "build_set", "compile_condition", "evaluate", "load_runbook_text", "load_runbooks", "parse_runbook",
    "to_dot", "to_mermaid", "walk",
]
