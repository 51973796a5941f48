"""The diagnosis screen: the decision tree on the left; on the right the selected node (why,
evidence, outcome) above the root-cause panel. Questions on the path are answered in place: the
answer buttons sit under the question, and the walk continues from the answer."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, Static, Tree

from allreduce_doctor.tui.doctor_app import doctor_app
from allreduce_doctor.tui.evidence_run import Sources, ranks_candidates, with_symptom
from allreduce_doctor.tui.state import where
from allreduce_doctor.tui.text import esc
from allreduce_doctor.tui.tree_model import DiagnosisModel
from allreduce_doctor.tui.widgets.answers import AnswerBar
from allreduce_doctor.tui.widgets.decision_tree import DecisionTree, Item
from allreduce_doctor.tui.widgets.detail import cause_markup, evidence_keys, node_markup, verdict_markup


class DiagnosisScreen(Screen):
    BINDINGS = [
        Binding("a", "answer", "Answer", tooltip="answer the selected question, or go to the first open one"),
        Binding("r", "raw", "Raw value", tooltip="the raw values behind the selected step, with their sources"),
        Binding("c", "collapse", "Collapse", show=False, tooltip="collapse the tree back to the path taken"),
        Binding("e", "app.export", "Export", tooltip="export the diagnosis: choose a format, preview, save"),
        Binding("w", "app.watch", "Watch", tooltip="watch the counters live (a bundle: replay its samples)"),
        Binding("p", "probes", "Probes", show=False, tooltip="back to the list of probes and their states"),
        Binding("v", "add_paste", "Add paste", tooltip="add pasted text or a file to the evidence and diagnose again"),
        Binding("s", "symptom", "Symptom", tooltip="what the reporter saw (hang, slow, crash, error): re-ranks a paste's candidates"),
    ]

    def __init__(self, session, data: dict) -> None:
        super().__init__()
        self.session = session
        self.data = data
        self.model = DiagnosisModel(session.doctor.runbooks, data, session.options.answers)
        self.sources = Sources.of(session)  # the evidence read so far, for `v`
        self.selected: str | None = None
        self.shown: str | None = None  # the step the right panel draws (its answer buttons included)

    def compose(self) -> ComposeResult:
        yield Static(verdict_markup(self.data, where(self.session, full=False)), id="verdict")
        with Horizontal(id="main"):
            yield DecisionTree(id="tree")
            with Vertical(id="right"):
                with VerticalScroll(id="detail-box"):
                    with Vertical(id="answer-box"):
                        yield Static("", id="ask")
                        yield AnswerBar(id="answers")
                    yield Static("", id="detail")
                with VerticalScroll(id="cause-box"):
                    yield Static(self._cause(), id="cause")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#detail-box").border_title = "Selected step"
        self.query_one("#cause-box").border_title = "Root cause"
        self.query_one("#tree").border_title = "Decision tree"
        tree = self.query_one(DecisionTree)
        tree.show(self.model)
        tree.focus()
        self.show_node(self.model.focus_key())

    # -- selection ---------------------------------------------------------------------------
    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[Item]) -> None:
        # The cursor landing on the step already drawn (after `a` moved it there) must not
        # rebuild its answer buttons: that would drop the focus `a` just gave them.
        if event.node.data is not None and event.node.data.key and event.node.data.key != self.shown:
            self.show_node(event.node.data.key)

    def show_node(self, key: str | None) -> None:
        if key is None:
            return
        self.selected = key
        view = self.model.view(key)
        self.query_one("#detail", Static).update(node_markup(view))
        answers = self.query_one("#answers", AnswerBar)
        answers.remove_children()
        asking = view.kind == "question" and key in self.model.steps
        if asking:  # answered in place: the choices right under the question
            self.query_one("#ask", Static).update(f"[b]{esc(view.ask)}[/]")
            answers.mount_all([Button(c, name=c, classes="answer", variant="primary" if c == view.answered else "default")
                               for c in view.choices] + [Button("skip", classes="answer skip")])
        self.query_one("#answer-box").display = asking
        self.shown = key
        self.query_one("#detail-box", VerticalScroll).scroll_home(animate=False)

    # -- actions -----------------------------------------------------------------------------
    def action_answer(self) -> None:
        """Focus the answers of the selected question, else go to the first unanswered one."""
        tree = self.query_one(DecisionTree)
        key = self.selected
        if key is None or self.model.runbooks.node(key).kind != "question" or key not in self.model.steps:
            key = self.model.first_unanswered() or next(
                (k for k in self.model.path if self.model.steps[k]["kind"] == "question"), None)
        if key is None:
            self.notify("No question on the path taken.")
            return
        node = tree.find(key)
        if node is not None:
            tree.move_cursor(node)
        self.show_node(key)
        self.call_after_refresh(self._focus_first_answer)

    def _focus_first_answer(self) -> None:
        buttons = self.query("#answers Button")
        if buttons:
            buttons.first().focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if not event.button.has_class("answer") or self.selected is None:
            return
        view = self.model.view(self.selected)
        choice = None if event.button.has_class("skip") else event.button.name
        self.answer(view.answer_name, choice, self.selected)

    def answer(self, name: str, choice: str | None, key: str) -> None:
        """Record an answer (None skips), walk again, keep the cursor on the question."""
        answers = dict(self.session.options.answers)
        if choice is None:
            answers.pop(name, None)
        else:
            answers[name] = choice
        self.redraw(self.session.reanswer(answers).to_dict(), key)
        outcome = (self.model.steps.get(key) or {}).get("means", "")
        self.notify(f"{name} = {choice or 'skipped'}: {outcome}", title="The walk continued")

    def redraw(self, data: dict, key: str | None = None) -> None:
        """Show a new Diagnosis of this screen's session: verdict, tree, cause (cursor on key)."""
        self.data = doctor_app(self).data = data
        self.model = DiagnosisModel(self.session.doctor.runbooks, data, self.session.options.answers)
        self.query_one("#verdict", Static).update(verdict_markup(data, where(self.session, full=False)))
        self.query_one("#cause", Static).update(self._cause())
        key = key if key in self.model.steps else self.model.focus_key()
        tree = self.query_one(DecisionTree)
        tree.show(self.model, focus_key=key)
        tree.focus()
        self.show_node(key)

    def _cause(self) -> str:
        """The root-cause panel; with pasted evidence, a first line naming the symptom and the keys."""
        ranked = ranks_candidates(self.session)
        if not ranked and not self.session.options.evidence:
            return cause_markup(self.data)
        return f"{evidence_keys(self.session.options.symptom, ranked)}\n{cause_markup(self.data)}"

    # -- evidence: add a paste, say the symptom ----------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """The symptom ranks only a paste's candidates (pasted text alone): no key for it elsewhere."""
        return ranks_candidates(self.session) if action == "symptom" else True

    def action_add_paste(self) -> None:
        from allreduce_doctor.tui.dialogs.paste_dialog import PasteDialog

        self.app.push_screen(PasteDialog(self.session, self.sources), self._pasted)

    def _pasted(self, result) -> None:
        if not result:
            return
        self.sources, session, data = result
        if doctor_app(self).session is self.session:
            doctor_app(self).session = session  # watch and quit follow the new diagnosis
        self.session = session
        self.redraw(data, self.selected)
        self.notify(f"{len(self.sources.paths) + len(self.sources.texts)} evidence sources read",
                    title="Diagnosed again")

    def action_symptom(self) -> None:
        from allreduce_doctor.tui.dialogs.symptom_dialog import SymptomDialog

        self.app.push_screen(SymptomDialog(self.session.options.symptom), self._symptom_said)

    def _symptom_said(self, symptom: str | None) -> None:
        if symptom is None:
            return
        self.redraw(with_symptom(self.session, symptom or None), self.selected)
        first = (self.data.get("root_cause") or {}).get("id") or "no candidate"
        self.notify(f"symptom {symptom or 'not said'}: most likely {first}", title="Candidates re-ranked")

    def action_raw(self) -> None:
        from allreduce_doctor.tui.dialogs.raw_dialog import RawDialog
        from allreduce_doctor.tui.state import raw_facts

        if self.selected is None:
            return
        facts = raw_facts(self.session, self.model.fact_refs(self.selected))
        self.app.push_screen(RawDialog(self.selected, facts, self.session.catalogue))

    def action_collapse(self) -> None:
        self.query_one(DecisionTree).collapse_to_path()

    def action_probes(self) -> None:
        self.app.pop_screen()
