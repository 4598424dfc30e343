"""The lesson sections that hints send a learner back to, one constant per heading.

Each is ``"NN Heading"``: the lesson's number and the heading as the notebook writes it (a
:class:`Mistake`'s and an :class:`Exercise`'s ``reread``). The tests hold every constant to a
heading of its lesson, so a renamed heading fails a test before a learner meets it.

>>> SGD_UPDATE
'02 Several trees at once: the SGD update'
"""

# Lesson 01, what is a pytree.
CONTAINERS_AND_LEAVES = "01 Containers and leaves"
WHICH_NODES = "01 Which objects are nodes?"
PYTREEDEF = "01 The structure: a `PyTreeDef`"
APART_AND_BACK = "01 Taking a tree apart and putting it back"
PITFALL_1 = "01 Pitfall 1: `None` is an empty subtree, not a leaf"
PITFALL_4 = "01 Pitfall 4: dict keys come back sorted"
PITFALL_14 = "01 Pitfall 14: a list is not a tuple, and a namedtuple is not a tuple"

# Lesson 02, mapping and SGD.
ONE_TREE = "02 One tree"
SGD_UPDATE = "02 Several trees at once: the SGD update"
TRAINING = "02 Training a model"
WHOLE_TREE_OPERATIONS = "02 Going further: more whole-tree operations"

# Lesson 03, registering classes.
UNKNOWN_CLASS_IS_A_LEAF = "03 A class JAX does not know is a leaf"
REGISTER_DATACLASS = "03 `register_dataclass`: the shortest way"
REGISTER_PYTREE_NODE = "03 `register_pytree_node`: two functions of your own"
REGISTER_PYTREE_NODE_CLASS = "03 `register_pytree_node_class`: the two functions as methods"
PITFALL_3 = "03 Pitfall 3: unflatten must accept any leaves, not only arrays"
PITFALL_9 = "03 Pitfall 9: node metadata is part of the structure"
KEY_PATHS = "03 Key paths: naming the children"
WEIGHT_DECAY = "03 Key paths at work: weight decay on the weights only"

# Lesson 04, static fields.
STATIC_IS_A_CACHE_KEY = "04 A static value is a cache key"
DATA_OR_CONFIGURATION = "04 Data or configuration?"
NEW_STATIC_VALUE = "04 Every new static value is a new compilation"
MARKING_STATIC = "04 Three ways to mark a field static"
WHAT_JIT_SEES = "04 What `jit` sees"
PITFALL_6 = "04 Pitfall 6: unhashable static arguments are refused, mutable ones serve stale code"
PITFALL_7 = "04 Pitfall 7: a plain dataclass is unhashable"
PITFALL_8 = "04 Pitfall 8: an array in static metadata fails, sometimes only on a later call"
PITFALL_24 = "04 Pitfall 24: a string stored as a leaf"
PITFALL_25 = "04 Pitfall 25: an int stored as a leaf becomes a tracer"

# Lesson 05, recompilation.
CACHE_KEY = "05 The cache key"
SHAPE_CHANGES = "05 Shape changes: every new shape is a new program"
PITFALL_5 = "05 Pitfall 5: a new dict key is a new structure and a retrace"
PITFALL_11 = "05 Pitfall 11: a Python scalar then a JAX scalar are two compilations (weak types)"
PITFALL_12 = (
    "05 Pitfall 12: a fresh lambda, `functools.partial` or bound method per call defeats the cache"
)

# Lesson 06, optimizer state.
MOMENTUM = "06 Momentum: a velocity tree shaped like the parameters"
ADAM = "06 Adam: one map over four trees"
CHECKPOINTS = "06 Saving and restoring a training state"
PITFALL_15 = "06 Pitfall 15: a `lax.scan` or `while_loop` carry must keep its structure exactly"

# Lesson 07, devices and abstract trees.
SHARDING_TREE = "07 A sharding tree"
RULES_BY_KEY_PATH = "07 Rules by key path"
PER_DEVICE_MEMORY = "07 Per-device memory"
TREES_WITHOUT_DATA = "07 Trees without data"
SHARDINGS_IN_JIT = "07 Shardings in `jit`"
PITFALL_17 = "07 Pitfall 17: a sharding tree must match the tree, or be a prefix of it"

# Lesson 08, trees through transformations.
SCAN = "08 `scan` over a tree of `xs`: layers as one loop"
COND_AND_SWITCH = "08 `cond` and `switch`: every branch returns the same tree"
CUSTOM_VJP = "08 `custom_vjp` with tree arguments"
VMAP_ENSEMBLE = "08 `vmap` over an ensemble, with `in_axes` and `out_axes` trees"
TREE_TOOLS = "08 Going further: the tree tools not shown yet"
PITFALL_21 = (
    "08 Pitfall 21: `cond`/`switch` branches returning different structures or dtypes, a "
    "literal's included"
)
PITFALL_22 = (
    "08 Pitfall 22: a `custom_vjp` backward rule returning a bare tree instead of a tuple of "
    "one cotangent tree per primal argument"
)

# Lesson 09, working by key path.
KEY_PATHS_AND_NAMES = "09 Key paths and names"
MASKS = "09 Masks: a tree of bools from a rule on names"
FREEZING = "09 Freezing a subtree, two ways"
PARTITION = "09 Partition and combine"
RATE_PER_GROUP = "09 A learning rate per group"
PITFALL_23 = "09 Pitfall 23: a mask whose structure does not match the params"
PITFALL_26 = "09 Pitfall 26: a rule written against `keystr`'s default format matches nothing"
