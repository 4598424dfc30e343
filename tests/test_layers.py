"""The core stays light: importing course_lib loads no pictures, widgets or notebook tools."""

import json
import subprocess
import sys

HEAVY = {"matplotlib", "ipywidgets", "nbformat", "nbclient"}

# One fresh interpreter: what is loaded after `import course_lib` (and a core call), then after
# importing nbformat too, which shows that the check would notice a heavy import.
PROBE = """
import json, sys
def top_level():
    return sorted({name.split(".")[0] for name in sys.modules})
import course_lib
course_lib.tree_summary({"w": [1.0]})
after_core = top_level()
import nbformat
print(json.dumps([after_core, top_level()]))
"""


def test_import_course_lib_loads_no_heavy_layers() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    after_core, after_nbformat = (
        set(names) for names in json.loads(result.stdout.splitlines()[-1])
    )
    assert {"course_lib", "jax", "numpy"} <= after_core
    assert not after_core & HEAVY, f"import course_lib pulled in {sorted(after_core & HEAVY)}"
    assert "nbformat" in after_nbformat
