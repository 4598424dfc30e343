"""The facilitator's guide: how to teach the course live, in a workshop, built from the lessons.

``make navigation`` (`course_tools.authoring.navigation`) writes it as the website's page
``docs/facilitator.md`` (`site_page`) from a `LessonPlan` per lesson. All of it comes from what
the course keeps with its lessons, so it changes when they do:

* each lesson's title and outcome (the ones the lesson tables show), and its session: computed
  from the lesson's live path by the rule of `course_tools.authoring.live_path` (words read, code
  cells run, each core exercise's minutes), never typed. Lesson 00 (`PRE_WORK`) has none:
  learners run it at home before the day;
* the cells worth running in front of the room: code cells of the live path with the cell
  metadata ``{"course": {"demo": "what it shows"}}`` (`demo_cells`);
* the exercises with their points, minutes and the typical mistakes their checks recognise
  (``course_lib.checks.Exercise.mistakes``), the optional ones marked;
* a half-day and a full-day agenda worked out from the sessions (`agenda`) for a room of
  `ROOM_SIZE` learners, its set-up planned by the room's size (`set_up_minutes`), and a
  checklist for the room and the venue.

>>> plan = agenda([("01", 45), ("02", 60), ("03", 75), ("04", 60)], HALF_DAY, learners=10)
>>> for slot in plan.slots:
...     print(f"{clock(slot.start)} {slot.kind} {slot.lesson}".rstrip())
09:00 opening
09:15 lesson 01
10:00 break
10:15 lesson 02
11:15 break
11:30 lesson 03
12:45 closing
>>> plan.taught, plan.left, clock(plan.ends)
(('01', '02', '03'), ('04',), '13:00')
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from nbformat import NotebookNode

from course_lib.checks import MINUTES_PER_POINT, Exercise, exercises

from .._notebook_files import NotebookError, cell_label, course_metadata, markdown_headings
from .live_path import (
    GOING_FURTHER_HEADING,
    GOING_FURTHER_TAG,
    MINUTES_PER_CODE_CELL,
    WORDS_PER_MINUTE,
    LivePath,
    SessionTime,
    live_path,
    optional_exercises,
    session_time,
)

__all__ = [
    "BREAK_AFTER",
    "FULL_DAY",
    "HALF_DAY",
    "PRE_WORK",
    "ROOM_SIZE",
    "Agenda",
    "Day",
    "Demo",
    "LessonPlan",
    "Slot",
    "agenda",
    "clock",
    "demo_cells",
    "duration",
    "lesson_plan",
    "set_up_minutes",
    "site_page",
]

PRE_WORK = "00"
"""The lesson learners run at home before the day: it has no session of its own."""
SET_UP_BASE = 10
SET_UP_PER_LEARNER = 0.5
"""The day opens with a set-up whose minutes grow with the room (`set_up_minutes`): the welcome,
everyone joining the room and running ``ready()``, and the helpers seeing to the laptops that
fail, which take a few minutes each and come one in ten or so."""
ROOM_SIZE = 30
"""The learners the guide's agendas are planned for."""
CLOSING = 15
BREAK = 15
BREAK_AFTER = 90
"""Minutes of teaching, at most, between two breaks (a longer lesson is taught whole)."""
LUNCH = 60
LUNCH_FROM = 12 * 60
WIDTH = 100
_TYPED_SESSION = re.compile(r"<!--\s*session:")


@dataclass(frozen=True)
class Day:
    """A workshop day: its name, when it starts and ends (minutes after midnight), and whether
    it breaks for lunch."""

    name: str
    start: int
    end: int
    lunch: bool


HALF_DAY = Day("Half day", 9 * 60, 13 * 60, lunch=False)
FULL_DAY = Day("Full day", 9 * 60, 17 * 60, lunch=True)


@dataclass(frozen=True)
class Slot:
    """One line of an agenda: when it starts (minutes after midnight), how long it lasts, what it
    is, and for a lesson, which one."""

    start: int
    minutes: int
    kind: Literal["opening", "lesson", "break", "lunch", "closing"]
    lesson: str = ""


@dataclass(frozen=True)
class Agenda:
    """A day planned by `agenda`: its slots in order, and the lessons left for another day."""

    day: Day
    slots: tuple[Slot, ...]
    left: tuple[str, ...]

    @property
    def taught(self) -> tuple[str, ...]:
        """The lessons the day teaches, in order."""
        return tuple(slot.lesson for slot in self.slots if slot.kind == "lesson")

    @property
    def ends(self) -> int:
        """When the day's last slot ends, in minutes after midnight."""
        last = self.slots[-1]
        return last.start + last.minutes


def set_up_minutes(learners: int) -> int:
    """The minutes a day opens with for a room of ``learners``: `SET_UP_BASE`, and
    `SET_UP_PER_LEARNER` for each learner, rounded up to 5 minutes.

    >>> [set_up_minutes(n) for n in (10, 20, 30, 60)]
    [15, 20, 25, 40]
    """
    return 5 * math.ceil((SET_UP_BASE + SET_UP_PER_LEARNER * learners) / 5)


def agenda(sessions: Sequence[tuple[str, int]], day: Day, learners: int = ROOM_SIZE) -> Agenda:
    """Plan ``day`` for ``sessions``, ``(lesson, minutes)`` pairs taught in their order, for a
    room of ``learners``.

    The day opens with `set_up_minutes` (welcome, everyone's set-up checked) and closes with
    `CLOSING` minutes of questions. Before a lesson comes a `BREAK` whenever it would otherwise
    make more than `BREAK_AFTER` minutes of teaching without one (the set-up is not teaching),
    or, on a day with lunch, a `LUNCH` break instead once it is `LUNCH_FROM` o'clock. The
    lessons go in order, each building on the last, and the first one whose session (and pause)
    would end the day late stops the plan: it and those after it are ``left``.

    >>> plan = agenda([("01", 45), ("02", 60), ("03", 75), ("04", 60)], FULL_DAY, learners=10)
    >>> [(clock(slot.start), slot.kind) for slot in plan.slots[-3:]]
    [('12:45', 'lunch'), ('13:45', 'lesson'), ('14:45', 'closing')]
    >>> agenda([("07", 300)], HALF_DAY).left
    ('07',)
    """
    now = day.start
    opening = set_up_minutes(learners)
    slots = [Slot(now, opening, "opening")]
    now += opening
    since_pause, lunched = 0, False  # the set-up is not taught: the room is up and about
    left: tuple[str, ...] = ()
    for index, (lesson, minutes) in enumerate(sessions):
        pause: Slot | None = None
        if day.lunch and not lunched and now >= LUNCH_FROM:
            pause = Slot(now, LUNCH, "lunch")
        elif since_pause + minutes > BREAK_AFTER:
            pause = Slot(now, BREAK, "break")
        pause_minutes = 0 if pause is None else pause.minutes
        if now + pause_minutes + minutes + CLOSING > day.end:
            left = tuple(lesson for lesson, _ in sessions[index:])
            break
        if pause is not None:
            slots.append(pause)
            now += pause.minutes
            since_pause = 0
            lunched = lunched or pause.kind == "lunch"
        slots.append(Slot(now, minutes, "lesson", lesson))
        now += minutes
        since_pause += minutes
    slots.append(Slot(now, CLOSING, "closing"))
    return Agenda(day, tuple(slots), left)


def clock(minutes: int) -> str:
    """A time of day, given in minutes after midnight, as ``HH:MM``.

    >>> clock(9 * 60), clock(13 * 60 + 5)
    ('09:00', '13:05')
    """
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def duration(minutes: int) -> str:
    """A length of time in words a timetable uses.

    >>> duration(45), duration(120), duration(615)
    ('45 min', '2 h', '10 h 15 min')
    """
    hours, rest = divmod(minutes, 60)
    if not hours:
        return f"{rest} min"
    return f"{hours} h" if not rest else f"{hours} h {rest} min"


@dataclass(frozen=True)
class Demo:
    """A cell worth running in front of the room: its number among the notebook's code cells,
    which is the ``[N]`` Jupyter shows beside it after a run from the top, the heading it is
    under, and what it shows."""

    cell: int
    heading: str
    shows: str


def demo_cells(nb: NotebookNode) -> tuple[Demo, ...]:
    """The notebook's demonstration cells on its live path, in order: code cells whose cell
    metadata is ``{"course": {"demo": "what it shows"}}``, those of going-further sections left
    out (a workshop skips them).

    Raises `NotebookError` for a demo mark on a markdown cell or one that says nothing.

    >>> from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell
    >>> nb = new_notebook(cells=[
    ...     new_markdown_cell("# 01 Leaves\\n\\n## Counting"), new_code_cell("x = [1, 2]"),
    ...     new_code_cell("len(x)", metadata={"course": {"demo": "a list of two leaves"}})])
    >>> demo_cells(nb)
    (Demo(cell=2, heading='Counting', shows='a list of two leaves'),)
    """
    demos = []
    heading, code_cells = "", 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            code_cells += 1
        shows = course_metadata(cell).get("demo")
        if shows is not None:
            if cell.cell_type != "code":
                raise NotebookError(f"{cell_label(cell, index)}: only a code cell can be a demo")
            if not isinstance(shows, str) or not shows.strip():
                raise NotebookError(
                    f"{cell_label(cell, index)}: its course.demo metadata must say in words what "
                    "the cell shows"
                )
            if GOING_FURTHER_TAG not in cell.metadata.get("tags", []):
                demos.append(Demo(code_cells, heading, " ".join(shows.split())))
        if cell.cell_type == "markdown":
            heading = (markdown_headings(cell.source) or [heading])[-1]
    return tuple(demos)


@dataclass(frozen=True)
class LessonPlan:
    """What the guide says about one lesson: its file name and title, its outcome, its session
    by the rule and its live path (None for `PRE_WORK`, sent home), its demonstration cells, its
    exercises, and the ids of those that are optional in a workshop."""

    name: str
    title: str
    outcome: str
    time: SessionTime | None = None
    live: LivePath | None = None
    demos: tuple[Demo, ...] = ()
    exercises: tuple[Exercise, ...] = ()
    optional: tuple[str, ...] = ()

    @property
    def number(self) -> str:
        """The lesson's two-digit number, ``"01"``."""
        return self.name[:2]

    @property
    def minutes(self) -> int | None:
        """The session's length in minutes; None for a lesson sent home."""
        return None if self.time is None else self.time.minutes


def lesson_plan(
    nb: NotebookNode, name: str, title: str, outcome: str, title_cell: str
) -> LessonPlan:
    """The plan of the lesson ``nb`` in the file ``name``, whose title cell's markdown is
    ``title_cell``: its session by the rule of `session_time` (none for `PRE_WORK`), its
    demonstration cells, and its exercises from ``course_lib.checks``, the optional ones named.

    Raises `NotebookError` when the title cell still types a session length by hand
    (``<!-- session: 45 min -->``), which the guide no longer reads.

    >>> from nbformat.v4 import new_notebook
    >>> plan = lesson_plan(new_notebook(), "01_x.ipynb", "01 X", "count", "# 01 X")
    >>> plan.minutes, [exercise.id for exercise in plan.exercises][:2]
    (35, ['01.count_params', '01.leaf_paths'])
    """
    if _TYPED_SESSION.search(title_cell):
        raise NotebookError(
            "the title cell types a session length (`<!-- session: ... -->`), which nothing "
            "reads: delete the line. The facilitator's guide computes each session from the "
            "lesson's live path (course_tools.authoring.live_path)"
        )
    number = name[:2]
    demos, listed = demo_cells(nb), exercises(number)
    if number == PRE_WORK:
        return LessonPlan(name, title, outcome, demos=demos, exercises=listed)
    optional = tuple(exercise.id for exercise in optional_exercises(nb, number))
    return LessonPlan(
        name, title, outcome, session_time(nb, number), live_path(nb), demos, listed, optional
    )


# ---------------------------------------------------------------------------------------------
# The guide in markdown: the website's page, its links from ``docs/``

_PREFIX = "../"
_ROOM = (
    "How to start it, and the line learners run to join, are on the "
    "[instructor page](instructor.md)"
)
_LAUNCH = (
    "the launch menu of each lesson and exercise page (the rocket at its top) opens it on "
    "Binder or Colab, once the course's repository is named (README, section *Colab and "
    "Binder*)"
)


def _wrap(text: str, indent: str = "") -> list[str]:
    """A paragraph or list item as lines of at most `WIDTH` characters, broken only at spaces,
    the lines after the first indented by ``indent``."""
    return textwrap.wrap(
        text,
        WIDTH,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _lessons(labels: Sequence[str]) -> str:
    if not labels:
        return "no lesson"
    if len(labels) == 1:
        return f"lesson {labels[0]}"
    return f"lessons {labels[0]}–{labels[-1]}"


def _checklist(plans: Sequence[LessonPlan]) -> list[str]:
    pre_work = next((plan for plan in plans if plan.number == PRE_WORK), None)
    home = "the first lesson"
    if pre_work is not None:
        home = f"[{pre_work.title}]({_PREFIX}notebooks/{pre_work.name}) (lesson {PRE_WORK})"
    bullets = [
        (
            f"- **Lesson {PRE_WORK}, sent home in advance.** A week before, send the course's "
            "address and ask each learner to install it (a clone and `make lab`, or `pip "
            f"install .` in a checkout) and to run {home} to the end on the laptop they will "
            "bring. Its checks say in seconds whether JAX works, so set-up problems reach you "
            "by mail, not in the room."
        ),
        (
            "- **The room.** Start `course-room serve` on your laptop before learners arrive "
            "and put its projector page (the join line, no secret) on the projector. Its "
            "dashboard shows who is ready (JAX version and backend), who passes which exercise, "
            "and who has been stuck for a while, and never shows anyone's code. "
            f"{_ROOM}."
        ),
        (
            "- **The venue, the day before or an hour early.** Two checks, each with a phone "
            "or a second laptop on the venue's Wi-Fi. First, start the room on your laptop with "
            "`--host 0.0.0.0` and open its projector page from the other device: many venue "
            "and guest networks block traffic between devices (client isolation), and then no "
            "learner can reach the room, whatever the firewall says. If the page does not "
            "load, ask the venue for a network without isolation or run the room on your own "
            "hotspot. Second, the first time the room listens, macOS or Windows asks whether "
            "to accept incoming connections for Python: allow it (on Windows, for private "
            "networks), or learners' checks never arrive; answer it before the day, not in "
            "front of the room."
        ),
        (
            "- **A broken laptop.** Do not repair an installation while the room waits: the "
            "learner opens the lesson on Colab or Binder and goes on from there. Colab installs "
            "the course into its own kernel; Binder builds the course's exact environment, "
            "which takes minutes the first time, so open one Binder link yourself the day "
            f"before. The links: {_LAUNCH}. A kernel in the cloud cannot reach a room on "
            "your local network, so those learners stay off the dashboard unless the room runs "
            "on a host they can reach: instead, a learner on Colab pairs with a neighbour whose "
            "laptop is in the room, or puts up a sticky note when stuck, and a helper comes by."
        ),
        (
            "- **When the network is down.** The room needs no internet: it runs on your "
            "laptop, learners join it over the local network (the venue's Wi-Fi, or your own "
            "hotspot), and its dashboard loads nothing from outside. Bring the course on a USB "
            "stick: a checkout of the repository, a folder of wheels made the day before with "
            "`pip wheel . -w wheels` on the learners' operating system (JAX and every "
            "dependency included; they install with `pip install --no-index --find-links "
            "wheels pytree-course`), and the website built by `make site`: open "
            "`build/site/html/index.html` from the stick, and every lesson and exercise page "
            "shows its saved outputs with nothing fetched from outside. Colab and Binder need "
            "the internet: with the network down, a learner whose laptop fails pairs with a "
            "neighbour."
        ),
    ]
    return [line for bullet in bullets for line in _wrap(bullet, "  ")]


def _agenda_table(plan: Agenda, by_number: dict[str, LessonPlan]) -> list[str]:
    what = {
        "opening": (
            f"Welcome; everyone joins the room and runs lesson {PRE_WORK}'s last cell, "
            "`ready()`, until the ready list is full"
        ),
        "break": "Break",
        "lunch": "Lunch",
        "closing": "Questions, and what to study next",
    }
    rows = [
        f"### {plan.day.name}, {clock(plan.day.start)}–{clock(plan.ends)}",
        "",
        "| time | what |",
        "|---|---|",
    ]
    for slot in plan.slots:
        if slot.kind == "lesson":
            lesson = by_number[slot.lesson]
            text = f"[{lesson.title}]({_PREFIX}notebooks/{lesson.name})"
        else:
            text = what[slot.kind]
        rows.append(f"| {clock(slot.start)} | {_cell(text)} ({duration(slot.minutes)}) |")
    rows.append(f"| {clock(plan.ends)} | End |")
    taught = sum(by_number[lesson].minutes or 0 for lesson in plan.taught)
    fits = _lessons(plan.taught)
    sentence = f"{fits[0].upper()}{fits[1:]} {'fit' if len(plan.taught) > 1 else 'fits'}"
    if plan.taught:
        sentence += f" ({duration(taught)} of sessions)"
    if plan.left:
        sentence += (
            f"; {_lessons(plan.left)} {'is' if len(plan.left) == 1 else 'are'} left for another "
            "day, or for learners to study at home, where the exercises' checks give the same "
            "hints as in the room"
        )
    rows += ["", *_wrap(sentence + ".")]
    return rows


def _days_needed(sessions: Sequence[tuple[str, int]], day: Day) -> int | None:
    days, rest = 0, list(sessions)
    while rest:
        plan = agenda(rest, day)
        if not plan.taught:
            return None  # a session longer than the day
        rest = list(rest[len(plan.taught) :])
        days += 1
    return days


def _rule() -> str:
    return (
        "A session is one lesson's live path taught from its notebook, then its exercise "
        "notebook worked in the room while the checks give hints. Its length is computed, not "
        "typed: the words of the live path at "
        f"{WORDS_PER_MINUTE} a minute (a room reads and talks the text over at about half "
        f"a reader's pace alone), {MINUTES_PER_CODE_CELL} min for each code cell run and "
        f"read with the room, and {MINUTES_PER_POINT} min for each point of every exercise "
        "that is not optional, the sum rounded up to 5 min. The live path is the lesson "
        "without its sections headed *Going further*, which a workshop skips and self-study "
        "reads; an exercise is optional when the section its hints send the learner back to "
        "is one of them. The rule and each lesson's budget are in "
        "`course_tools/authoring/live_path.py`, and a test holds every lesson to its budget."
    )


def _agendas(plans: Sequence[LessonPlan]) -> list[str]:
    sessions = [(plan.number, plan.minutes) for plan in plans if plan.minutes is not None]
    by_number = {plan.number: plan for plan in plans}
    rows = _wrap(_rule())
    rows += [
        "",
        *_wrap(
            f"A day opens with a set-up planned by the room's size: {duration(SET_UP_BASE)}, "
            f"and {SET_UP_PER_LEARNER:g} min for each learner, rounded up to 5 min, to welcome "
            "the room, see everyone join it and run `ready()`, and let the helpers see to the "
            "laptops that fail (a few minutes each, one in ten or so). "
            + ", ".join(
                f"{n} learners: {duration(set_up_minutes(n))}" for n in (10, 20, 30, 40, 60)
            )
            + f". The agendas below are for {ROOM_SIZE} learners. The day then "
            f"takes a {duration(BREAK)} break rather than teach more than "
            f"{duration(BREAK_AFTER)} without one (the set-up, with everyone up and about, does "
            "not count; a longer session is taught whole, its "
            f"break after it; a {duration(LUNCH)} lunch from {clock(LUNCH_FROM)} on a full "
            f"day), and closes with {duration(CLOSING)} of questions. The lessons go in order: "
            "each builds on the ones before."
        ),
    ]
    total = sum(minutes for _, minutes in sessions)
    days = _days_needed(sessions, FULL_DAY)
    if sessions:
        summary = f"The {len(sessions)} sessions take {duration(total)} in all" + (
            f": {days} full days teach the whole course." if days and days > 1 else "."
        )
        rows += ["", *_wrap(summary)]
        rows += ["", *_session_table(plans)]
    for day in (HALF_DAY, FULL_DAY):
        rows += ["", *_agenda_table(agenda(sessions, day), by_number)]
    return rows


def _session_table(plans: Sequence[LessonPlan]) -> list[str]:
    rows = [
        "| lesson | live path: words | code cells | core exercises | session |",
        "|---|---|---|---|---|",
    ]
    for plan in plans:
        if plan.time is None or plan.live is None:
            continue
        core = len(plan.exercises) - len(plan.optional)
        rows.append(
            f"| {plan.number} | {plan.live.words:,} ({plan.time.reading} min) | "
            f"{plan.live.code_cells} ({plan.time.running} min) | "
            f"{core} ({plan.time.exercises} min) | {duration(plan.time.minutes)} |"
        )
    return rows


def _exercise_rows(plan: LessonPlan) -> list[str]:
    points = sum(exercise.points for exercise in plan.exercises)
    count = len(plan.exercises)
    rows = [f"**Exercises:** {count}, worth {points} points."]
    if plan.optional:
        ids = ", ".join(f"`{exercise_id}`" for exercise_id in plan.optional)
        rows[0] += (
            f" Optional in a workshop: {ids}, which practise a going-further section; the "
            "session does not wait for them."
        )
    rows = _wrap(rows[0])
    rows += [
        "",
        "| exercise | points | minutes | typical mistakes its check recognises |",
        "|---|---|---|---|",
    ]
    for exercise in plan.exercises:
        mistakes = "; ".join(exercise.mistakes) or "none named yet"
        minutes = str(exercise.minutes)
        if exercise.id in plan.optional:
            minutes += " (optional)"
        rows.append(
            f"| `{exercise.id}`: {_cell(exercise.title)} | {exercise.points} | {minutes} | "
            f"{_cell(mistakes)} |"
        )
    return rows


def _lesson_section(plan: LessonPlan) -> list[str]:
    link = f"{_PREFIX}notebooks/{plan.name}"
    if plan.time is None or plan.live is None:
        rows = [
            f"### {plan.title} (sent home in advance)",
            "",
            *_wrap(
                f"[The lesson]({link}). Learners run it at home before the day, so that they "
                "arrive with a working environment; the room's ready list shows who did."
            ),
        ]
    else:
        rows = [f"### {plan.title} ({duration(plan.time.minutes)})", "", f"[The lesson]({link})"]
        if plan.exercises:
            rows[-1] += f" · [its exercises]({_PREFIX}exercises/{plan.name})"
        rows[-1] += "."
    rows += ["", *_wrap(f"**Outcome:** *you will be able to* {plan.outcome}.")]
    if plan.time is not None and plan.live is not None:
        time = plan.time
        rows += [
            "",
            *_wrap(
                f"**Session:** {time.reading} min reading {plan.live.words:,} words, "
                f"{time.running} min running {plan.live.code_cells} code cells, "
                f"{time.exercises} min of exercises: {duration(time.minutes)}."
            ),
        ]
        if plan.live.going_further:
            skipped = "; ".join(
                heading.removeprefix(GOING_FURTHER_HEADING).strip()
                for heading in plan.live.going_further
            )
            rows += ["", *_wrap(f"**Skipped live** (its *Going further* sections): {skipped}.")]
    if plan.demos:
        rows += ["", "**Run live:**", ""]
        for demo in plan.demos:
            under = f" (under *{demo.heading}*)" if demo.heading else ""
            rows += _wrap(f"- `[{demo.cell}]` {demo.shows}{under}", "  ")
    if plan.exercises:
        rows += ["", *_exercise_rows(plan)]
    return rows


def _fast_finishers(plans: Sequence[LessonPlan]) -> list[str]:
    return (
        _wrap(
            "**Fast finishers.** A learner whose checks all pass before the room does goes on to "
            "the lesson's optional exercises, then reads its going-further sections, which the "
            "guide lists for each lesson and which run like the rest of the notebook. Point them "
            "there out loud as the exercise block starts, so that nobody waits for permission, and "
            "ask one of them to explain a going-further section to the room if time is left."
        )
        if any(plan.live is not None for plan in plans)
        else []
    )


def _guide(plans: Sequence[LessonPlan]) -> str:
    exercises_in_all = [exercise for plan in plans for exercise in plan.exercises]
    points = sum(exercise.points for exercise in exercises_in_all)
    lines = [
        "## Before the day: the room and the venue",
        "",
        *_checklist(plans),
        "",
        "## Agendas",
        "",
        *_agendas(plans),
        "",
        "## Lesson by lesson",
        "",
        *_wrap(
            f"{len(plans)} lessons, {len(exercises_in_all)} exercises worth {points} points. "
            "The cells to run live are numbered as Jupyter numbers them in a run from the "
            "top, `[1]` being the hidden setup cell, and each says what it shows: run it, "
            "then read its output with the room. Each exercise's row gives the minutes the "
            f"session allows it ({MINUTES_PER_POINT} per point) and names the typical "
            "mistakes its check recognises and answers with a hint of its own: what to listen "
            "for while the room works."
        ),
    ]
    finishers = _fast_finishers(plans)
    if finishers:
        lines += ["", *finishers]
    for plan in plans:
        lines += ["", *_lesson_section(plan)]
    return "\n".join(lines)


def site_page(plans: Sequence[LessonPlan]) -> str:
    """The website's page ``docs/facilitator.md``: a title, a short introduction, and the guide,
    its sections at ``##``, its links from ``docs/``.

    >>> page = site_page([LessonPlan("00_start.ipynb", "00 Start", "run the course")])
    >>> print(page[page.index("### 00"):])
    ### 00 Start (sent home in advance)
    <BLANKLINE>
    [The lesson](../notebooks/00_start.ipynb). Learners run it at home before the day, so that they
    arrive with a working environment; the room's ready list shows who did.
    <BLANKLINE>
    **Outcome:** *you will be able to* run the course.
    <BLANKLINE>
    """
    intro = (
        "How to teach the course live: a workshop of half a day or a whole day, where everyone "
        "works through the same lessons and exercises at once. It says what to prepare, plans "
        "the day from each lesson's session, computed from what the learners do in its live "
        "path, and for each lesson lists the cells worth running in front of the room, the "
        "minutes of each exercise and the mistakes its checks recognise. It is made from the "
        "lessons and their exercises."
    )
    comment = (
        "<!-- Generated by `make navigation` from the lessons and their exercises: edits to\n"
        "     this page are overwritten. -->"
    )
    intro_lines = "\n".join(_wrap(intro))
    return f"# Facilitator's guide\n\n{comment}\n\n{intro_lines}\n\n{_guide(plans)}\n"
