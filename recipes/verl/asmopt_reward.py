"""verl `custom_reward_function` entry: asmopt's sandboxed execution reward.

verl loads this file by path and calls `compute_score(data_source, solution_str,
ground_truth, extra_info, **reward_kwargs)` for every rollout. The rows must follow the
SuperCoder schema (`asmopt data export SUITE --format verl-parquet`).
"""

from asmopt.reward.adapters import compute_score, dry_run_verl

__all__ = ["compute_score", "dry_run_verl"]
