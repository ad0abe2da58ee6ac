"""An assembly/C corpus for small language models: C sources compiled at -O0 .. -O3.

Sources are the built-in suite, any imported suites (`asmopt data import ...` writes suite
directories) and the synthetic generator (`asmopt.study.synthetic`). Each (program, level)
pair becomes one document:

    // C source
    <the C file>
    // gcc -O2 -S
    <the assembly gcc wrote>

followed by the tokenizer's end-of-text token. The part up to and including the `// gcc` line
is the *prompt*; the assembly is the *completion*. Held-out loss on the completion and the
build rate of generated completions are measured on held-out programs only.

Splits are by program, never by document, so that no held-out program's C source is seen in
training at any optimisation level: suite programs keep their suite split (train -> train,
validation/test -> held-out); synthetic program k is held out when k % heldout_every == 0.

Compilation goes through the sandboxed, cached toolchain: rebuilding a corpus with the same
sources and flags costs only cache look-ups. A program that gcc rejects is skipped and
counted (the generator should never produce one); a toolchain failure stops the build.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from asmopt.errors import InputError
from asmopt.parallel import parallel_map
from asmopt.programs.model import Program
from asmopt.study.synthetic import GENERATOR_VERSION, synthetic_program

DOCS_FILE = "docs.jsonl"
META_FILE = "meta.json"
C_HEADER = "// C source\n"
# Assembly lines that carry no information about the program (file name, compiler version).
_DROPPED_PREFIXES = ("\t.file\t", "\t.ident\t")


@dataclass
class CorpusConfig:
    """Which C sources go into the corpus and how they are compiled."""

    # The 45 programs of the built-in suite.
    builtin: bool = True
    # Extra suite directories (e.g. written by `asmopt data import llvm-test-suite`).
    suites: list[str] = field(default_factory=list)
    # How many generated programs, from seeds synthetic_seed .. synthetic_seed + N - 1.
    synthetic_programs: int = 300
    synthetic_seed: int = 0
    synthetic_max_functions: int = 3
    # One document per level; gcc is called as `gcc LEVEL EXTRA_FLAGS -S main.c`.
    levels: list[str] = field(default_factory=lambda: ["-O0", "-O1", "-O2", "-O3"])
    # No .cfi_* directives: they are a third of -O0 assembly and say nothing about the code.
    extra_flags: list[str] = field(default_factory=lambda: ["-fno-asynchronous-unwind-tables"])
    # Synthetic program k is held out when k % heldout_every == 0 (10 -> 10%).
    heldout_every: int = 10
    # Documents with longer assembly are skipped (counted): a few -O3 files are huge.
    max_asm_chars: int = 40000
    # Parallel compiler calls.
    jobs: int = 2

    def validate(self) -> None:
        if self.synthetic_programs < 0:
            raise InputError(f"synthetic_programs must be >= 0, got {self.synthetic_programs}")
        if self.heldout_every < 2:
            raise InputError(f"heldout_every must be at least 2, got {self.heldout_every}")
        if not self.levels:
            raise InputError("levels is empty; give at least one of -O0 .. -O3")
        if self.jobs < 1:
            raise InputError(f"jobs must be at least 1, got {self.jobs}")
        if not (self.builtin or self.suites or self.synthetic_programs):
            raise InputError("the corpus has no source: enable builtin, suites or synthetic")


@dataclass(frozen=True)
class Source:
    """One C program before compilation, with its origin and split."""

    origin: str  # builtin | suite:<name> | synthetic
    program: Program
    split: str  # train | heldout


@dataclass(frozen=True)
class Document:
    """One (program, level) pair: the unit of the corpus."""

    id: str
    origin: str
    program: str
    split: str
    level: str
    c: str
    asm: str

    @property
    def prompt(self) -> str:
        return format_prompt(self.c, self.level)


def format_prompt(c_source: str, level: str) -> str:
    """The text before the assembly; the task metric feeds exactly this to the model."""
    body = c_source if c_source.endswith("\n") else c_source + "\n"
    return f"{C_HEADER}{body}// gcc {level} -S\n"


def clean_assembly(text: str) -> str:
    """gcc's output minus the `.file`/`.ident` lines; everything else is kept so it assembles."""
    lines = [ln for ln in text.splitlines() if not ln.startswith(_DROPPED_PREFIXES)]
    return "\n".join(lines) + "\n"


def synthetic_sources(cfg: CorpusConfig) -> list[Source]:
    out = []
    for k in range(cfg.synthetic_seed, cfg.synthetic_seed + cfg.synthetic_programs):
        program = Program(
            id=f"syn{k:06d}",
            source=synthetic_program(k, cfg.synthetic_max_functions),
            tests=(),
        )
        split = "heldout" if k % cfg.heldout_every == 0 else "train"
        out.append(Source("synthetic", program, split))
    return out


def suite_sources(cfg: CorpusConfig) -> list[Source]:
    """Built-in and imported suite programs; validation and test programs are held out."""
    from asmopt.programs.suite_io import load_builtin_suite, load_suite

    suites = [("builtin", load_builtin_suite())] if cfg.builtin else []
    suites += [(f"suite:{Path(p).name}", load_suite(p)) for p in cfg.suites]
    out = []
    for origin, suite in suites:
        for program in suite.select():
            split = "train" if suite.splits.get(program.id) == "train" else "heldout"
            out.append(Source(origin, program, split))
    return out


def all_sources(cfg: CorpusConfig) -> list[Source]:
    return suite_sources(cfg) + synthetic_sources(cfg)


@dataclass
class CorpusStats:
    """What a build produced and skipped; written to meta.json beside the documents."""

    documents: dict[str, int]
    programs: dict[str, int]
    chars: dict[str, int]
    by_origin: dict[str, int]
    skipped: list[dict[str, str]]
    seconds: float
    compiles: int
    cached_compiles: int


def _compile_one(toolchain: Any, source: Source, level: str, extra: list[str]) -> tuple[Any, ...]:
    result = toolchain.compile_assembly(source.program, (level, *extra))
    return source, level, result


def build_corpus(
    cfg: CorpusConfig, out_dir: str | Path, *, toolchain: Any = None, progress: bool = False
) -> CorpusStats:
    """Compiles every source at every level and writes `docs.jsonl` and `meta.json`.

    Reuses an existing build made with the same config (the compiles are cached anyway, but
    reading thousands of cache entries still takes a while on a loaded machine).
    """
    from asmopt.toolchain import ToolchainError, default_toolchain

    cfg.validate()
    out = Path(out_dir)
    meta_path = out / META_FILE
    wanted = {**asdict(cfg), "generator_version": GENERATOR_VERSION}
    if meta_path.is_file() and (out / DOCS_FILE).is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("config") == wanted:
            return CorpusStats(**meta["stats"])
    toolchain = toolchain or default_toolchain()
    sources = all_sources(cfg)
    jobs = [(s, level) for s in sources for level in cfg.levels]
    started = time.monotonic()
    docs: list[Document] = []
    skipped: list[dict[str, str]] = []
    cached = 0
    compiled = parallel_map(
        lambda job: _compile_one(toolchain, job[0], job[1], cfg.extra_flags),
        jobs,
        jobs=cfg.jobs,
        desc="corpus",
        unit="compile",
        progress=progress,
    )
    for source, level, result in compiled:
        cached += bool(result.cached)
        if result.stage == "infra":
            raise ToolchainError(f"{source.program.id} {level}: {result.message}")
        if not result.ok or result.output is None:
            skipped.append(
                {"program": source.program.id, "level": level, "reason": result.message[:200]}
            )
            continue
        asm = clean_assembly(result.output.read_text(encoding="utf-8", errors="replace"))
        if len(asm) > cfg.max_asm_chars:
            skipped.append(
                {
                    "program": source.program.id,
                    "level": level,
                    "reason": f"assembly of {len(asm)} chars > max_asm_chars",
                }
            )
            continue
        docs.append(
            Document(
                id=f"{source.program.id}{level}",
                origin=source.origin,
                program=source.program.id,
                split=source.split,
                level=level,
                c=source.program.source,
                asm=asm,
            )
        )
    stats = _stats(docs, skipped, time.monotonic() - started, len(jobs), cached)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (DOCS_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(asdict(d)) + "\n")
    tmp.replace(out / DOCS_FILE)
    meta_path.write_text(
        json.dumps({"config": wanted, "stats": asdict(stats)}, indent=2) + "\n", encoding="utf-8"
    )
    return stats


def _stats(
    docs: list[Document], skipped: list[dict[str, str]], seconds: float, compiles: int, cached: int
) -> CorpusStats:
    documents = Counter(d.split for d in docs)
    programs = Counter(split for split, _ in {(d.split, d.program) for d in docs})
    chars: Counter[str] = Counter()
    for d in docs:
        chars[d.split] += len(d.prompt) + len(d.asm)
    return CorpusStats(
        documents=dict(documents),
        programs=dict(programs),
        chars=dict(chars),
        by_origin=dict(Counter(d.origin for d in docs)),
        skipped=skipped,
        seconds=round(seconds, 1),
        compiles=compiles,
        cached_compiles=cached,
    )


def read_documents(out_dir: str | Path, split: str | None = None) -> list[Document]:
    """The documents of a built corpus, in build order (sources, then levels)."""
    path = Path(out_dir) / DOCS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no corpus here; build it first (asmopt study corpus)")
    docs = [Document(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
    return [d for d in docs if split is None or d.split == split]


def corpus_texts(docs: Iterable[Document]) -> Iterable[str]:
    """Prompt plus completion of each document: what the tokenizer is trained on."""
    for d in docs:
        yield d.prompt + d.asm
