"""course_lib: the small pytree library behind the pytree course.

The core (this namespace) needs only JAX and NumPy. Pictures and widgets live in
``course_lib.viz`` and learners' self-checks in ``course_lib.checks``; importing ``course_lib``
loads neither. The autograder and the authoring tools are a package of their own,
``course_tools``, which imports this one and is never imported by it.
"""

# First, before any module that uses newer JAX APIs: importing it checks the running JAX against the
# course's floor and, below it, raises one ImportError that names both versions.
from . import _jax_version as _jax_version
from ._compile import CompileCounter as CompileCounter
from ._compile import TooManyCompilesError as TooManyCompilesError
from ._compile import capture_cache_misses as capture_cache_misses
from ._compile import compile_limit as compile_limit
from ._compile import count_compiles as count_compiles
from ._device import DeviceReport as DeviceReport
from ._device import device_report as device_report
from ._errors import TreeLeafError as TreeLeafError
from ._errors import TreeStructureError as TreeStructureError
from ._flat import FlatLayout as FlatLayout
from ._flat import FlatTree as FlatTree
from ._inspect import TreeDiff as TreeDiff
from ._inspect import TreeSummary as TreeSummary
from ._inspect import assert_trees_close as assert_trees_close
from ._inspect import tree_diff as tree_diff
from ._inspect import tree_summary as tree_summary
from ._jax_version import JAX_FLOOR as JAX_FLOOR
from ._jax_version import jax_at_least as jax_at_least
from ._jaxpr import inner_jaxprs as inner_jaxprs
from ._optim import AdamState as AdamState
from ._optim import FrozenState as FrozenState
from ._optim import MomentumState as MomentumState
from ._optim import MultiTransformState as MultiTransformState
from ._optim import Optimizer as Optimizer
from ._optim import SGDState as SGDState
from ._optim import adam as adam
from ._optim import frozen as frozen
from ._optim import masked as masked
from ._optim import momentum as momentum
from ._optim import multi_transform as multi_transform
from ._optim import sgd as sgd
from ._paths import combine as combine
from ._paths import leaf_name as leaf_name
from ._paths import partition as partition
from ._paths import tree_labels as tree_labels
from ._paths import tree_mask as tree_mask
from ._serialize import load_tree as load_tree
from ._serialize import save_tree as save_tree
from ._sharding import tree_bytes_per_device as tree_bytes_per_device
from ._tree_math import tree_add as tree_add
from ._tree_math import tree_add_scale as tree_add_scale
from ._tree_math import tree_allclose as tree_allclose
from ._tree_math import tree_bytes as tree_bytes
from ._tree_math import tree_cast as tree_cast
from ._tree_math import tree_full_like as tree_full_like
from ._tree_math import tree_norm as tree_norm
from ._tree_math import tree_ones_like as tree_ones_like
from ._tree_math import tree_scale as tree_scale
from ._tree_math import tree_size as tree_size
from ._tree_math import tree_sub as tree_sub
from ._tree_math import tree_sum as tree_sum
from ._tree_math import tree_vdot as tree_vdot
from ._tree_math import tree_zeros_like as tree_zeros_like
from ._typing import PyTree as PyTree

__version__ = "0.1.0"
