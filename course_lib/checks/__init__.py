"""Self-checks for the exercise notebooks, and the exercise definitions the grader uses too.

In a notebook::

    from course_lib.checks import check, progress
    check("01.count_params", count_params)   # right after the exercise cell
    progress("01")                            # last cell: which exercises pass

``check`` prints "passed" with the points, "not attempted yet" while the stub still raises
``NotImplementedError``, or "incorrect" with a hint aimed at the first failing case (the structure
that differs, by key path; the leaf whose value differs; "returned None: missing `return`?"; a
compile count with JAX's cache-miss explanation); each further failing call reveals one more hint,
never the solution. Output is deterministic. Under ``CI`` (or ``COURSE_STRICT_CHECKS=1``, or
``set_strict(True)``, or ``strict=True``) a check that does not pass raises
:class:`CheckFailedError`.

How the parts fit (checks run inside the learner's kernel; the grader imports them, never the
other way round):

* ``_spec.py``: :class:`Exercise`, :class:`Case`, :class:`Outcome`, :class:`Verdict`.
* ``_kit.py``: the one shelf of helpers for the lesson modules (its ``__all__`` lists them):
  probes (``call_value``, ``call_tree``, ``compile_report``, ``jit_compile_report``,
  ``error_text``), judges (``judge_number``, ``judge_bool``, ``judge_equal``, ``tree_judge``,
  ``judge_compiles``, ``judge_compiles_with_advice``, ``missing_return``), references
  (``as_numpy``, ``scaled``, ``ACTIVATIONS``), plain data with dtypes (``dtyped_plain``,
  ``as_float32``), and random inputs (``random_f32``, ``random_array``, ``random_float_leaf``,
  ``random_like``, ``random_tree``, ``float_tree``, ``random_leaf``, the ``Layer``/``Point``
  namedtuples). Look there before writing a helper in a lesson module, and move a helper there
  when a second lesson needs it.
* ``_mistakes.py``: typical wrong answers. A judge checks the structure, then looks the answer up
  in a table of ``Variant(mistake=..., build=...)`` records with ``first_mistake`` (by their place
  in the table, never their text), then reports the leaf difference; ``lead`` puts where it
  happened in front of a finding, a text or a :class:`Mistake`.
* ``_sections.py``: the lesson headings that hints send a learner back to, one constant each.
* ``_evaluate.py``: ``probe_all`` runs the learner's function on cases in the learner's process,
  with the functions of the exercises it ``uses`` replaced by their stand-ins, and every call
  that reaches a ``forbidden`` course function, a ``reference`` or a forbidden package recorded
  (``_guard.py``: by what is called, never by name); ``judge_outcomes`` compares the outcomes
  with the reference results anywhere, scores the named parts of the cases, and flags forbidden
  calls.
* ``_plain.py`` and ``_wire.py``: results as plain data (``to_plain``, ``tree_plain``) and as
  JSON for the trip from a kernel to the grader (never pickle).
* ``_runner.py``: what the grader calls inside a submission's kernel.
* ``_lessonNN.py``: the exercises of lesson NN.

The grader uses this package through the names exported here only: the registry, the spec classes,
``reference_results`` and ``judge_outcomes``, ``loads`` and ``WireError`` for the kernel's report,
``code_id`` and ``parse_cell`` for a submission's cells, ``round_points``, ``code_spans_html``
for a check's text on a page (what it writes between backticks set as code), and
``RUNNER_MODULE``.

Adding the exercises of a lesson (say 02):

1. Create ``_lesson02.py`` defining ``EXERCISES = (...)``, a tuple of :class:`Exercise` in the
   order the notebook asks them. It is found by its name; nothing else needs registering.
2. For each exercise give: ``id="02.sgd_step"`` (also the ``course.exercise`` metadata of the
   exercise cell), ``name`` (the function or class the learner defines), ``title``, ``points``,
   ``cases`` (``rng -> list[Case]``, deterministic: use only ``rng``; include ``None`` subtrees and
   several container types; put facts a judge needs in ``Case.info``; make JAX arrays with
   ``jax.device_put``, since ``jnp.asarray`` compiles once per new shape; name each case's
   ``part`` (``_kit.in_parts``) so that every part holds a case a trivial answer gets wrong, or
   name none for all-or-nothing), ``reference`` (the
   course's answer, a module-level function that may use ``course_lib``; keep it self-contained,
   since a helper it calls could be called by a learner unnoticed), ``probe`` (``call_value`` /
   ``call_tree`` or your own ``(fn, case) -> plain data``; call ``fn`` only through the argument,
   so the guard sees it), ``judge`` (``(got, expected, case) -> None | str | Mistake``; start
   from a ``_kit`` judge and return a ``Mistake`` for each typical wrong answer: what went wrong
   and where, never the fix, then its idea and its fix), the exercise's own ``hints`` (its idea
   and its fix, for the other failures) with ``reread``, the section behind them, and
   ``forbidden``: the
   ``course_lib`` names that do the exercise's job (say so in the notebook's prompt). When an
   answer calls an earlier exercise's function, list it in ``uses`` and give that exercise a
   ``stand_in`` (a JAX version of its reference that works under ``jit``). Name in ``mistakes``,
   a few words each, the typical wrong answers your judge meets with a targeted hint (the
   facilitator's guide lists them for instructors), each one a wrong answer that step 4 tests.
3. In ``solutions/02_*.ipynb``: the exercise cell (metadata ``{"course": {"exercise": id}}``,
   solution between ``### BEGIN SOLUTION`` / ``### END SOLUTION``), then a check cell (metadata
   ``{"course": {"check": id}}``) with ``check(id, name)``, and ``progress("02")`` last.
4. Add ``tests/checks/test_checks_lesson02.py`` with a subclass of ``LessonChecks`` from
   ``tests/exercise_support.py``: the lesson's right answers and its typical wrong answers, each
   with the text its hint must hold (not attempted, correct, the grading cases and the hints are
   then tested), and ``named``, which links each of the exercise's ``mistakes`` to its wrong
   answer by that text. The course-wide grader test in ``tests/grade/test_grade.py`` grades the new
   solution and exercise notebooks by itself.
"""

from ._evaluate import judge_outcomes as judge_outcomes
from ._evaluate import reference_results as reference_results
from ._guard import code_id as code_id
from ._guard import parse_cell as parse_cell
from ._panel import code_spans_html as code_spans_html
from ._registry import all_exercises as all_exercises
from ._registry import exercises as exercises
from ._registry import get_exercise as get_exercise
from ._registry import lessons as lessons
from ._room import ROOM_OUTCOMES as ROOM_OUTCOMES
from ._room import ROOM_TEXT_LIMITS as ROOM_TEXT_LIMITS
from ._room import done as done
from ._room import help_me as help_me
from ._room import join_room as join_room
from ._room import leave_room as leave_room
from ._room import valid_name as valid_name
from ._selfcheck import CheckFailedError as CheckFailedError
from ._selfcheck import check as check
from ._selfcheck import evaluate as evaluate
from ._selfcheck import is_strict as is_strict
from ._selfcheck import progress as progress
from ._selfcheck import ready as ready
from ._selfcheck import reset_hints as reset_hints
from ._selfcheck import set_strict as set_strict
from ._spec import MINUTES_PER_POINT as MINUTES_PER_POINT
from ._spec import Case as Case
from ._spec import Exercise as Exercise
from ._spec import Mistake as Mistake
from ._spec import Outcome as Outcome
from ._spec import Verdict as Verdict
from ._spec import round_points as round_points
from ._wire import WireError as WireError
from ._wire import loads as loads

RUNNER_MODULE = "course_lib.checks._runner"
"""The module the grader imports afresh in a submission's kernel: its ``run`` probes an exercise."""
