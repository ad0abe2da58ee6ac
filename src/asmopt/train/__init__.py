"""Training on one machine: PPO with any reward function, and a supervised warm start.

* `asmopt.train.ppo.train_ppo(PPOConfig)` — PPO for a local causal LM (the looped PLT model
  included), critic separate or shared, optional LoRA and KL penalty, exact resume.
* `asmopt.train.sft.train_sft(SFTConfig)` — next-token loss on (prompt, completion) rows.
* `asmopt.train.ppo_core` — the PPO arithmetic as pure, tested functions.
* `asmopt.train.reward_registry` — the reward registry (`register_reward`).

Configs and their fields: docs/training.md. This package imports torch only when a trainer
is used, so `asmopt --help` stays fast.
"""

from asmopt.train.config import PPOConfig, SFTConfig, load_config
from asmopt.train.reward_registry import available_rewards, make_reward, register_reward

__all__ = [
    "PPOConfig",
    "SFTConfig",
    "available_rewards",
    "load_config",
    "make_reward",
    "register_reward",
]
