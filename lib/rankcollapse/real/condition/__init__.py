"""The collapse condition evaluated on real weights (chapter "What the theorem does not say",
section 1): :mod:`.theorem`, the theorems' pure network of a real model and the condition on it;
:mod:`.study`, the condition on every model as result objects."""

from .study import ConditionStudy, ModelCondition, condition_study, model_condition
from .theorem import (
    CONDITIONS,
    attention_entropy,
    check_condition,
    condition_details,
    condition_holds,
    condition_models,
    condition_statistic,
    pure_attention,
    real_inputs,
    smallest_shrink,
)

__all__ = [
    "CONDITIONS",
    "pure_attention",
    "real_inputs",
    "condition_models",
    "check_condition",
    "condition_details",
    "condition_statistic",
    "condition_holds",
    "smallest_shrink",
    "attention_entropy",
    "ModelCondition",
    "model_condition",
    "ConditionStudy",
    "condition_study",
]
