"""The book on its own: the similarity report's reading of answers."""

from course_tools._course import SOLUTIONS
from course_tools.grade.book._answers import normalise, solution_regions
from course_tools.grade.book._similarity import COMMON, similar_pairs, solution_copies


def test_similarity_sees_through_comments_and_layout_and_spares_short_answers() -> None:
    body = (
        "def f(tree):\n    total = 0\n    for leaf in jax.tree.leaves(tree):\n"
        "        total += np.size(leaf)\n    return total\n"
    )
    answers = {
        "ann": {"e": normalise(body)},
        "bo": {
            "e": normalise(
                "def f(tree):  # mine\n    '''Doc.'''\n    total=0\n    for leaf in "
                "jax.tree.leaves(tree):\n        total  +=  np.size(leaf)\n\n    return total"
            )
        },
        "cy": {"e": normalise(body.replace("total = 0", "total = 0.0"))},
        "dee": {"e": normalise("def f(tree):\n    return 0")},
        "eve": {"e": normalise("def f(tree):\n    return 1")},
    }
    pairs, common = similar_pairs(answers)
    found = {(p.a, p.b): p.matches for p in pairs}
    assert found[("ann", "bo")] == (("e", 1.0),)
    assert 0.9 <= found[("ann", "cy")][0][1] < 1.0 and ("bo", "cy") in found
    assert ("dee", "eve") not in found  # short and merely alike: not paired
    many = {f"s{i}": {"e": normalise(body)} for i in range(COMMON + 1)}
    assert similar_pairs(many) == ([], {"e": [sorted(many)]})  # a common answer, not 15 pairs
    solved = {
        "ann": {
            "01.is_node": normalise(
                "def is_node(x):\n    # mine\n    return jax.tree.structure(x) != "
                "jax.tree.structure(0)"
            )
        }
    }
    assert solution_copies(solved, solution_regions(SOLUTIONS)) == {"ann": ["01.is_node"]}
