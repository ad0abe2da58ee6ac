"""The task metric: can the model write assembly for a C program it has never seen?

Prompt = `format_prompt(C source, level)`, exactly the prefix of a corpus document; the model
continues greedily until `<|eot|>` or the token budget; the continuation is assembled and
linked in the sandbox (`Toolchain.assemble_and_link`).

The programs are fresh synthetic programs with one function (seeds from a range the corpus
never uses, so none was trained on), kept when prompt plus gcc's own assembly fit in the
training context: a longer answer could not be completed anyway.

At the scale of the CPU study the build rate is expected to be about zero, so three more
sensitive numbers are reported beside it: how many outputs assemble (link errors allowed),
how many end with `<|eot|>` (the model knows the function is done), and the line similarity
to gcc's assembly (difflib ratio over lines, 1 = identical).
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass
from typing import Any

import torch

from asmopt.metrics import share
from asmopt.programs.model import Program
from asmopt.study.config import StudyConfig
from asmopt.study.corpus import clean_assembly, format_prompt
from asmopt.study.synthetic import synthetic_program
from asmopt.study.tokenizer import EOT, PAD, encode

# Task programs use seeds from here on; corpus seeds stay far below.
TASK_SEED_BASE = 10_000_000
# How many candidates to compile while looking for programs that fit the context.
TASK_CANDIDATES = 16


@dataclass
class TaskProgram:
    id: str
    source: str
    prompt_ids: list[int]
    reference: str
    reference_tokens: int


@dataclass
class TaskSample:
    program: str
    stage: str  # BuildResult.stage of the generated assembly
    ended: bool
    new_tokens: int
    similarity: float
    message: str
    assembly: str


def task_programs(cfg: StudyConfig, tokenizer: Any, toolchain: Any) -> list[TaskProgram]:
    """Up to `eval.task_programs` held-out programs whose prompt and reference fit the context."""
    wanted = cfg.eval.task_programs
    flags = (cfg.eval.task_level, *cfg.corpus.extra_flags)
    found: list[TaskProgram] = []
    for k in range(wanted * TASK_CANDIDATES):
        if len(found) >= wanted:
            break
        seed = TASK_SEED_BASE + cfg.corpus.synthetic_seed + k
        program = Program(id=f"task{k:04d}", source=synthetic_program(seed, 1), tests=())
        built = toolchain.compile_assembly(program, flags)
        if not built.ok or built.output is None:
            continue
        reference = clean_assembly(built.output.read_text(encoding="utf-8", errors="replace"))
        prompt = encode(tokenizer, format_prompt(program.source, cfg.eval.task_level))
        ref_tokens = len(encode(tokenizer, reference)) + 1
        fits = len(prompt) + ref_tokens <= cfg.train.seq_len
        if fits or not cfg.eval.task_fit_context:
            found.append(TaskProgram(program.id, program.source, prompt, reference, ref_tokens))
    return found


def line_similarity(candidate: str, reference: str) -> float:
    """difflib ratio over stripped non-empty lines: 1.0 identical, 0.0 nothing in common."""
    a = [ln.strip() for ln in candidate.splitlines() if ln.strip()]
    b = [ln.strip() for ln in reference.splitlines() if ln.strip()]
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(a=a, b=b, autojunk=False).ratio()


@torch.no_grad()
def generate(
    model: Any, tokenizer: Any, prompt_ids: list[int], max_new_tokens: int, device: Any
) -> tuple[str, bool, int]:
    """Greedy continuation: (text, ended with <|eot|>, new token count)."""
    eot = tokenizer.convert_tokens_to_ids(EOT)
    ids = torch.tensor([prompt_ids], device=device)
    out = model.generate(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=max_new_tokens,
        do_sample=False,
        eos_token_id=eot,
        pad_token_id=tokenizer.convert_tokens_to_ids(PAD),
    )
    new = out[0, len(prompt_ids) :].tolist()
    ended = eot in new
    if ended:
        new = new[: new.index(eot)]
    return tokenizer.decode(new, skip_special_tokens=True), ended, len(new) + int(ended)


def evaluate_task(
    model: Any, tokenizer: Any, programs: list[TaskProgram], cfg: StudyConfig, toolchain: Any
) -> dict[str, Any]:
    """Generates, builds and scores every task program; returns rates and per-sample records."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    samples: list[TaskSample] = []
    for prog in programs:
        room = cfg.train.seq_len - len(prog.prompt_ids)
        budget = cfg.eval.task_max_new_tokens
        if cfg.eval.task_fit_context:
            budget = max(1, min(budget, room))
        text, ended, count = generate(model, tokenizer, prog.prompt_ids, budget, device)
        built = toolchain.assemble_and_link(text)
        if built.stage == "infra":
            from asmopt.toolchain import ToolchainError

            raise ToolchainError(f"building the output for {prog.id}: {built.message}")
        samples.append(
            TaskSample(
                program=prog.id,
                stage=built.stage,
                ended=ended,
                new_tokens=count,
                similarity=line_similarity(text, prog.reference),
                message=built.message.splitlines()[0] if built.message else "",
                assembly=text,
            )
        )
    model.train(was_training)
    n = len(samples)

    def rate(flag: Any) -> float | None:
        return share(sum(1 for s in samples if flag(s)), n)

    return {
        "programs": n,
        "build_rate": rate(lambda s: s.stage == "ok"),
        "assemble_rate": rate(lambda s: s.stage in ("ok", "link")),
        "ended_rate": rate(lambda s: s.ended),
        "similarity": sum(s.similarity for s in samples) / n if n else None,
        "samples": [asdict(s) for s in samples],
    }
