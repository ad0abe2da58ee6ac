"""`python -m asmopt.train ppo|sft|rewards ...` (same as `asmopt train ...`)."""

import sys

from asmopt.train.cli import main

sys.exit(main())
