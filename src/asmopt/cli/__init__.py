"""The `asmopt` command. Thin: it parses, validates, delegates, and prints.

`main.py` holds the parser and the core commands (suite, baseline, check, eval, results,
report); every other group has a module here (`data`, `serve`, `train`, `study`), listed in
`main.COMMAND_MODULES`; `common.py` holds what they share. Nothing outside this package
imports it.
"""

from asmopt.cli.main import main

__all__ = ["main"]
