"""Settings of the deployment agent (:class:`PlannerConfig`), apart from the planner so that reading
a config does not import the executor and the simulator."""

from __future__ import annotations

from dataclasses import dataclass

PLANNER_MODES = ("ical", "zero_shot", "rerank", "flat", "copy")
SILENT_NEXT_COPY = ("", "always", "end_state", "review")


@dataclass
class PlannerConfig:
    """Settings of the deployment agent (a config section, e.g. ``planner.mode=rerank``).

    Attributes:
        mode: ``ical``, ``zero_shot``, ``rerank``, ``flat`` or ``copy`` (see :mod:`icalkit.agents.planner`).
        k: examples per prompt (per retrieval set in ``rerank``).
        max_replans: re-prompts after a failed attempt (ICAL: 3).
        rerank_sets: disjoint retrieval sets compared in ``rerank`` mode.
        use_dialogue: show the TEACh dialogue instead of the goal sentence.
        use_frame: add the frame to the retrieval query when the memory embeds images.
        oracle_goal_feedback: also re-plan, with the unmet goal conditions, when a program ends
            without error but the task is not done (uses simulator ground truth).
        max_state_objects: objects shown in the abstracted state.
        precondition_checks: the executor repairs failed pre-conditions as HELPER's does (no-op
            for a state that already holds, put down before picking up, open a closed container
            before taking from or placing into it, fetch a knife before slicing — any kind of
            knife —, slice before naming a piece, reach the pieces of what a re-plan names after
            slicing it); see :class:`~icalkit.agents.api.runtime.ApiConfig`.
        ground_ids: drop the object ids that the prompt does not show from the model's programs
            (:func:`~icalkit.agents.grounding.ground_program`: the class is resolved instead), the
            rule every fine-tuning target follows; in ``copy`` mode, from the copied program (the
            ids of the example's own scene become classes: the grounded copy baseline, what the
            tuned planner must beat); and bind the object variables a program reads but never
            defines (``plate``) to their class (:func:`~icalkit.agents.grounding.bind_object_names`);
            not ``flat``.
        copy_first: the first attempt runs the top retrieved example's program as ``copy`` mode
            does (grounded by ``ground_ids``) and the model writes only the re-plans, from the
            executor's feedback on it (retrieve, run, revise: the revision step the fine-tuning
            pairs teach); ``ical`` mode.
        review_done: when an attempt ends without an error (the agent believes the task is done;
            whether it is, the agent is not told), re-prompt once with the state it left and
            :data:`~icalkit.agents.feedback.REVIEW_TEXT` as the feedback: the model writes what is
            left, or an empty program (done). It uses a re-plan, and a program written then can
            also undo a finished task. Needs a model writing programs; the ``review`` fine-tuning
            pairs teach it. In ``copy`` mode the review comes after the copy that ends without an
            error (no further copy follows) and is one of ``model_replans``; without them it is
            never asked.
        review_keeps_placed: the review's answer (not a later re-plan) is not run when it would move an
            object the episode already placed (named by its instance id); the episode ends as if the
            review had answered "done" (:mod:`icalkit.agents.review_guard`). Needs ``review_done``.
        reground: with ``copy_first``, before the copy runs the model is asked which of the example's
            object classes stand for which of the task's (template ``planner_reground``, one short
            answer ``CreditCard -> KeyChain``) and the copy runs with them replaced
            (:func:`~icalkit.agents.grounding.replace_classes`); an unreadable answer leaves the copy
            as it is. The ``reground`` fine-tuning pairs teach it.
        room_fit: re-rank the top ``room_fit`` retrieved examples so that the first one is the room's
            best fit (:func:`~icalkit.agents.context.room_fit_order`: the top hit's task type, then
            the share of the program's object classes the executor can find here); 0: off.
        oracle_reground: the copied example is re-grounded with the replacements its task
            parameters and the task's give (:func:`~icalkit.agents.grounding.reground_target`, the
            ``reground`` pairs' target) instead of the model's answer: the ceiling of re-grounding,
            a diagnostic (the parameters are hidden from a deployed agent; recorded in every result).
            ``copy`` mode or ``copy_first``.
        mention_reground: the copied example is re-grounded by the classes the task's dialogue
            mentions (:func:`~icalkit.agents.mention_grounding.mention_replacements`: the memory's
            sentence embedder, no generative model), the room's classes as candidates;
            ``copy`` mode or ``copy_first``.
        copy_fallback: ``copy`` mode re-plans: after an attempt that fails with an error, the next
            retrieved example (in the ``room_fit`` / ``transfer_order`` order) whose re-grounded
            program names no class the executor reported missing is copied from the state the last
            one left, up to ``max_replans`` times; no model.
        transfer_order: with ``room_fit``, the candidates of the top hit's type are ordered by their
            cross-replay score first — the smoothed share of their type's other stored
            demonstrations they solve when copied (``icalkit ical transfer=true``,
            :mod:`~icalkit.data_gen.transfer`) — and by the room share after it; a memory without
            scores leaves the room-fit order as it is.
        model_replans: ``copy`` mode: when its own attempts (the copy and the ``copy_fallback``
            copies) end with an error, the model writes up to this many further re-plans from the
            state left, as ``ical`` mode re-plans (the error, the code that ran, the last copied
            example); 0: none. A copy that ends without an error, or succeeds, never reaches the
            model, so success can only rise over the copy's on every task — except with
            ``silent_next_copy=end_state``, where a last copy that ends without an error while the
            end-state check is unmet reaches it too, told what is left
            (:data:`~icalkit.agents.feedback.UNFINISHED_TEXT` and the first unmet check).
        silent_next_copy: ``copy`` mode with ``copy_fallback``: an attempt that ends without an error
            is followed by the next copy as a failed one is (up to ``max_replans`` copies), because
            the agent cannot tell a finished task from one a copy left unfinished (fewer slices,
            one pot of two). ``always``: every time, whether or not the task is done (the
            simulator's success does not stop the episode early); ``end_state``: while the room does
            not meet the end state the copied demonstration reached, its classes renamed as the copy's, or an
            object the dialogue names was never touched (:mod:`~icalkit.agents.demo_end_state`; no
            model); ``review``: the model is asked
            the review (:data:`~icalkit.agents.feedback.REVIEW_TEXT`) and the next copy runs unless
            it answers the empty program (done) — its own program is never run; an unreadable
            answer, or one cut before its code block closes, counts as "not done". ``""``: off (the
            episode ends after a silent attempt). With ``always`` and ``review_done`` the review comes
            after the last copy.
        named_next: ``copy_fallback`` with ``mention_reground``: each next copy is the remaining candidate
            (of any type) whose re-grounded program handles the most objects the dialogue names
            (:func:`~icalkit.agents.demo_end_state.named_classes`) that the episode has not touched yet —
            a breakfast copy made the coffee, the sandwich demonstration for the lettuce and tomato the
            dialogue asks for; ties keep the order they had.
        finish_placements: ``silent_next_copy=end_state``: a container the copied demonstration put
            things on and left on a receptacle of a class the dialogue names (the sandwich's plate on
            the counter, copied for "all on the dining table") must end there too; and when all that is
            left unmet are placements onto places the dialogue names, the agent moves the objects itself —
            a program of ``pickup_and_place`` calls on the room's objects by id (the evaluation's object
            map names them; :func:`~icalkit.agents.demo_end_state.placement_repair`), once per episode —
            before any further copy, and after the last one.
        finish_states: ``silent_next_copy=end_state``: where every state left unmet is an "every object
            of a class" state (wash *all* the mugs) and the copy just run gave one object of the class a
            block of statements, the agent repeats the block for each object still out of that state, by
            id (:mod:`~icalkit.agents.state_repair`; needs ``precondition_checks``), in the episode's one repair — with
            ``finish_placements``' moves when those are all the placements left; other placements left
            (a demonstration's put-away shelf) do not stop it.
        drop_absent: ``copy`` mode or ``copy_first``: a copied program leaves out the objects of classes
            the room lacks that its demonstration only moved (no goal attribute of theirs changed: a
            fork taken out of the sink, a paper towel roll set aside) — their declarations and every
            statement naming them (:mod:`~icalkit.agents.absent_objects`) — instead of failing on the
            first of them ("No Fork has been found") with the rest of the copy undone. The room is the
            one the evaluation's object map shows (``oracle_object_map``); without the map nothing is
            left out (an object not yet seen is not an absent one).
        piece_counts: ``copy`` mode or ``copy_first``: where the dialogue asks for more pieces of a food
            than the copied program serves ("two slices of lettuce"; "an apple slice"), the copy places
            further raw pieces where it places most of them (:mod:`~icalkit.agents.piece_counts`).
        drop_sliced: ``copy`` mode or ``copy_first``: a copied program leaves out its top-level moves of a
            whole object the room holds only as pieces (a bread an earlier copy cut:
            :func:`~icalkit.agents.absent_objects.drop_sliced_moves`) instead of failing on
            ``bread.pickup()``; slicing it again is already a no-op with ``precondition_checks``, which
            it needs. It needs the evaluation's object map too (``oracle_object_map``): an object not
            seen yet is not an absent one.
        wash_served: ``copy`` mode or ``copy_first``: a copied program washes each plate, bowl, mug or cup it
            serves in before its first use if it is dirty then, unless it takes it to the sink itself
            (:mod:`~icalkit.agents.served_vessels`: the setup dirties the served dish in half of the tasks).
        compose_parts: ``copy`` mode: when the retrieved type is a composite one (a breakfast: most of its
            demonstrations list dishes other types' demonstrations make), the first copy is composed
            from a demonstration of each dish the request lists, re-grounded against its own words,
            with every product moved where the request serves them ("all on the table"); the
            retrieved demonstrations follow it as before (:mod:`~icalkit.agents.composition`).
        stand_ins: ``copy`` mode: a vessel a copy pours from that the room lacks (the bottle a Water
            Plant demonstration filled) is replaced by one of the room's that can be filled, shares
            one of its TEACh object classes and fits where the program puts it (a bowl), the one the
            dialogue names first (:mod:`~icalkit.agents.stand_ins`). It needs the evaluation's object
            map (``oracle_object_map``), as ``drop_absent`` does.
        request_reader: ``compose_parts``: the model reads the request's dishes and where they go
            (:func:`~icalkit.agents.request_reading.reader_prompt`; a model trained by
            ``configs/finetune_reader.yaml``) instead of the rules
            (:func:`~icalkit.agents.request_rules.request_items`), which still read an answer that cannot
            be parsed twice, the dishes of one that names a food neither the Commander nor a Driver's question
            they did not refuse names (:func:`~icalkit.agents.request_reading.grounded_reading`), and the
            serving place where the answer names none.
        fill_missed_dishes: ``request_reader``: a dish the rules read that the model's reading leaves out (no word
            of a dish or food of it among the reading's, nor one the Commander cancelled: "no sandwich") is added
            to the reading (:func:`~icalkit.agents.request_reading.grounded_reading`).
        fill_only_meals: ``fill_missed_dishes`` only for a request retrieved as a composite type (a breakfast), not
            for one retrieved as a single dish (a sandwich the reader misread is given no dish of its fillings).
        compose_dishes: ``compose_parts``: a request retrieved as one of the types the composite ones are made
            of (a Coffee, a Plate Of Toast: :meth:`~icalkit.agents.composition.Composer.dish_types`) is read
            too (a breakfast whose words are closest to a coffee demonstration's), and composed when one
            dish it lists is of the retrieved type and another of a type that is none of its ingredients (a
            coffee beside a salad; not a cooked potato slice in a salad), or, when it lists none of the
            retrieved type (toast cancelled for an apple slice), one is of a type that has no ingredients
            and is no type's ingredient (a coffee) and another of any other type.
        single_dish: ``compose_dishes``: a request read as one dish of the retrieved type is copied as that dish
            alone, from its best demonstration for the dish's words, re-grounded against them (not the whole
            dialogue's: "three apple slices on a plate ... actually two, in a bowl" is two in a bowl).
    """

    mode: str = "ical"
    k: int = 5
    max_replans: int = 3
    rerank_sets: int = 3
    use_dialogue: bool = True
    use_frame: bool = True
    oracle_goal_feedback: bool = False
    max_state_objects: int = 25
    precondition_checks: bool = False
    ground_ids: bool = False
    copy_first: bool = False
    room_fit: int = 0
    review_done: bool = False
    review_keeps_placed: bool = False
    reground: bool = False
    oracle_reground: bool = False
    mention_reground: bool = False
    copy_fallback: bool = False
    transfer_order: bool = False
    model_replans: int = 0
    silent_next_copy: str = ""
    named_next: bool = False
    finish_placements: bool = False
    finish_states: bool = False
    drop_absent: bool = False
    piece_counts: bool = False
    drop_sliced: bool = False
    wash_served: bool = False
    compose_parts: bool = False
    stand_ins: bool = False
    request_reader: bool = False
    compose_dishes: bool = False
    single_dish: bool = False
    fill_missed_dishes: bool = False
    fill_only_meals: bool = False

    @property
    def uses_model(self) -> bool:
        """Whether the agent needs a generative model (every mode but ``copy`` without ``model_replans``,
        ``silent_next_copy=review`` or ``request_reader``)."""
        return (self.mode != "copy" or self.model_replans > 0 or self.silent_next_copy == "review"
                or self.request_reader)

    @property
    def repairs(self) -> int:
        """The attempts an episode keeps for its one repair program (``finish_placements``, ``finish_states``)."""
        return int(self.finish_placements or self.finish_states)

    def validate(self) -> None:
        if self.mode not in PLANNER_MODES:
            raise ValueError(f"planner.mode {self.mode!r} is not one of {PLANNER_MODES}")
        if self.k < 1 or self.rerank_sets < 1 or self.max_replans < 0:
            raise ValueError(f"planner.k and planner.rerank_sets must be >= 1 and planner.max_replans >= 0, "
                             f"got k={self.k}, rerank_sets={self.rerank_sets}, max_replans={self.max_replans}")
        if self.review_done and self.mode == "flat":
            raise ValueError("planner.review_done needs a model writing programs, not mode 'flat'")
        if self.review_keeps_placed and not self.review_done:
            raise ValueError("planner.review_keeps_placed guards the review: set planner.review_done=true")
        if self.silent_next_copy not in SILENT_NEXT_COPY:
            raise ValueError(f"planner.silent_next_copy {self.silent_next_copy!r} is not one of {SILENT_NEXT_COPY}")
        if self.silent_next_copy and not (self.mode == "copy" and self.copy_fallback):
            raise ValueError("planner.silent_next_copy runs the next copy: it needs planner.mode=copy and "
                             "planner.copy_fallback=true")
        if self.silent_next_copy == "review" and (self.review_done or self.oracle_goal_feedback):
            raise ValueError("planner.silent_next_copy=review asks the review itself and never runs its "
                             "program, and the oracle would overrule it: unset planner.review_done and "
                             "planner.oracle_goal_feedback")
        if self.named_next and not (self.copy_fallback and self.mention_reground):
            raise ValueError("planner.named_next orders the next copies by what their mention re-grounding handles: "
                             "it needs planner.copy_fallback=true and planner.mention_reground=true")
        for reading in ("request_reader", "compose_dishes"):
            if getattr(self, reading) and not self.compose_parts:
                raise ValueError(f"planner.{reading} reads the dishes compose_parts composes: set planner.compose_parts=true")
        if self.single_dish and not self.compose_dishes:
            raise ValueError("planner.single_dish copies one dish of a dish type read alone: set planner.compose_dishes=true")
        if self.fill_missed_dishes and not self.request_reader:
            raise ValueError("planner.fill_missed_dishes adds the rules' dishes to the model's reading: set planner.request_reader=true")
        if self.fill_only_meals and not self.fill_missed_dishes:
            raise ValueError("planner.fill_only_meals limits the fill: set planner.fill_missed_dishes=true")
        for copying in ("compose_parts", "stand_ins"):
            if getattr(self, copying) and self.mode != "copy":
                raise ValueError(f"planner.{copying} changes copies: it needs planner.mode=copy")
        for finish in ("finish_placements", "finish_states"):
            if getattr(self, finish) and self.silent_next_copy != "end_state":
                raise ValueError(f"planner.{finish} finishes what the end-state check finds unmet: it needs "
                                 "planner.silent_next_copy=end_state")
        if self.finish_states and not self.precondition_checks:
            raise ValueError("planner.finish_states repeats a copy's block, whose open() and pickup() of an object "
                             "already open or held are no-ops only with planner.precondition_checks=true")
        for edit in ("drop_absent", "piece_counts", "drop_sliced", "wash_served"):
            if getattr(self, edit) and not (self.mode == "copy" or self.copy_first):
                raise ValueError(f"planner.{edit} edits the copied example: it needs mode 'copy' or copy_first")
        if self.drop_sliced and not self.precondition_checks:
            raise ValueError("planner.drop_sliced leaves out the moves of a cut whole and keeps its slice() call, "
                             "a no-op only with the executor's checks: set planner.precondition_checks=true")
        if self.room_fit < 0:
            raise ValueError(f"planner.room_fit must be >= 0 (0 = off), got {self.room_fit}")
        if self.transfer_order and not self.room_fit:
            raise ValueError("planner.transfer_order orders the room_fit candidates: set planner.room_fit > 0")
        if self.max_state_objects < 1:
            raise ValueError(f"planner.max_state_objects must be >= 1, got {self.max_state_objects}")
        if self.ground_ids and self.mode == "flat":
            raise ValueError("planner.ground_ids applies to programs, not to flat plans (mode 'flat')")
        if self.reground and not self.copy_first:
            raise ValueError("planner.reground re-grounds the copied example: it needs planner.copy_first")
        if self.oracle_reground and not (self.mode == "copy" or self.copy_first):
            raise ValueError("planner.oracle_reground re-grounds the copied example: it needs mode 'copy' or copy_first")
        if self.mention_reground and not (self.mode == "copy" or self.copy_first):
            raise ValueError("planner.mention_reground re-grounds the copied example: it needs mode 'copy' or copy_first")
        if self.copy_fallback and self.mode != "copy":
            raise ValueError(f"planner.copy_fallback re-plans by copying the next example: it needs mode 'copy', got {self.mode!r}")
        if sum((self.reground, self.oracle_reground, self.mention_reground)) > 1:
            raise ValueError("planner.reground, oracle_reground and mention_reground are alternatives: set one")
        if self.model_replans < 0 or self.model_replans and self.mode != "copy":
            raise ValueError(f"planner.model_replans is the model's re-plans after mode 'copy' (>= 0), "
                             f"got {self.model_replans} with mode {self.mode!r}")
        if self.copy_first and self.mode != "ical":
            raise ValueError(f"planner.copy_first runs with mode 'ical' (a model revises the copy), got {self.mode!r}")
