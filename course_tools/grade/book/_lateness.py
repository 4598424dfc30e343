"""Due dates, lateness and the optional late penalty.

``--due`` takes an ISO 8601 time (``2026-12-01T23:59``, ``2026-12-01T23:59+01:00``). A time without
an offset, like a zip member's time, is read in the grader's local time zone (the ``TZ`` variable;
``TZ=Europe/Berlin course-grade ...``), and the gradebook records the due time with its offset.

A submission is late when its time (the newest of the student's files: the LMS download's stored
time, else the file's modification time) is after the due time, or when Canvas marked it ``LATE``
(then, if the times do not show it, it is late by an unknown time and counts as one day). The
penalty, when asked for, is ``--late-penalty`` percent of the points per started day late, at most
``--late-cap`` percent.
"""

import argparse
import math
from dataclasses import dataclass
from datetime import datetime

DAY = 86400.0


def parse_due(text: str) -> datetime:
    """An aware datetime from ``--due``; a naive time is local time.

    >>> parse_due("2026-12-01T23:59+01:00").isoformat()
    '2026-12-01T23:59:00+01:00'
    """
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 time such as 2026-12-01T23:59 or 2026-12-01T23:59+01:00"
        ) from None
    return when if when.tzinfo else when.astimezone()


@dataclass(frozen=True)
class Lateness:
    """How late one student's submission was: ``seconds`` is None when only the LMS says it was
    late."""

    seconds: float | None
    days: int

    def describe(self) -> str:
        """Words for the feedback: ``late by 1 day 2 h 5 min``.

        >>> Lateness(93900.0, 2).describe(), Lateness(None, 1).describe()
        ('late by 1 day 2 h 5 min', 'late (marked late by the LMS)')
        """
        if self.seconds is None:
            return "late (marked late by the LMS)"
        minutes = math.ceil(self.seconds / 60)
        d, rest = divmod(minutes, 1440)
        h, m = divmod(rest, 60)
        parts = [f"{d} day{'s' if d != 1 else ''}"] if d else []
        parts += [f"{h} h"] if h else []
        parts += [f"{m} min"] if m or not parts else []
        return "late by " + " ".join(parts)

    def hours(self) -> str:
        return "" if self.seconds is None else f"{self.seconds / 3600:.2f}"


def lateness(submitted: str | None, lms_late: bool, due: datetime | None) -> Lateness | None:
    """The lateness of a submission made at ``submitted`` (ISO), or None when it was on time or
    nothing says.

    >>> lateness("2026-12-02T00:30:00+00:00", False, parse_due("2026-12-01T23:59+00:00"))
    Lateness(seconds=1860.0, days=1)
    """
    if due is not None and submitted is not None:
        seconds = (datetime.fromisoformat(submitted) - due).total_seconds()
        if seconds > 0:
            return Lateness(seconds, math.ceil(seconds / DAY))
    return Lateness(None, 1) if lms_late else None


def penalty(
    points: float, late: Lateness | None, percent_per_day: float, cap_percent: float
) -> float:
    """Points taken off ``points`` for ``late``, rounded to 2 decimals.

    >>> penalty(8, Lateness(1860.0, 1), 10, 50), penalty(8, Lateness(9 * DAY, 9), 10, 50)
    (0.8, 4.0)
    """
    if late is None or percent_per_day <= 0:
        return 0.0
    return round(points * min(late.days * percent_per_day, cap_percent) / 100, 2)
