"""The decision tree: the runbooks entered, collapsed to the path taken, each step expandable
to its other outcomes (loaded lazily: the runbooks are a DAG, so a full expansion would repeat
shared subtrees). Badges are coloured through component classes, so themes restyle them."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from allreduce_doctor.status import STEP_NA
from allreduce_doctor.tui.tree_model import BADGES, DiagnosisModel, node_title

BADGE_WIDTH = 6  # "[FAIL]"
# A status's component class: a CSS class name holds no dot (n.a.).
STATUS_CLASS = {STEP_NA: "na"}


@dataclass
class Item:
    key: str | None  # runbook.node, or None for a group heading
    status: str = ""
    loaded: bool = False


class DecisionTree(Tree[Item]):
    COMPONENT_CLASSES = Tree.COMPONENT_CLASSES | {
        "decision--pass", "decision--fail", "decision--unknown", "decision--na", "decision--not_reached",
        "decision--group"}
    DEFAULT_CSS = """
    DecisionTree > .decision--pass { color: $text-success; }
    DecisionTree > .decision--fail { color: $text-error; text-style: bold; }
    DecisionTree > .decision--unknown { color: $text-warning; text-style: bold; }
    DecisionTree > .decision--na { color: $text-muted; }
    DecisionTree > .decision--not_reached { color: $text-muted; }
    DecisionTree > .decision--group { text-style: bold; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("decision path", **kwargs)
        self.show_root = False
        self.guide_depth = 2
        self.model: DiagnosisModel | None = None

    def show(self, model: DiagnosisModel, focus_key: str | None = None) -> None:
        """(Re)build from a model: groups expanded, steps collapsed; cursor on focus_key."""
        self.model = model
        self.clear()
        target = None
        for rb_id, title, keys in model.groups():
            group = self.root.add(Text(f"{rb_id}: {title}"), Item(None), expand=True)
            for key in keys:
                node = self._add(group, key, "")
                if key == (focus_key or model.focus_key()):
                    target = node
        if secondary := model.secondary():
            group = self.root.add(Text("secondary findings"), Item(None), expand=True)
            for key in secondary:
                self._add(group, key, "")
        self.root.expand()
        if target is not None:
            self.call_after_refresh(self._move_to, target)

    def _move_to(self, node: TreeNode[Item]) -> None:
        self.move_cursor(node)
        self.scroll_to_node(node, animate=False)

    def _add(self, parent: TreeNode[Item], key: str, prefix: str) -> TreeNode[Item]:
        assert self.model is not None
        status = self.model.status(key)
        title = node_title(self.model.runbooks.node(key))
        label = Text(f"[{BADGES[status]}] {prefix}{title}")
        can_expand = bool(self.model.branches(key))
        return parent.add(label, Item(key, status), allow_expand=can_expand)

    def find(self, key: str) -> TreeNode[Item] | None:
        """The first node showing `key` (a step on the path before an outcome row)."""
        stack = list(self.root.children)
        while stack:
            node = stack.pop(0)
            if node.data is not None and node.data.key == key:
                return node
            stack[0:0] = list(node.children)
        return None

    def collapse_to_path(self) -> None:
        for group in self.root.children:
            group.expand()
            for child in group.children:
                child.collapse()

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Item]) -> None:
        item = event.node.data
        if item is None or item.key is None or item.loaded or self.model is None:
            return
        item.loaded = True
        for branch in self.model.branches(item.key):
            taken = " (taken)" if branch.taken else ""
            self._add(event.node, branch.target, f"{branch.label}{taken} -> ")

    def render_label(self, node: TreeNode[Item], base_style: Style, style: Style) -> Text:
        label = node.label.copy() if isinstance(node.label, Text) else Text(str(node.label))
        item = node.data
        if item is not None and item.status:
            label.stylize(self.get_component_rich_style(f"decision--{STATUS_CLASS.get(item.status, item.status)}",
                                                         partial=True), 0, BADGE_WIDTH)
        elif item is not None and item.key is None:
            label.stylize(self.get_component_rich_style("decision--group", partial=True))
        label.stylize(style)
        if node.allow_expand:
            icon = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
            return Text.assemble((icon, base_style + Style(bold=True)), label)
        return Text.assemble(("  ", base_style), label)
