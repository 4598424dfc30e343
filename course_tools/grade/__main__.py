"""``python -m course_tools.grade PATH... [--out DIR] [--timeout S] [--jobs N]``."""

import sys

from . import main

sys.exit(main())
