"""The paper's toy tasks, trained, and every path of the trained networks evaluated exactly.

Above the core: ``data`` (seeded task generators), ``model`` (embedding, ``rc.san.SAN``,
readout), ``tasks`` (the tasks' settings), ``train`` (deterministic CPU training with cached
checkpoints), ``path_terms`` (every path term of a network) and ``evaluate`` (path-restricted
accuracy: every single path, the sum of each length, the official sampling scheme with the
attention frozen), ``circle`` (the circle toy's rollouts), ``dynamics`` (weight stable ranks and
token residuals at kept epochs of one training run, with and without skips) and ``landscape``
(filter-normalised loss slices). Book: chapter "Which paths do trained networks use?".
"""

from . import data, dynamics, landscape
from .circle import rollout
from .data import (
    TaskData,
    baselines,
    circle_pairs,
    convex_hull,
    hull_labels,
    memorization,
    memorization_ceiling,
    sorting,
    words,
)
from .evaluate import (
    PathEvaluation,
    all_path_terms,
    by_length,
    evaluate_paths,
    fisher_exact,
    path_index,
    sample_paths,
)
from .model import ToyConfig, ToyModel, standardise
from .train import (
    CIRCLE_VARIANTS,
    OFFICIAL,
    OFFICIAL_LINES,
    OFFICIAL_MEMORIZATION_TOKENS,
    TASKS,
    TRAINING_FILES,
    ToyTask,
    Trained,
    cache_dir,
    checkpoint_path,
    code_version,
    official_steps,
    task_data,
    token_accuracy,
    toy_config,
    train,
    train_all,
    training_code_hash,
)

__all__ = [name for name in dir() if not name.startswith("_")]
