"""The live room of a workshop, ``course-room serve``: learners' self-checks on the instructor's
dashboard as they happen.

The learner's side is ``course_lib.checks.join_room`` (standard library only); this package is the
instructor's side, a tornado application on the instructor's machine (or behind a reverse proxy):

* ``_events.py``: the room's events, one class per kind with its own fields, and the schema a
  learner's event is checked against;
* ``_store.py``: the room's SQLite file (its join code, tokens, settings and every event, the
  dashboards' actions included, with whose they were), kept private;
* ``_state.py``: what the dashboard shows, worked out from the events: who needs help, ranked,
  the room's common mistakes, who is ready, the current block of exercises; and the minutes each
  exercise is given;
* ``_app.py``: the web application: validation, limits on rates, sizes and connections, the
  three secrets (the join code, the instructor's token, the helpers'), the live stream, the
  dashboard's actions (helped, rename, merge, remove, undo, start a block);
* ``_cli.py``: the command line; ``static/``: the dashboard's page, script and style.

It imports ``course_lib.checks`` (the exercises and the rule for names) and nothing of the grader.
"""

from ._app import Limits as Limits
from ._app import Room as Room
from ._app import make_app as make_app
from ._cli import main as main
from ._state import RoomState as RoomState
from ._store import RoomStore as RoomStore
