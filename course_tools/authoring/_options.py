"""Command-line options that several authoring commands share, written once so that their help
reads the same in each.

>>> parser = argparse.ArgumentParser()
>>> add_root_option(parser)
>>> parser.parse_args([]).root
PosixPath('.')
>>> parser.parse_args(["--root", "course"]).root
PosixPath('course')
"""

import argparse
from pathlib import Path


def add_root_option(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` the option ``--root``: the course folder, the working directory unless
    told otherwise, as a `Path` in ``args.root``.

    >>> parser = argparse.ArgumentParser(prog="tool")
    >>> add_root_option(parser)
    >>> "course folder (default: the working directory)" in parser.format_help()
    True
    """
    parser.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="course folder (default: the working directory)",
    )
