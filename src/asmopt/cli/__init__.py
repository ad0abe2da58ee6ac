"""The `asmopt` command. Thin: it parses into typed configs, delegates, and prints.

`main.py` assembles the parser from one module per command group (`suite`, `check`, `eval`,
`results`, `data`, `doctor`, `serve`, `train`, `study`), listed in `main.COMMAND_MODULES`;
`options.py`, `display.py`, `interrupt.py` and `common.py` hold what they share. Nothing
outside this package imports it.
"""

from asmopt.cli.main import main

__all__ = ["main"]
