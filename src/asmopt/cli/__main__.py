"""`python -m asmopt.cli ...` is the `asmopt` command."""

import sys

from asmopt.cli.main import main

sys.exit(main())
