"""Rewards for RL: functions, the scoring service, and framework adapters."""

from asmopt.reward.functions import (
    REWARDS,
    RewardInput,
    RobustReward,
    SupercoderDesign1,
    SupercoderDesign2,
    get_reward,
)

__all__ = [
    "REWARDS",
    "RewardInput",
    "RobustReward",
    "SupercoderDesign1",
    "SupercoderDesign2",
    "get_reward",
]
