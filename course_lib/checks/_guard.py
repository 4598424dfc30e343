"""What an answer called: the course's own answers and forbidden packages, by identity, at run time.

:func:`watch` records, while a probe runs (``sys.setprofile``), each call made by the learner's code
that reaches

* a ``course_lib`` function or class the exercise forbids: its code objects, however it was reached
  (an alias bound in another cell, ``getattr`` with a computed name, a ``functools.partial``);
* any exercise's ``reference`` (the course's answer in ``_lessonNN.py``), matched by file, line
  and name, so a copy of a lesson module imported before the grader reloaded it counts too;
* a function of a forbidden package (``"optax"``): Python code whose file lies in the package's
  folder, or a C function whose ``__module__`` is the package.

Names never count: a field called ``momentum`` or a call of ``optax.sgd`` is not ``cl.sgd``.
Nothing is refused either: the call goes on, the answer is judged as usual, and the verdict is
``flagged`` with the line that made the call.

Whose call it is: from the caller, the hook walks up the stack past library frames (installed
packages, the standard library, ``course_lib``, code made by ``exec``) to the first frame that
decides. The learner's code (a notebook cell, a learner's file): the learner's call, at that line.
The probe's wrapper around the learner's function: that function *is* the forbidden one. The
probe itself, or a stand-in for another exercise (:func:`standing_in`): the course's own call, not
counted. A call into a forbidden package from a library that imports that package itself (JAX
calling NumPy) is that library's business, not the learner's.
"""

import ast
import contextlib
import hashlib
import importlib.util
import linecache
import os
import re
import sys
import tempfile
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import course_lib

from .._leaves import shorten

MAX_FLAGS = 5
_LINE_LIMIT = 120


def library_dirs(path: Iterable[str]) -> tuple[str, ...]:
    """The folders whose code is a library's, not the learner's: Python's own prefixes,
    ``course_lib``, and each folder of ``path`` that holds installed distributions (a
    ``*.dist-info``), such as a machine's own JAX on ``PYTHONPATH``, outside ``sys.prefix``.

    >>> os.path.join(os.path.realpath(sys.prefix), "") in library_dirs([])
    True
    """
    installed = []
    for folder in path:
        with contextlib.suppress(OSError):  # "" is the current folder, the learner's own
            if folder and any(name.endswith(".dist-info") for name in os.listdir(folder)):
                installed.append(folder)
    return tuple(
        os.path.join(os.path.realpath(folder), "")
        for folder in {
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            os.path.dirname(os.path.dirname(__file__)),
            *installed,
        }
    )


_LIBRARY_DIRS = library_dirs(sys.path)
# Cells of a kernel are files under ipykernel_<pid>/; code typed at a prompt or in a doctest is the
# learner's too.
_NOTEBOOK_FILES = (
    os.path.join(os.path.realpath(tempfile.gettempdir()), "ipykernel_"),
    "<ipython-input",
    "<cell",
    "<stdin>",
    "<doctest",
)


def is_learner_file(filename: str) -> bool:
    """Whether code from ``filename`` is the learner's: not an installed library, the standard
    library or ``course_lib``.

    >>> is_learner_file(course_lib.__file__), is_learner_file("/home/ada/homework.py")
    (False, True)
    >>> is_learner_file("<string>")
    False
    """
    if filename.startswith("<"):
        return filename.startswith(_NOTEBOOK_FILES[1:])
    real = os.path.realpath(filename)
    return real.startswith(_NOTEBOOK_FILES[0]) or not real.startswith(_LIBRARY_DIRS)


def code_id(text: str) -> str:
    """A short id of a cell's source, the same in the kernel (from ``linecache``) and in the grader.

    >>> code_id("x = 1\\n\\n") == code_id("x = 1")
    True
    """
    return hashlib.sha256(text.rstrip().encode("utf-8", "replace")).hexdigest()[:16]


# --- what is watched ---------------------------------------------------------------------------


def _codes_of(target: Any) -> set[types.CodeType]:
    """The code objects that run when ``target`` (a function or a class) is used."""
    if isinstance(target, types.FunctionType):
        return {target.__code__}
    codes: set[types.CodeType] = set()
    if isinstance(target, type):
        for value in vars(target).values():
            for inner in (value, getattr(value, "__func__", None), getattr(value, "fget", None)):
                if isinstance(inner, types.FunctionType):
                    codes.add(inner.__code__)
    return codes


def course_codes(names: Iterable[str]) -> dict[types.CodeType, str]:
    """``{code: "cl.name"}`` for the named ``course_lib`` functions and classes.

    >>> sorted(course_codes(["tree_size"]).values())
    ['cl.tree_size']
    """
    out: dict[types.CodeType, str] = {}
    for name in names:
        if not name.isidentifier() or not hasattr(course_lib, name):
            raise ValueError(f"not a course_lib name: {name!r}")
        for code in _codes_of(getattr(course_lib, name)):
            out[code] = f"cl.{name}"
    return out


def _code_key(code: types.CodeType) -> tuple[str, int, str]:
    return (code.co_filename, code.co_firstlineno, code.co_name)


_LESSON_MODULE = re.compile(r"course_lib\.checks\._lesson\d\d")


def reference_keys() -> dict[tuple[str, int, str], str]:
    """``{(file, line, name): "module.name"}`` of the references of the lesson modules imported.

    Lessons already imported only: importing one here could fail or cost time, and a reference of
    a lesson nobody imported cannot be called.
    """
    keys = {}
    for name, module in list(sys.modules.items()):
        if _LESSON_MODULE.fullmatch(name):
            for exercise in getattr(module, "EXERCISES", ()):
                reference = getattr(exercise, "reference", None)
                for code in _codes_of(reference):
                    keys[_code_key(code)] = f"{name}.{getattr(reference, '__name__', 'reference')}"
    return keys


def package_dirs(package: str) -> tuple[str, ...]:
    """The folders (or file) a top-level package loads from, unimported; ``()`` if not installed.

    >>> package_dirs("course_lib") == (os.path.join(os.path.dirname(course_lib.__file__), ""),)
    True
    """
    if not package.isidentifier():
        raise ValueError(f"not a package name: {package!r}")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return ()
    if spec is None:
        return ()
    if spec.submodule_search_locations:
        places = [os.path.join(path, "") for path in spec.submodule_search_locations]
    elif spec.origin and os.path.isfile(spec.origin):
        places = [spec.origin]
    else:
        return ()
    return tuple(
        dict.fromkeys(
            places
            + [
                os.path.join(os.path.realpath(p), "") if p.endswith(os.sep) else os.path.realpath(p)
                for p in places
            ]
        )
    )


# --- the watch ---------------------------------------------------------------------------------

_STOP: set[types.CodeType] = set()
_ITSELF: set[types.CodeType] = set()


def stops_here(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``fn`` as course code calling on its own behalf: its calls are never the learner's."""
    _STOP.add(fn.__code__)
    return fn


def is_the_learners_function(code: types.CodeType) -> None:
    """Mark ``code`` as the probe's wrapper of the learner's function: its call is the function."""
    _ITSELF.add(code)


def _line_of(filename: str, lineno: int) -> str:
    text = linecache.getline(filename, lineno).strip()
    return shorten(text, _LINE_LIMIT)


def _where(caller: types.FrameType | None) -> tuple[str, int] | None:
    """Where the learner made this call: ``(file, line)``, ``("", 0)`` for the learner's function
    itself, ``None`` if not the learner's."""
    frame = caller
    while frame is not None:
        code = frame.f_code
        if code in _STOP:
            return None
        if code in _ITSELF:
            return ("", 0)
        if is_learner_file(code.co_filename):
            return (code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return None


class Watch:
    """What one :func:`watch` block saw: ``flags``, a list of plain call records (see
    ``_spec.FLAG_FIELDS``)."""

    def __init__(
        self,
        courses: Mapping[types.CodeType, str],
        references: Mapping[tuple[str, int, str], str],
        packages: Iterable[str],
    ):
        self.courses, self.references = courses, references
        self.packages = {package: package_dirs(package) for package in packages}
        self.flags: list[dict[str, Any]] = []
        self._kinds: dict[types.CodeType, tuple[str, str] | None] = {}
        self._imports: dict[tuple[types.CodeType, str], bool] = {}
        self._seen: set[tuple[str, str, int]] = set()

    def _kind(self, code: types.CodeType) -> tuple[str, str] | None:
        if code in self.courses:
            return ("course", self.courses[code])
        reference = self.references.get(_code_key(code))
        if reference is not None:
            return ("reference", reference)
        for package, places in self.packages.items():
            if places and code.co_filename.startswith(places):
                return ("module", package)
        return None

    def _imports_package(self, frame: types.FrameType, package: str) -> bool:
        """Whether ``frame``'s library code imports ``package`` (then its calls are its own)."""
        key = (frame.f_code, package)
        if key not in self._imports:
            self._imports[key] = any(
                isinstance(value, types.ModuleType)
                and (value.__name__ == package or value.__name__.startswith(package + "."))
                for value in list(frame.f_globals.values())
            )
        return self._imports[key]

    def _record(self, kind: str, reached: str, caller: types.FrameType | None) -> None:
        if len(self.flags) >= MAX_FLAGS:
            return
        where = _where(caller)
        if where is None:
            return
        filename, lineno = where
        if (reached, filename, lineno) in self._seen:
            return
        self._seen.add((reached, filename, lineno))
        cell = code_id("".join(linecache.getlines(filename))) if filename else ""
        text = _line_of(filename, lineno) if filename else ""
        self.flags.append(
            {
                "reached": reached,
                "kind": kind,
                "file": filename,
                "line": lineno,
                "text": text,
                "cell": cell,
            }
        )

    def _module_call(self, package: str, reached: str, caller: types.FrameType | None) -> None:
        if caller is None:
            return
        code = caller.f_code
        places = self.packages[package]
        if code.co_filename.startswith(places):
            return  # the package calling itself
        if (
            not is_learner_file(code.co_filename)
            and code not in _ITSELF
            and self._imports_package(caller, package)
        ):
            return
        self._record("module", reached, caller)

    def hook(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            try:
                kind = self._kinds[code]
            except KeyError:
                kind = self._kinds[code] = self._kind(code)
            if kind is None:
                return
            if kind[0] == "module":
                module = frame.f_globals.get("__name__", kind[1])
                self._module_call(kind[1], f"{module}.{code.co_qualname}", frame.f_back)
            else:
                self._record(kind[0], kind[1], frame.f_back)
        elif event == "c_call" and self.packages:
            module = getattr(arg, "__module__", None)
            if not isinstance(module, str):
                owner = getattr(arg, "__self__", None)
                module = owner.__name__ if isinstance(owner, types.ModuleType) else ""
            top = module.partition(".")[0]
            if top in self.packages:
                self._module_call(top, f"{module}.{getattr(arg, '__name__', '?')}", frame)


@contextlib.contextmanager
def watch(forbidden: Iterable[str] = (), packages: Iterable[str] = ()) -> Iterator[Watch]:
    """Record, in this thread, the learner's calls of the named ``course_lib`` functions, of any
    reference, and into ``packages``.

    >>> def count_params(tree):
    ...     return course_lib.tree_size(tree)
    >>> with watch(["tree_size"]) as seen:
    ...     n = count_params([1.0, 2.0])
    >>> n, [(flag["reached"], flag["text"]) for flag in seen.flags]
    (2, [('cl.tree_size', 'return course_lib.tree_size(tree)')])
    """
    state = Watch(course_codes(forbidden), reference_keys(), packages)
    previous = sys.getprofile()
    sys.setprofile(state.hook)
    try:
        yield state
    finally:
        if (
            sys.getprofile() != state.hook
        ):  # the learner's code replaced the watch: what it called is unknown
            state.flags.append(
                {
                    "reached": "sys.setprofile",
                    "kind": "tamper",
                    "file": "",
                    "line": 0,
                    "text": "",
                    "cell": "",
                }
            )
        sys.setprofile(previous)


# --- stand-ins for other exercises' functions --------------------------------------------------


@stops_here
def _through(stand_in: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return stand_in(*args, **kwargs)


def _stand_in_for(name: str, stand_in: Callable[..., Any]) -> Callable[..., Any]:
    def helper(*args: Any, **kwargs: Any) -> Any:
        return _through(stand_in, args, kwargs)

    helper.__name__ = helper.__qualname__ = name
    return helper


@contextlib.contextmanager
def standing_in(
    namespace: dict[str, Any] | None, helpers: Mapping[str, Callable[..., Any]]
) -> Iterator[list[str]]:
    """Replace each callable ``namespace[name]`` by ``helpers[name]`` in the block, then restore it.

    Yields the names replaced. What a stand-in calls is the course's own call (never flagged).

    >>> space = {"double": lambda x: 3 * x}
    >>> with standing_in(space, {"double": lambda x: 2 * x, "absent": len}) as names:
    ...     names, space["double"](4)
    (['double'], 8)
    >>> space["double"](4)
    12
    """
    saved: dict[str, Any] = {}
    if namespace is not None:
        for name in helpers:
            if callable(namespace.get(name)):
                saved[name] = namespace[name]
    try:
        for name in saved:
            namespace[name] = _stand_in_for(name, helpers[name])  # type: ignore[index]  # a module's __dict__ is writable
        yield list(saved)
    finally:
        for name, original in saved.items():
            namespace[name] = original  # type: ignore[index]  # a module's __dict__ is writable


# --- reading cells -----------------------------------------------------------------------------

_MAGIC = re.compile(r"^\s*[%!].*$", re.MULTILINE)


def parse_cell(source: str) -> ast.Module | None:
    """A notebook cell's AST, ``%magic`` and ``!shell`` lines blanked; ``None`` if it is invalid."""
    try:
        return ast.parse(_MAGIC.sub("", source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
