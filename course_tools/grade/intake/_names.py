"""File names for students and notebooks: Unicode kept, and never two students in one folder.

A name is NFC-normalised and keeps its letters (``Jürgen`` stays ``Jürgen``); only characters a file
system may reject or misread (``/``, ``:``, control characters, a leading dot) become ``_``. Two
students whose folder names would still meet on some file system (compared NFC-normalised and
casefolded, as macOS and Windows compare them) both get their student key appended, so each sees
which folder is theirs.
"""

import hashlib
import re
import unicodedata
from collections import defaultdict

_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]+')
MAX_NAME = 100


def safe_name(text: str) -> str:
    """A file or folder name made from ``text``: NFC, Unicode letters kept, no folders, no hidden
    files.

    >>> safe_name("Jürgen Schmidt"), safe_name("../etc/passwd"), safe_name("...")
    ('Jürgen Schmidt', 'etc_passwd', 'unnamed')
    """
    name = _UNSAFE.sub("_", unicodedata.normalize("NFC", text)).strip(" ._") or "unnamed"
    return name[:MAX_NAME].rstrip(" .")


def folding(name: str) -> str:
    """How a case-insensitive, normalising file system compares ``name``.

    >>> folding("ALICE") == folding("alice"), folding("Jürgen") == folding("Jörgen")
    (True, False)
    """
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", name).casefold())


def _tag(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:8]


def student_folders(names: dict[str, str]) -> dict[str, str]:
    """A distinct folder name for each student key, from ``{key: display name}``.

    Students whose folders would meet get their key appended; when the keys too differ only in case,
    a short hash of the key instead, so the folders differ on any file system.

    >>> student_folders({"1": "Ann", "2": "ann", "3": "Bo"})
    {'1': 'Ann (1)', '2': 'ann (2)', '3': 'Bo'}
    >>> student_folders({"Ann": "Ann", "ann": "ann"})
    {'Ann': 'Ann (17239b6e)', 'ann': 'ann (49915e0d)'}
    """
    wanted = {key: safe_name(name) for key, name in names.items()}
    groups: dict[str, list[str]] = defaultdict(list)
    for key, folder in wanted.items():
        groups[folding(folder)].append(key)
    out = {}
    for keys in groups.values():
        if len(keys) == 1:
            out[keys[0]] = wanted[keys[0]]
            continue
        readable = len({folding(safe_name(k)) for k in keys}) == len(keys)
        for key in keys:
            out[key] = safe_name(f"{wanted[key]} ({safe_name(key) if readable else _tag(key)})")
    taken: dict[str, str] = {}
    for key in sorted(out):
        # A disambiguated name that equals another student's plain name: the hash settles it.
        if folding(out[key]) in taken:
            out[key] = safe_name(f"{out[key]} {_tag(key)}")
        taken[folding(out[key])] = key
    return out
