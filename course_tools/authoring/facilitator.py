"""The facilitator's guide: how to teach the course live, in a workshop, built from the lessons.

``make navigation`` (`course_tools.authoring.navigation`) writes it twice from the same
`LessonPlan` list: into ``README.md`` between the lines `GUIDE_BEGIN` and `GUIDE_END`
(`readme_guide`), and as the website's page ``docs/facilitator.md`` (`site_page`). All of it comes
from what the course keeps with its lessons, so it changes when they do:

* each lesson's title and outcome (the ones the lesson tables show), and its session length: an
  HTML comment ``<!-- session: 45 min -->`` beside the outcome in the lesson's title cell
  (`session_minutes`), the whole minutes it takes to teach the lesson and work its exercises.
  Lesson 00 (`PRE_WORK`) has none: learners run it at home before the day;
* the cells worth running in front of the room: code cells with the cell metadata
  ``{"course": {"demo": "what it shows"}}`` (`demo_cells`);
* the exercises with their points and the typical mistakes their checks recognise
  (``course_lib.checks.Exercise.mistakes``);
* a half-day and a full-day agenda worked out from the session lengths (`agenda`), and a
  checklist for the room.

>>> plan = agenda([("01", 45), ("02", 60), ("03", 75), ("04", 60)], HALF_DAY)
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

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from nbformat import NotebookNode

from course_lib.checks import Exercise, exercises

from .._notebook_files import NotebookError, cell_label, course_metadata, markdown_headings

__all__ = [
    "BREAK_AFTER",
    "FULL_DAY",
    "GUIDE_BEGIN",
    "GUIDE_END",
    "HALF_DAY",
    "PRE_WORK",
    "SESSION_LIMITS",
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
    "readme_guide",
    "session_minutes",
    "site_page",
]

GUIDE_BEGIN = (
    "<!-- BEGIN facilitator's guide: `make navigation` writes it from the lessons and their "
    "exercises -->"
)
GUIDE_END = "<!-- END facilitator's guide -->"
PRE_WORK = "00"
"""The lesson learners run at home before the day: it has no session of its own."""
SESSION_LIMITS = (5, 240)
"""The shortest and the longest session a lesson may ask for, in minutes."""
OPENING = 15
CLOSING = 15
BREAK = 15
BREAK_AFTER = 90
"""Minutes of teaching, at most, between two breaks (a longer lesson is taught whole)."""
LUNCH = 60
LUNCH_FROM = 12 * 60
WIDTH = 100
_SESSION = re.compile(r"<!--\s*session:(.*?)-->", re.DOTALL)
_MINUTES = re.compile(r"(\d+) min")
_EXAMPLE = "`<!-- session: 45 min -->`"


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


def agenda(sessions: Sequence[tuple[str, int]], day: Day) -> Agenda:
    """Plan ``day`` for ``sessions``, ``(lesson, minutes)`` pairs taught in their order.

    The day opens with `OPENING` minutes (welcome, everyone's set-up checked) and closes with
    `CLOSING` minutes of questions. Before a lesson comes a `BREAK` whenever it would otherwise
    make more than `BREAK_AFTER` minutes without one, or, on a day with lunch, a `LUNCH` break
    instead once it is `LUNCH_FROM` o'clock. The lessons go in order, each building on the last,
    and the first one whose session (and pause) would end the day late stops the plan: it and
    those after it are ``left``.

    >>> plan = agenda([("01", 45), ("02", 60), ("03", 75), ("04", 60)], FULL_DAY)
    >>> [(clock(slot.start), slot.kind) for slot in plan.slots[-3:]]
    [('12:45', 'lunch'), ('13:45', 'lesson'), ('14:45', 'closing')]
    >>> agenda([("07", 300)], HALF_DAY).left
    ('07',)
    """
    now = day.start
    slots = [Slot(now, OPENING, "opening")]
    now += OPENING
    since_pause, lunched = OPENING, False
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


def session_minutes(markdown: str) -> int:
    """The session length in ``markdown``, a lesson's title cell: the whole minutes of its line
    ``<!-- session: 45 min -->``, the time it takes to teach the lesson and work its exercises.

    Raises `NotebookError`, saying what to write, when there is no such line, more than one, or
    it does not give whole minutes within `SESSION_LIMITS`.

    >>> session_minutes("# 01 Leaves\\n\\n<!-- outcome: tell leaves -->\\n<!-- session: 45 min -->")
    45
    >>> try:
    ...     session_minutes("# 01 Leaves\\n\\n<!-- session: about an hour -->")
    ... except NotebookError as error:
    ...     print(error)
    the session line says 'about an hour': write whole minutes, as in `<!-- session: 45 min -->`
    """
    found = _SESSION.findall(markdown)
    if not found:
        raise NotebookError(
            f"no session line. Put {_EXAMPLE} beside the outcome in the cell with the lesson's "
            "`# ` title: the minutes it takes to teach the lesson and work its exercises, which "
            "the facilitator's guide plans the day with"
        )
    if len(found) > 1:
        raise NotebookError(f"{len(found)} session lines in the title cell; keep one")
    text = " ".join(found[0].split())
    match = _MINUTES.fullmatch(text)
    if match is None:
        raise NotebookError(
            f"the session line says {text!r}: write whole minutes, as in {_EXAMPLE}"
        )
    minutes = int(match.group(1))
    low, high = SESSION_LIMITS
    if not low <= minutes <= high:
        raise NotebookError(
            f"a session of {minutes} min: give a lesson between {low} and {high} minutes, or "
            "split it"
        )
    return minutes


@dataclass(frozen=True)
class Demo:
    """A cell worth running in front of the room: its number among the notebook's code cells,
    which is the ``[N]`` Jupyter shows beside it after a run from the top, the heading it is
    under, and what it shows."""

    cell: int
    heading: str
    shows: str


def demo_cells(nb: NotebookNode) -> tuple[Demo, ...]:
    """The notebook's demonstration cells, in order: code cells whose cell metadata is
    ``{"course": {"demo": "what it shows"}}``.

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
            demos.append(Demo(code_cells, heading, " ".join(shows.split())))
        if cell.cell_type == "markdown":
            heading = (markdown_headings(cell.source) or [heading])[-1]
    return tuple(demos)


@dataclass(frozen=True)
class LessonPlan:
    """What the guide says about one lesson: its file name and title, its outcome, its session
    in minutes (None for `PRE_WORK`, sent home), its demonstration cells and its exercises."""

    name: str
    title: str
    outcome: str
    minutes: int | None
    demos: tuple[Demo, ...] = ()
    exercises: tuple[Exercise, ...] = ()

    @property
    def number(self) -> str:
        """The lesson's two-digit number, ``"01"``."""
        return self.name[:2]


def lesson_plan(
    nb: NotebookNode, name: str, title: str, outcome: str, title_cell: str
) -> LessonPlan:
    """The plan of the lesson ``nb`` in the file ``name``, whose title cell's markdown is
    ``title_cell``: its session length (`session_minutes`, none for `PRE_WORK`), its
    demonstration cells and its exercises from ``course_lib.checks``.

    >>> from nbformat.v4 import new_notebook
    >>> title = "# 01 X\\n<!-- outcome: count -->\\n<!-- session: 45 min -->"
    >>> plan = lesson_plan(new_notebook(), "01_x.ipynb", "01 X", "count", title)
    >>> plan.minutes, [exercise.id for exercise in plan.exercises][:2]
    (45, ['01.count_params', '01.leaf_paths'])
    """
    number = name[:2]
    minutes = None if number == PRE_WORK else session_minutes(title_cell)
    return LessonPlan(name, title, outcome, minutes, demo_cells(nb), exercises(number))


# ---------------------------------------------------------------------------------------------
# The guide in markdown


@dataclass(frozen=True)
class _Place:
    """Where the guide is written: its links' prefix from there, the level of its top headings,
    and how it points at the room's usage and at the Colab and Binder links."""

    prefix: str
    level: int
    room: str
    launch: str


_README = _Place(
    prefix="",
    level=3,
    room=(
        "How to start it, and the line learners run to join, are in [The workshop room]"
        "(#the-workshop-room-who-is-stuck-on-what-live) below"
    ),
    launch=(
        'each lesson and exercise notebook has an "Open in Colab" badge, and the website\'s '
        "pages have Binder and Colab links, once the course's repository is named (see "
        "[Colab and Binder](#colab-and-binder))"
    ),
)
_SITE = _Place(
    prefix="../",
    level=2,
    room=(
        "How to start it, and the line learners run to join, are on the "
        "[instructor page](instructor.md)"
    ),
    launch=(
        "the launch menu of each lesson and exercise page (the rocket at its top) opens it on "
        "Binder or Colab, once the course's repository is named (README, section *Colab and "
        "Binder*)"
    ),
)


def _wrap(text: str, indent: str = "") -> list[str]:
    """A paragraph or list item as lines of at most `WIDTH` characters (the README's width),
    broken only at spaces, the lines after the first indented by ``indent``."""
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


def _checklist(plans: Sequence[LessonPlan], where: _Place) -> list[str]:
    pre_work = next((plan for plan in plans if plan.number == PRE_WORK), None)
    home = "the first lesson"
    if pre_work is not None:
        home = f"[{pre_work.title}]({where.prefix}notebooks/{pre_work.name}) (lesson {PRE_WORK})"
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
            f"{where.room}."
        ),
        (
            "- **A broken laptop.** Do not repair an installation while the room waits: the "
            "learner opens the lesson on Colab or Binder and goes on from there. Colab installs "
            "the course into its own kernel; Binder builds the course's exact environment, "
            "which takes minutes the first time, so open one Binder link yourself the day "
            f"before. The links: {where.launch}. A kernel in the cloud cannot reach a room on "
            "your local network, so those learners stay off the dashboard unless the room runs "
            "on a host they can reach."
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


def _agenda_table(
    plan: Agenda, by_number: dict[str, LessonPlan], where: _Place, heading: str
) -> list[str]:
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
        f"{heading} {plan.day.name}, {clock(plan.day.start)}–{clock(plan.day.end)}",
        "",
        "| time | what |",
        "|---|---|",
    ]
    for slot in plan.slots:
        if slot.kind == "lesson":
            lesson = by_number[slot.lesson]
            text = f"[{lesson.title}]({where.prefix}notebooks/{lesson.name})"
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


def _agendas(plans: Sequence[LessonPlan], where: _Place) -> list[str]:
    heading = "#" * (where.level + 1)
    sessions = [(plan.number, plan.minutes) for plan in plans if plan.minutes is not None]
    by_number = {plan.number: plan for plan in plans}
    rows = _wrap(
        (
            "A session is one lesson taught live from its notebook, then its exercise notebook "
            "worked in the room while the checks give hints; its length is the lesson "
            "author's. A day opens with "
            f"{duration(OPENING)} to welcome the room and see that everyone is set up, takes a "
            f"{duration(BREAK)} break rather than teach more than {duration(BREAK_AFTER)} "
            f"without one (a {duration(LUNCH)} lunch from {clock(LUNCH_FROM)} on a full day), "
            f"and closes with {duration(CLOSING)} of questions. The lessons go in order: each "
            "builds on the ones before."
        ),
    )
    total = sum(minutes for _, minutes in sessions)
    days = _days_needed(sessions, FULL_DAY)
    if sessions:
        summary = f"The {len(sessions)} sessions take {duration(total)} in all" + (
            f": {days} full days teach the whole course." if days and days > 1 else "."
        )
        rows += ["", *_wrap(summary)]
    for day in (HALF_DAY, FULL_DAY):
        rows += ["", *_agenda_table(agenda(sessions, day), by_number, where, heading)]
    return rows


def _lesson_section(plan: LessonPlan, where: _Place) -> list[str]:
    heading = "#" * (where.level + 1)
    link = f"{where.prefix}notebooks/{plan.name}"
    if plan.minutes is None:
        rows = [
            f"{heading} {plan.title} (sent home in advance)",
            "",
            *_wrap(
                f"[The lesson]({link}). Learners run it at home before the day, so that they "
                "arrive with a working environment; the room's ready list shows who did."
            ),
        ]
    else:
        rows = [f"{heading} {plan.title} ({duration(plan.minutes)})", "", f"[The lesson]({link})"]
        if plan.exercises:
            rows[-1] += f" · [its exercises]({where.prefix}exercises/{plan.name})"
        rows[-1] += "."
    rows += ["", *_wrap(f"**Outcome:** *you will be able to* {plan.outcome}.")]
    if plan.demos:
        rows += ["", "**Run live:**", ""]
        for demo in plan.demos:
            under = f" (under *{demo.heading}*)" if demo.heading else ""
            rows += _wrap(f"- `[{demo.cell}]` {demo.shows}{under}", "  ")
    if plan.exercises:
        points = sum(exercise.points for exercise in plan.exercises)
        count = len(plan.exercises)
        rows += [
            "",
            f"**Exercises:** {count}, worth {points} points.",
            "",
            "| exercise | points | typical mistakes its check recognises |",
            "|---|---|---|",
        ]
        for exercise in plan.exercises:
            mistakes = "; ".join(exercise.mistakes) or "none named yet"
            rows.append(
                f"| `{exercise.id}`: {_cell(exercise.title)} | {exercise.points} | "
                f"{_cell(mistakes)} |"
            )
    return rows


def _guide(plans: Sequence[LessonPlan], where: _Place) -> str:
    heading = "#" * where.level
    exercises_in_all = [exercise for plan in plans for exercise in plan.exercises]
    points = sum(exercise.points for exercise in exercises_in_all)
    lines = [
        f"{heading} Before the day: the room checklist",
        "",
        *_checklist(plans, where),
        "",
        f"{heading} Agendas",
        "",
        *_agendas(plans, where),
        "",
        f"{heading} Lesson by lesson",
        "",
        *_wrap(
            f"{len(plans)} lessons, {len(exercises_in_all)} exercises worth {points} points. "
            "The cells to run live are numbered as Jupyter numbers them in a run from the "
            "top, `[1]` being the hidden setup cell, and each says what it shows: run it, "
            "then read its output with the room. Each exercise's row names the typical "
            "mistakes its check recognises and answers with a hint of its own: what to listen "
            "for while the room works."
        ),
    ]
    for plan in plans:
        lines += ["", *_lesson_section(plan, where)]
    return "\n".join(lines)


def readme_guide(plans: Sequence[LessonPlan]) -> str:
    """The guide as ``README.md`` holds it, between `GUIDE_BEGIN` and `GUIDE_END`: ``###``
    sections under the README's ``## Teaching a live workshop``, links from the course folder.

    >>> plans = [LessonPlan("01_leaves.ipynb", "01 Leaves", "tell leaves from nodes", 45)]
    >>> guide = readme_guide(plans)
    >>> print(guide[guide.index("#### 01"):])
    #### 01 Leaves (45 min)
    <BLANKLINE>
    [The lesson](notebooks/01_leaves.ipynb).
    <BLANKLINE>
    **Outcome:** *you will be able to* tell leaves from nodes.
    """
    return _guide(plans, _README)


def site_page(plans: Sequence[LessonPlan]) -> str:
    """The website's page ``docs/facilitator.md``: a title, a short introduction, and the guide,
    its sections at ``##``, its links from ``docs/``."""
    intro = (
        "How to teach the course live: a workshop of half a day or a whole day, where everyone "
        "works through the same lessons and exercises at once. It says what to prepare, plans "
        "the day from each lesson's session length, and for each lesson lists the cells worth "
        "running in front of the room and the mistakes its exercises' checks recognise. It is "
        "made from the lessons and their exercises, as the README's section *Teaching a live "
        "workshop* is."
    )
    comment = (
        "<!-- Generated by `make navigation` from the lessons and their exercises: edits to\n"
        "     this page are overwritten. -->"
    )
    intro_lines = "\n".join(_wrap(intro))
    return f"# Facilitator's guide\n\n{comment}\n\n{intro_lines}\n\n{_guide(plans, _SITE)}\n"
