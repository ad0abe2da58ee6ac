"""Training rows: a prompt (chat messages or text) plus any extra columns.

Rows are plain dicts so that a reward function can be handed every column by name, as TRL
does (`reward_fn(prompts, completions, program_id=[...], ...)`). Three sources:

* `suite:SPLIT` — one row per program of a suite split (`suite:validation+test` joins
  splits): the prompt template filled with the C code and gcc's -O3 assembly; columns
  `program_id` and `split`. Programs marked unfit (tests that accept a trivial or mutated
  program, docs/adequacy.md) are refused with an error naming them unless `allow_unfit`.
  For SFT the row also gets a `completion` in the template's edit format: the target
  assembly in the fenced form the answer extractor reads, or a unified diff from the
  baseline to it.
* `text-task:SPLIT` — the built-in toy task used by tests and the tiny configs.
* a path to a JSONL file, one JSON object per line with at least `prompt`.

`trl_columns` gives a suite split as the columns of a TRL dataset (`prompt`, `program_id`),
dropping prompts over a length limit with a warning (docs/training.md, TRL).

`RowSampler` walks the rows in a seeded random order, epoch after epoch, and its position
is two integers, so a checkpoint can resume the data stream exactly.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asmopt.errors import InputError

if TYPE_CHECKING:  # imported where they are used
    from transformers import PreTrainedTokenizerBase

    from asmopt.programs.model import Suite
    from asmopt.toolchain import Toolchain

Row = dict[str, Any]
TEXT_TASK_SIZES = {"train": 64, "validation": 16, "test": 16}


def check_prompt(prompt: object, where: str) -> None:
    """A prompt is a non-empty string or a list of {role, content} messages."""
    if isinstance(prompt, str):
        if not prompt:
            raise InputError(f"{where}: empty prompt")
        return
    if isinstance(prompt, list) and prompt:
        for m in prompt:
            if not (
                isinstance(m, dict)
                and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str)
            ):
                raise InputError(f"{where}: each prompt message needs string role and content")
        return
    raise InputError(f"{where}: prompt must be a string or a list of chat messages")


def rows_from_jsonl(path: str | Path, *, need_completion: bool = False) -> list[Row]:
    """Rows of a JSONL file; errors name the line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read rows ({exc.strerror or exc})") from None
    rows: list[Row] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict) or "prompt" not in row:
            raise InputError(f"{path}:{n}: expected an object with a 'prompt' field")
        check_prompt(row["prompt"], f"{path}:{n}")
        if need_completion and not isinstance(row.get("completion"), str):
            raise InputError(f"{path}:{n}: SFT rows need a string 'completion' field")
        rows.append(row)
    if not rows:
        raise InputError(f"{path}: no rows")
    return rows


def fenced_assembly(asm: str) -> str:
    """An answer in the format of the reference prompt (one ```assembly block)."""
    return f"```assembly\n{asm.rstrip()}\n```"


def fenced_diff(baseline: str, target: str, context: int) -> str | None:
    """An answer in the format of the `diff` prompt: a unified diff from the baseline to
    `target` in one ```diff block, or None when the two are the same.

    The diff is checked by applying it with the same code that reads model answers, so a
    supervised target is always an answer the reward would accept as written."""
    import difflib

    from asmopt.policies.diff_format import apply_unified_diff

    lines = difflib.unified_diff(
        baseline.splitlines(),
        target.splitlines(),
        fromfile="baseline.s",
        tofile="answer.s",
        n=context,
        lineterm="",
    )
    diff = "\n".join(lines)
    if not diff:
        return None
    if apply_unified_diff(baseline, diff).splitlines() != target.splitlines():
        raise AssertionError("a generated target diff does not reproduce its target")
    return f"```diff\n{diff}\n```"


def rows_from_suite(
    suite: Suite,
    split: str,
    *,
    template: str = "reference",
    toolchain: Toolchain | None = None,
    target_flags: Sequence[str] | None = None,
    diff_context: int = 3,
    allow_unfit: bool = False,
) -> list[Row]:
    """One row per program in `split` (several splits joined by `+`, e.g.
    `validation+test`); `target_flags` adds an SFT `completion`.

    Programs marked unfit are refused (UnfitProgramError naming them) unless `allow_unfit`:
    a row on tests that accept wrong answers teaches the model to exploit them.

    The baseline assembly is made by the toolchain (cached), exactly as `asmopt baseline`
    prints it, so the prompts match those of evaluation. The completion follows the
    template's edit format: the target assembly in full, or (`diff` templates) a unified
    diff from the baseline to it with `diff_context` lines of context; a program whose
    target equals its baseline has no diff to learn and is left out with a warning."""
    from asmopt.policies.prompts import load_template
    from asmopt.toolchain import DEFAULT_O3_FLAGS, default_toolchain

    tmpl = load_template(template)
    tc = toolchain if toolchain is not None else default_toolchain()
    splits = [part for part in split.split("+") if part]
    programs = [p for part in splits for p in suite.select(split=part)]
    if not programs:
        raise InputError(f"suite {suite.name!r} has no programs in split {split!r}")
    from asmopt.adequacy import require_fit

    require_fit(programs, f"training rows (suite {suite.name!r}, split {split!r})", allow_unfit)
    rows: list[Row] = []
    unchanged: list[str] = []
    for program in programs:
        baseline = tc.baseline_assembly(program, DEFAULT_O3_FLAGS)
        row: Row = {
            "prompt": tmpl.messages(program.source, baseline),
            "program_id": program.id,
            "split": suite.splits.get(program.id, split),
        }
        if target_flags is not None:
            flags = tuple(target_flags)
            asm = baseline if flags == tuple(DEFAULT_O3_FLAGS) else None
            if asm is None:
                asm = tc.baseline_assembly(program, flags)
            if tmpl.edit_format == "diff":
                completion = fenced_diff(baseline, asm, diff_context)
                if completion is None:
                    unchanged.append(program.id)
                    continue
                row["completion"] = completion
            else:
                row["completion"] = fenced_assembly(asm)
        rows.append(row)
    if unchanged:
        warnings.warn(
            f"target flags {' '.join(target_flags or ())} give the baseline itself for "
            f"{len(unchanged)} program(s) ({', '.join(unchanged)}): no diff to learn, left out",
            stacklevel=2,
        )
    if not rows:
        raise InputError(f"no program of split {split!r} has a target that differs from -O3")
    return rows


def text_task_rows(split: str) -> list[Row]:
    """Toy prompts for the `text-task` reward (answer in lowercase letters; optimum 1.0)."""
    if split not in TEXT_TASK_SIZES:
        raise InputError(f"text-task has splits {', '.join(TEXT_TASK_SIZES)}, not {split!r}")
    offset = {"train": 0, "validation": 1000, "test": 2000}[split]
    words = ("alpha", "bravo", "delta", "kilo", "oscar", "tango", "zulu", "echo")
    rows = []
    for i in range(TEXT_TASK_SIZES[split]):
        n = offset + i
        topic = f"{words[n % len(words)]} {words[(n // len(words)) % len(words)]} {n}"
        rows.append(
            {
                "prompt": [{"role": "user", "content": f"Reply in lowercase letters: {topic}"}],
                "id": f"{split}-{i}",
                "completion": "abc",
            }
        )
    return rows


def load_rows(
    spec: str,
    *,
    suite: str | None = None,
    template: str = "reference",
    target_flags: Sequence[str] | None = None,
    need_completion: bool = False,
    toolchain: Toolchain | None = None,
    diff_context: int = 3,
    allow_unfit: bool = False,
) -> list[Row]:
    """Rows for a source spec (`suite:SPLIT[+SPLIT...]`, `text-task:SPLIT` or a JSONL path);
    `allow_unfit` lets `suite:` rows include programs marked unfit."""
    kind, _, split = spec.partition(":")
    if kind == "suite" and not Path(spec).exists():
        from asmopt.programs import load_builtin_suite, load_suite

        loaded = load_suite(suite) if suite else load_builtin_suite()
        return rows_from_suite(
            loaded,
            split or "train",
            template=template,
            toolchain=toolchain,
            target_flags=target_flags,
            diff_context=diff_context,
            allow_unfit=allow_unfit,
        )
    if kind == "text-task" and not Path(spec).exists():
        return text_task_rows(split or "train")
    path = Path(spec)
    if not path.is_file():
        raise InputError(
            f"data source {spec!r}: not suite:SPLIT, text-task:SPLIT or an existing JSONL file"
        )
    return rows_from_jsonl(path, need_completion=need_completion)


def trl_columns(
    split: str = "train",
    *,
    suite: str | None = None,
    template: str = "reference",
    max_prompt_chars: int | None = None,
    max_prompt_tokens: int | None = None,
    tokenizer: PreTrainedTokenizerBase | str | Path | None = None,
    allow_unfit: bool = False,
) -> dict[str, list[Any]]:
    """A suite split as TRL dataset columns: `prompt` (chat messages from the prompt
    template, as `asmopt eval` prompts the model) and `program_id` (how `TRLReward` finds
    the program to score), for `datasets.Dataset.from_dict`.

    TRL 1.x does not truncate or drop long prompts, so a prompt longer than the model's
    context or memory fails the run mid-training. Rows whose prompt is over
    `max_prompt_chars` characters (the message texts) or `max_prompt_tokens` tokens (the
    prompt as the model sees it: chat template and generation prompt included, counted
    with `tokenizer`, a tokenizer object or a name/path for AutoTokenizer) are dropped
    here instead, with a warning that says how many and which, so the data a run trained
    on is never a silent surprise. An error if nothing is left."""
    from asmopt.policies.prompts import prompt_token_count
    from asmopt.programs import load_builtin_suite, load_suite

    if max_prompt_tokens is not None and tokenizer is None:
        raise InputError("max_prompt_tokens needs the policy's tokenizer (tokenizer=...)")
    loaded = load_suite(suite) if suite else load_builtin_suite()
    rows = rows_from_suite(loaded, split, template=template, allow_unfit=allow_unfit)
    if isinstance(tokenizer, (str, Path)):
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer))
    kept: list[Row] = []
    dropped: list[str] = []
    for row in rows:
        chars = sum(len(m["content"]) for m in row["prompt"])
        too_long = max_prompt_chars is not None and chars > max_prompt_chars
        if not too_long and max_prompt_tokens is not None:
            too_long = prompt_token_count(tokenizer, row["prompt"]) > max_prompt_tokens
        if too_long:
            dropped.append(row["program_id"])
        else:
            kept.append(row)
    limits = " and ".join(
        f"{value} {unit}"
        for value, unit in ((max_prompt_chars, "characters"), (max_prompt_tokens, "tokens"))
        if value is not None
    )
    if dropped:
        warnings.warn(
            f"dropped {len(dropped)} of {len(rows)} {split} prompt(s) longer than {limits}: "
            f"{', '.join(dropped)}",
            stacklevel=2,
        )
    if not kept:
        raise InputError(f"no prompt of split {split!r} fits {limits}")
    return {
        "prompt": [row["prompt"] for row in kept],
        "program_id": [row["program_id"] for row in kept],
    }


class RowSampler:
    """Rows in a fresh seeded permutation each epoch; the position is (epoch, index).

    It draws from its own generator seeded by (train_seed, epoch), never from the global
    RNG, so the order does not depend on anything else the trainer does."""

    def __init__(self, num_rows: int, train_seed: int, *, shuffle: bool = True) -> None:
        if num_rows < 1:
            raise InputError("no rows to sample from")
        self.num_rows = num_rows
        self.train_seed = train_seed
        self.shuffle = shuffle
        self.epoch = 0
        self.index = 0
        self._order = self._permutation(0)

    def _permutation(self, epoch: int) -> list[int]:
        import torch

        if not self.shuffle:
            return list(range(self.num_rows))
        gen = torch.Generator().manual_seed(self.train_seed * 1_000_003 + epoch)
        return torch.randperm(self.num_rows, generator=gen).tolist()

    def next(self, k: int) -> list[int]:
        """The next `k` row indices, crossing into the next epoch when needed."""
        out = []
        while len(out) < k:
            if self.index >= self.num_rows:
                self.epoch += 1
                self.index = 0
                self._order = self._permutation(self.epoch)
            out.append(self._order[self.index])
            self.index += 1
        return out

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index, "num_rows": self.num_rows}

    def load_state_dict(self, state: dict[str, int]) -> None:
        if state["num_rows"] != self.num_rows:
            raise InputError(
                f"the checkpoint was made with {state['num_rows']} training rows, now there "
                f"are {self.num_rows}; resume with the same data"
            )
        self.epoch = int(state["epoch"])
        self.index = int(state["index"])
        self._order = self._permutation(self.epoch)
