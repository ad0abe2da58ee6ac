"""`python -m asmopt.study ACTION ...` runs `asmopt study ACTION ...` (and `train lm ...`)."""

import sys

from asmopt.study.cli import main

sys.exit(main())
