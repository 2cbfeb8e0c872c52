"""Value exercises (book.checks.Question): predictions and figure readings are checked against what
the library computes; a stub (None) is not attempted; a malformed answer names what was expected."""

import pytest

import rankbook as book
from rankbook.checks import Question

QUESTIONS = sorted(book.checks.QUESTIONS)


@pytest.fixture
def registered():
    made = []

    def make(**kw):
        q = book.checks.register(Question(**kw))
        made.append(q.id)
        return q

    yield make
    for qid in made:
        book.checks.QUESTIONS.pop(qid)


def test_a_numeric_reading_within_tolerance_is_correct(registered):
    registered(
        id="demo.read",
        kind="read",
        answer=lambda: 4.0,
        hint="look again",
        rtol=0.1,
        mistakes=[(8.0, "that is the width, not the depth")],
    )
    assert book.checks.check("demo.read", 4.3, quiet=True).status == "correct"
    wrong = book.checks.check("demo.read", 5, quiet=True)
    assert wrong.status == "incorrect" and "look again" in wrong.message
    assert "the width" in book.checks.check("demo.read", 8, quiet=True).message
    assert book.checks.check("demo.read", None, quiet=True).status == "not attempted"
    for bad in ("four", True, [4]):
        r = book.checks.check("demo.read", bad, quiet=True)
        assert r.status == "incorrect" and "a number" in r.message


def test_a_prediction_is_compared_with_the_measurement(registered):
    measured = {"value": "faster"}
    registered(
        id="demo.predict",
        kind="predict",
        answer=lambda: measured["value"],
        hint="measure it",
        choices=("faster", "slower"),
    )
    assert book.checks.check("demo.predict", " Faster ", quiet=True).status == "correct"
    assert book.checks.check("demo.predict", "slower", quiet=True).status == "incorrect"
    r = book.checks.check("demo.predict", "sideways", quiet=True)
    assert r.status == "incorrect" and "'faster', 'slower'" in r.message
    measured["value"] = "slower"  # the answer is computed when the check runs, not stored
    assert book.checks.check("demo.predict", "slower", quiet=True).status == "correct"


def test_bad_questions_are_refused():
    with pytest.raises(ValueError, match="kind"):
        Question(id="x.y", kind="guess", answer=lambda: 1, hint="")
    with pytest.raises(ValueError, match="rtol"):
        Question(id="x.y", kind="read", answer=lambda: 1, hint="", rtol=2)
    with pytest.raises(TypeError, match="Exercise or a Question"):
        book.checks.register(object())


def test_an_id_is_registered_once(registered):
    registered(id="demo.once", kind="read", answer=lambda: 1, hint="")
    with pytest.raises(ValueError, match="twice"):
        registered(id="demo.once", kind="read", answer=lambda: 1, hint="")
    with pytest.raises(ValueError, match="twice"):
        registered(id="paths.count", kind="read", answer=lambda: 1, hint="")


@pytest.mark.parametrize("qid", QUESTIONS)
def test_every_question_accepts_its_answer_and_refuses_its_mistakes(qid, monkeypatch):
    q = book.checks.QUESTIONS[qid]
    want = q.answer()  # computed once: each check below would compute it again (seconds for some)
    monkeypatch.setattr(q, "answer", lambda: want)
    assert book.checks.check(qid, want, quiet=True).status == "correct"
    assert book.checks.check(qid, None, quiet=True).status == "not attempted"
    assert len(q.mistakes) >= 2, (
        f"{qid} needs at least two plausible wrong answers, each with its hint"
    )
    for wrong, hint in q.mistakes:
        r = book.checks.check(qid, wrong, quiet=True)
        assert r.status == "incorrect" and hint in r.message
    if q.choices:
        others = [c for c in q.choices if not q.same(c, q.answer())]
        assert others and all(
            book.checks.check(qid, c, quiet=True).status == "incorrect" for c in others
        )
