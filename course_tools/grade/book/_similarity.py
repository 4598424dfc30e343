"""Answers to review: pairs of students with identical or near-identical answers, and copies of the
course's solution.

It flags for a human to look at; it never changes a grade. Per exercise, equal normalised answers
(see ``_answers.normalise``) are grouped by hash; distinct answers are compared only when MinHash
over token 3-shingles puts them in one band bucket, then confirmed by ``difflib``'s ratio. An answer
shared by more than :data:`COMMON` students is reported as a common answer, not as pairs. So the
cost grows with the number of students, not with its square. Ratios are of tokens, not characters.
"""

import difflib
import hashlib
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations

NEAR = 0.9
COMMON = 5
ROWS, BANDS = 4, 8
MAX_BUCKET = 20
MIN_TOKENS = 12  # shorter answers are alike by nature: only identical ones are paired
_TOKEN = re.compile(r"\w+|[^\w\s]")
_PRIME = (1 << 61) - 1
_SALTS = [
    (random.Random(i).randrange(1, _PRIME), random.Random(-i - 1).randrange(_PRIME))
    for i in range(ROWS * BANDS)
]


@dataclass(frozen=True)
class Pair:
    """Two students and the exercises where their answers match (ratio 1.0 when identical)."""

    a: str
    b: str
    matches: tuple[tuple[str, float], ...]


def _signature(tokens: list[str]) -> tuple[int, ...]:
    grams = {" ".join(tokens[i : i + 3]) for i in range(max(1, len(tokens) - 2))}
    hashes = [
        int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "big") for g in grams
    ]
    return tuple(min((a * h + b) % _PRIME for h in hashes) for a, b in _SALTS)


def _near_texts(texts: list[str]) -> list[tuple[int, int, float]]:
    buckets: dict[tuple[int, tuple[int, ...]], list[int]] = defaultdict(list)
    tokens = [_TOKEN.findall(text) for text in texts]
    for i, mine in enumerate(tokens):
        if len(mine) < MIN_TOKENS:
            continue
        sig = _signature(mine)
        for band in range(BANDS):
            buckets[(band, sig[band * ROWS : (band + 1) * ROWS])].append(i)
    candidates = {
        (i, j)
        for members in buckets.values()
        if len(members) <= MAX_BUCKET
        for i, j in combinations(members, 2)
    }
    found = []
    for i, j in sorted(candidates):
        matcher = difflib.SequenceMatcher(None, tokens[i], tokens[j], autojunk=False)
        if matcher.real_quick_ratio() < NEAR or matcher.quick_ratio() < NEAR:
            continue
        ratio = matcher.ratio()
        if ratio >= NEAR:
            found.append((i, j, round(ratio, 2)))
    return found


def similar_pairs(
    answers: dict[str, dict[str, str]],
) -> tuple[list[Pair], dict[str, list[list[str]]]]:
    """Pairs of students with matching answers, most matches first, and per exercise the common
    answers' holders.

    ``answers`` maps a student to ``{exercise id: normalised answer}`` (attempted exercises only).

    >>> answers = {"ann": {"e": "return a + b"}, "bo": {"e": "return a + b"}, "cy": {"e": "x = 1"}}
    >>> pairs, common = similar_pairs(answers)
    >>> pairs
    [Pair(a='ann', b='bo', matches=(('e', 1.0),))]
    """
    by_pair: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
    common: dict[str, list[list[str]]] = {}
    exercises = sorted({e for mine in answers.values() for e in mine})
    for exercise in exercises:
        holders: dict[str, list[str]] = defaultdict(list)
        for student in sorted(answers):
            text = answers[student].get(exercise)
            if text:
                holders[text].append(student)
        texts = sorted(holders)
        shared = [holders[t] for t in texts if len(holders[t]) > COMMON]
        if shared:
            common[exercise] = shared
        for t in texts:
            if 1 < len(holders[t]) <= COMMON:
                for a, b in combinations(holders[t], 2):
                    by_pair[(a, b)].append((exercise, 1.0))
        for i, j, ratio in _near_texts(texts):
            if len(holders[texts[i]]) <= COMMON and len(holders[texts[j]]) <= COMMON:
                for a in holders[texts[i]]:
                    for b in holders[texts[j]]:
                        by_pair[(a, b) if a <= b else (b, a)].append((exercise, ratio))
    pairs = [Pair(a, b, tuple(sorted(m))) for (a, b), m in by_pair.items()]
    pairs.sort(key=lambda p: (-len(p.matches), -sum(r for _, r in p.matches), p.a, p.b))
    return pairs, common


def solution_copies(
    answers: dict[str, dict[str, str]], regions: dict[str, tuple[str, ...]]
) -> dict[str, list[str]]:
    """Per student, the exercises whose answer holds the course solution's region, line for line
    (normalised).

    >>> solution_copies({"ann": {"e": "def f(x):\\n    return x + 1"}}, {"e": ("return x + 1",)})
    {'ann': ['e']}
    """
    copies: dict[str, list[str]] = {}
    for student in sorted(answers):
        found = []
        for exercise, text in sorted(answers[student].items()):
            region = regions.get(exercise)
            if not region:
                continue
            lines = tuple(line.strip() for line in text.splitlines() if line.strip())
            n = len(region)
            if any(lines[i : i + n] == region for i in range(len(lines) - n + 1)):
                found.append(exercise)
        if found:
            copies[student] = found
    return copies
