"""``python -m course_tools.room serve ROOM [--host H] [--port P] ...``."""

import sys

from . import main

sys.exit(main())
