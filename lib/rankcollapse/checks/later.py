"""Exercises of the chapter "After the paper: five later results"."""

from . import Exercise, Question, register  # noqa: F401

# REGION helperC
# END REGION

# REGION helperD
# END REGION
