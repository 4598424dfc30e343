"""Pictures and widgets for the course: tree drawings, a tree explorer, a live training playground.

This layer sits on the core: it imports matplotlib and ipywidgets, and nothing in the core
imports it. Notebooks use ``from course_lib import viz``.
"""

from ._diff import draw_diff as draw_diff
from ._draw import draw_tree as draw_tree
from ._explorer import TreeExplorer as TreeExplorer
from ._figure import DescribedFigure as DescribedFigure
from ._sharding import DEVICE_COLORS as DEVICE_COLORS
from ._sharding import draw_device_bytes as draw_device_bytes
from ._sharding import draw_shardings as draw_shardings
from ._training import TrainingPlayground as TrainingPlayground
