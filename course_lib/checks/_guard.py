"""Keeping the course's own answers out of the learner's: ``course_lib`` names an exercise forbids.

Two ways, because each misses something the other catches:

* :func:`static_uses` reads source code (an exercise cell, or the function's own source) and
  finds ``cl.tree_size`` style attribute uses and ``from course_lib import tree_size`` imports.
* :func:`forbid` makes the named ``course_lib`` functions and classes refuse to run for as long as
  the learner's function runs, whatever name they were reached by (an alias made earlier, a
  ``getattr`` with a computed name). A refused call is recorded even if the learner's code
  swallows the exception, so catching it gains nothing.
* :func:`watch_references` notices a call to any exercise's ``reference`` (the course's own answer
  in ``_lessonNN.py``) while the learner's function runs. It matches code by file, line and name,
  so a copy of a lesson module imported before the grader reloaded it counts too.
"""

import ast
import contextlib
import re
import sys
import types
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import course_lib

_calls: list[str] = []


class ForbiddenCall(BaseException):
    """Raised by a forbidden ``course_lib`` function (a ``BaseException``: ``except Exception`` misses it)."""


def _called(name: str) -> None:
    _calls.append(name)
    raise ForbiddenCall(
        f"course_lib.{name} is the course's own version of what this exercise asks you to write"
    )


def _stub_code(name: str) -> types.CodeType:
    # The stub runs with the patched function's globals, so it reaches this module by import.
    namespace: dict[str, Any] = {}
    exec(  # noqa: S102 (a fixed template; `name` is a Python identifier from an Exercise)
        f"def {name}(*args, **kwargs):\n"
        f"    __import__('course_lib.checks._guard', fromlist=['_'])._called({name!r})\n",
        namespace,
    )
    return namespace[name].__code__


class _Patch:
    def __init__(self, name: str):
        if not name.isidentifier():
            raise ValueError(f"not a course_lib name: {name!r}")
        self.name = name
        self.target = getattr(course_lib, name)
        self.undo: list[Any] = []

    def apply(self) -> None:
        target = self.target
        if isinstance(target, types.FunctionType) and not target.__code__.co_freevars:
            original = target.__code__
            target.__code__ = _stub_code(self.name)
            self.undo.append(lambda: setattr(target, "__code__", original))
        elif isinstance(target, type) and ("__init__" in target.__dict__ or "__new__" in target.__dict__):
            # Only methods the class defines itself are swapped and put back: deleting a slot method
            # from a class leaves CPython's object.__new__/__init__ refusing arguments afterwards.
            name = self.name

            def refuse_init(instance: Any, *args: Any, **kwargs: Any) -> None:
                _called(name)

            def refuse_new(cls: type, *args: Any, **kwargs: Any) -> Any:
                _called(name)

            for method, stub in (("__init__", refuse_init), ("__new__", staticmethod(refuse_new))):
                if method in target.__dict__:
                    original = target.__dict__[method]
                    setattr(target, method, stub)
                    self.undo.append(lambda method=method, original=original: setattr(target, method, original))
        else:  # jitted or wrapped callables: swap the public attribute only
            original_attr = getattr(course_lib, self.name)

            def refuse_call(*args: Any, **kwargs: Any) -> Any:
                _called(self.name)

            setattr(course_lib, self.name, refuse_call)
            self.undo.append(lambda: setattr(course_lib, self.name, original_attr))

    def restore(self) -> None:
        while self.undo:
            self.undo.pop()()


@contextlib.contextmanager
def forbid(names: Iterable[str]) -> Iterator[list[str]]:
    """Make the named ``course_lib`` functions and classes refuse to run inside the block.

    Yields the list of refused calls (by name), filled in as they happen.

    >>> with forbid(["tree_size"]) as refused:
    ...     try:
    ...         course_lib.tree_size([1.0])
    ...     except BaseException:
    ...         pass
    >>> refused, course_lib.tree_size([1.0])
    (['tree_size'], 1)
    """
    patches = [_Patch(name) for name in names]
    start = len(_calls)
    seen: list[str] = []
    try:
        for patch in patches:
            patch.apply()
        yield seen
    finally:
        for patch in reversed(patches):
            patch.restore()
        seen.extend(_calls[start:])
        del _calls[start:]


REFERENCE = "reference"
"""The name :func:`watch_references` and :func:`static_uses` report for a use of an exercise's reference."""


def _code_key(code: types.CodeType) -> tuple[str, int, str]:
    return (code.co_filename, code.co_firstlineno, code.co_name)


_LESSON_MODULE = re.compile(r"course_lib\.checks\._lesson\d\d")


def _reference_keys() -> set[tuple[str, int, str]]:
    # Lessons already imported only: importing one here could fail or cost time, and a reference
    # of a lesson nobody imported cannot be called.
    keys = set()
    for name, module in list(sys.modules.items()):
        if _LESSON_MODULE.fullmatch(name):
            for exercise in getattr(module, "EXERCISES", ()):
                code = getattr(getattr(exercise, "reference", None), "__code__", None)
                if isinstance(code, types.CodeType):
                    keys.add(_code_key(code))
    return keys


@contextlib.contextmanager
def watch_references() -> Iterator[list[str]]:
    """Record (as ``"reference"``) any call of an exercise's reference made inside the block, in this thread."""
    keys = _reference_keys()
    seen: list[str] = []
    known: dict[types.CodeType, bool] = {}

    def hook(frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            hit = known.get(code)
            if hit is None:
                hit = known[code] = _code_key(code) in keys
            if hit and not seen:
                seen.append(REFERENCE)

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(previous)


_MAGIC = re.compile(r"^\s*[%!].*$", re.MULTILINE)


def parse_cell(source: str) -> ast.Module | None:
    """The AST of a notebook cell, with IPython ``%magic`` and ``!shell`` lines blanked; ``None`` if invalid."""
    try:
        return ast.parse(_MAGIC.sub("", source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _definition(tree: ast.Module, name: str) -> ast.AST | None:
    """The last top-level ``def``/``class`` called ``name`` (the one a notebook ends up with)."""
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            found = node
    return found


def static_uses(
    source: str, names: Iterable[str], aliases: Mapping[str, str] | None = None, within: str | None = None
) -> list[str]:
    """The forbidden ``course_lib`` names that ``source`` uses, sorted; ``"reference"`` for the course's answer.

    Finds ``<anything>.name`` attribute uses, ``from course_lib import name`` imports, any
    ``.reference`` or import from a ``course_lib.checks._lessonNN`` module, and bare uses
    of an alias of a forbidden name, imported in ``source`` or listed in ``aliases`` (``{alias:
    name}`` from other cells of the notebook, as :func:`imported_aliases` finds them). With
    ``within``, only the top-level definition of that name is read, so a cell that compares its
    answer with ``cl.tree_size`` outside the function is not taken for one that uses it.

    >>> static_uses("import course_lib as cl\\ndef f(t):\\n    return cl.tree_size(t)", ["tree_size"])
    ['tree_size']
    >>> static_uses("def f(t):\\n    return 0\\nassert f(1) == cl.tree_size(1)", ["tree_size"], within="f")
    []
    """
    wanted = set(names)
    tree = parse_cell(source)
    if tree is None:
        return []
    bound = {**(aliases or {}), **imported_aliases(source, wanted)}
    scope: ast.AST | None = tree if within is None else _definition(tree, within)
    if scope is None:
        return []
    found = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Attribute) and node.attr in wanted:
            found.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "course_lib":
            found.update(alias.name for alias in node.names if alias.name in wanted)
            if (node.module or "").startswith("course_lib.checks._lesson"):
                found.add(REFERENCE)
        elif isinstance(node, ast.Name) and node.id in bound:
            found.add(bound[node.id])
        elif isinstance(node, ast.Attribute) and node.attr == REFERENCE:
            found.add(REFERENCE)
    return sorted(n for n in found if n in wanted or n == REFERENCE)


def imported_aliases(source: str, names: Iterable[str]) -> dict[str, str]:
    """``{alias: name}`` for every ``from course_lib[...] import name [as alias]`` of a forbidden name."""
    wanted = set(names)
    tree = parse_cell(source)
    out: dict[str, str] = {}
    if tree is None:
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "course_lib":
            for alias in node.names:
                if alias.name in wanted:
                    out[alias.asname or alias.name] = alias.name
    return out
