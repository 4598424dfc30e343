"""What a check and ``ready`` tell a workshop room: the events, captured where they are sent (no
room needed; tests/checks/test_room_client.py sends them to a stand-in room)."""

from __future__ import annotations

import zlib
from dataclasses import replace
from typing import Any

import jax
import pytest
from test_checks_lesson01 import (
    count_forgetting_return,
    count_leaves,
    count_params,
    count_with_none,
)

from course_lib.checks import _selfcheck, check, ready
from course_lib.checks._spec import Verdict

pytestmark = pytest.mark.usefixtures("fresh_checks")


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The events checks hand to the room, in order."""
    events: list[dict[str, Any]] = []
    monkeypatch.setattr(_selfcheck, "send_event", events.append)
    return events


def test_a_recognised_mistake_is_sent_with_its_id_its_idea_and_the_step_shown(
    sent: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(3):
        check("01.count_params", count_leaves)
    check("01.count_params", count_with_none)
    capsys.readouterr()
    assert [(e["kind"], e["exercise"], e["outcome"], e["hint"]) for e in sent] == [
        ("check", "01.count_params", "incorrect", step) for step in (0, 1, 2, 0)
    ]
    ids = [event["mistake"] for event in sent]
    assert ids[0] == ids[1] == ids[2] != ids[3]
    for event in sent:
        assert event["mistake"].isascii() and len(event["mistake"]) <= 40
        assert 0 < len(event["idea"]) <= 300 and 0 < len(event["fix"]) <= 300
    assert sent[0]["idea"].startswith("A parameter is one entry of an array")
    assert sent[3]["idea"].startswith("`None` is an empty subtree")


def test_a_mistake_has_the_same_id_in_every_run(sent: list[dict[str, Any]]) -> None:
    """The id comes from the exercise and the mistake's idea and fix, never from the process."""
    check("01.count_params", count_leaves)
    both = f"{sent[0]['idea']}\n{sent[0]['fix']}".encode()
    assert sent[0]["mistake"] == f"01.count_params/{zlib.crc32(both):08x}"


def test_two_mistakes_sharing_an_idea_have_two_ids_and_each_its_fix() -> None:
    def event(fix: str) -> dict[str, Any]:
        verdict = Verdict(
            status="failed",
            points=0,
            max_points=2,
            message="returned 2",
            idea="Count elements.",
            fix=fix,
        )
        return _selfcheck._check_event("01.count_params", replace(verdict, mistake=True), 1)

    first, second = event("Add up leaf.size."), event("Skip the None subtrees.")
    assert first["mistake"] != second["mistake"]
    assert (first["idea"], first["fix"]) == ("Count elements.", "Add up leaf.size.")
    assert len(event("x" * 1000)["fix"]) <= 300


def test_no_mistake_is_named_where_none_was_recognised(sent: list[dict[str, Any]]) -> None:
    """An answer of the wrong type gets the exercise's own hints, and a right answer none."""
    check("01.count_params", lambda tree: "x")
    check("01.count_params", count_params)
    assert [set(event) for event in sent] == [{"kind", "exercise", "outcome", "hint"}] * 2
    assert [event["outcome"] for event in sent] == ["incorrect", "passed"]


def freeze_group_forgetting_return(params: Any, grads: Any, lr: float, frozen: str) -> Any:
    jax.tree.map(lambda p, g: p - lr * g, params, grads)


@pytest.mark.parametrize(
    ("exercise", "answer", "name"),
    [
        ("01.count_params", count_forgetting_return, "count_params"),  # a number was due
        ("09.freeze_group", freeze_group_forgetting_return, "freeze_group"),  # a tree was due
    ],
)
def test_a_missing_return_is_a_recognised_mistake_and_says_first_what_went_wrong(
    sent: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    exercise: str,
    answer: Any,
    name: str,
) -> None:
    """The room counts it by its id; the learner is told first what went wrong, then the idea
    (what a function without ``return`` gives back), then the fix."""
    for _ in range(3):
        check(exercise, answer)
    said = capsys.readouterr().out.split(f"{exercise}: incorrect")[1:]
    assert f"`{name}` returned `None`: missing `return`?" in said[0]
    assert "gives back `None`" in said[1] and "Put `return` in front of" in said[2]
    assert [event["hint"] for event in sent] == [0, 1, 2]
    assert sent[0]["mistake"] == sent[2]["mistake"] and sent[0]["mistake"].startswith(exercise)
    assert "without a `return` statement gives back `None`" in sent[0]["idea"]
    assert sent[0]["fix"].startswith("Put `return` in front of the expression")


def test_a_check_that_cannot_judge_sends_an_error_then_raises(
    sent: list[dict[str, Any]],
) -> None:
    with pytest.raises(KeyError, match="no exercise '01.count_parameters'"):
        check("01.count_parameters", count_params)
    assert sent == [
        {"kind": "check", "exercise": "01.count_parameters", "outcome": "error", "hint": 0}
    ]


def test_ready_sends_the_version_the_backend_and_no_reason(
    sent: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    ready()
    assert sent == [
        {
            "kind": "ready",
            "outcome": "passed",
            "jax": jax.__version__,
            "backend": jax.default_backend(),
            "reason": "",
        }
    ]
    assert capsys.readouterr().out.startswith(f"Ready: JAX {jax.__version__}")


@pytest.mark.parametrize(
    ("raised", "reason"),
    [
        (
            RuntimeError("Unknown backend: 'cuda' requested, but no platforms are found.\nmore"),
            "RuntimeError: Unknown backend: 'cuda' requested, but no platforms are found. "
            "(starting JAX_PLATFORMS='cuda')",
        ),
        # JAX 0.10.2 raises a bare AssertionError: the variable is then the only clue.
        (AssertionError(), "AssertionError (starting JAX_PLATFORMS='cuda')"),
    ],
)
def test_ready_never_raises_when_jax_has_no_backend(
    raised: Exception,
    reason: str,
    sent: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As with JAX_PLATFORMS=cuda on a machine without CUDA: asking for the backend raises."""

    def no_backend() -> str:
        raise raised

    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    monkeypatch.setattr(jax, "default_backend", no_backend)
    ready()
    assert sent == [
        {
            "kind": "ready",
            "outcome": "error",
            "jax": jax.__version__,
            "backend": "",
            "reason": reason,
        }
    ]
    assert capsys.readouterr().out == f"Not ready: JAX {jax.__version__} here failed: {reason}\n"
