"""Exercises of the chapter "What the theorem does not say"."""

from . import Exercise, Question, register  # noqa: F401

# REGION helperA
# END REGION

# REGION helperB
# END REGION
