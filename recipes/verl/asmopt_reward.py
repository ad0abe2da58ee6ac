"""verl `reward.custom_reward_function` entry: asmopt's sandboxed execution reward.

verl loads this file by path (`reward.custom_reward_function.path` in the recipe) and calls
`compute_score` with the recipe's `reward_kwargs`, in one of two forms:

* `compute_score(data_source=, solution_str=, ground_truth=, extra_info=)` for one answer:
  the reward loop's managers (`naive`, the default, and the others registered with it) and
  the legacy `NaiveRewardManager`; it returns one dict, "score" plus diagnostics.
* `compute_score(data_sources=, solution_strs=, ground_truths=, extra_infos=)` for a batch:
  the legacy `BatchRewardManager`; it returns one such dict per answer, scored concurrently.

The rows must follow the SuperCoder schema (`asmopt data export SUITE --format verl-parquet`).
"""

from asmopt.reward.adapters import compute_score, dry_run_verl

__all__ = ["compute_score", "dry_run_verl"]
