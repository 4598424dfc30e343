"""Tools for course authors; they edit notebook files and are never imported by the lessons.

Each module is a command (``python -m course_tools.authoring.<name> --help``):

* `course_tools.authoring.exercises`: write ``exercises/`` from ``solutions/`` (``make exercises``).
* `course_tools.authoring.navigation`: the generated navigation cell of every notebook, lesson
  00's contents, README's lesson table, the pitfall index (``docs/pitfalls.md``), and the
  facilitator's guide that `course_tools.authoring.facilitator` makes from the lessons, on the
  website (``make navigation``).
* `course_tools.authoring.live_path`: each lesson's live path (what a workshop teaches) and the
  session it takes, by a stated rule, against its budget.
* `course_tools.authoring.site`: the course's website, built from the committed notebooks
  (``make site``).
* `course_tools.authoring.execute`: re-execute notebooks in place, one fresh kernel each, and time
  them (``make notebooks``).
"""
