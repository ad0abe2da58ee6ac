"""The published training job as a user runs it: `asmopt train ppo --config ppo_reference`
with only the model path changed (to the tiny random model), on built-in suite rows, with
the execution reward as the config ships it (design 2, timed, worker processes, the real
sandbox).

The only other overrides are what a tiny byte-level model needs: lengths (its context and
the prompt limit, chosen from the suite's own prompts so that a few rows fit: a byte
tokenizer spends one token per character, a real tokenizer about a third of that), the batch
and the number of steps. Nothing about the suite is hard-coded: the rows are measured here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from asmopt.reward.functions import ALL_VERDICTS

pytestmark = pytest.mark.ml

ROOT = Path(__file__).resolve().parents[1]
RESPONSE = 32  # tokens per answer: a random model writes no assembly at any length


def prompt_lengths(split: str, suite_dir: Path | None = None) -> list[int]:
    """Tokens of each `suite:SPLIT` prompt of the reference template (of the built-in suite
    or the one in `suite_dir`), as the tiny model's byte-level tokenizer counts them (chat
    template included), shortest first."""
    from asmopt.policies.prompts import render_prompt
    from asmopt.programs import load_builtin_suite
    from asmopt.programs.suite_io import load_suite
    from asmopt.train.data import rows_from_suite
    from asmopt.train.tiny import byte_tokenizer

    tokenizer = byte_tokenizer()
    suite = load_suite(suite_dir) if suite_dir is not None else load_builtin_suite()
    rows = rows_from_suite(suite, split, template="reference")
    return sorted(len(tokenizer(render_prompt(tokenizer, r["prompt"]))["input_ids"]) for r in rows)


def reference_argv(out: Path, suite_dir: Path | None = None) -> list[str]:
    """The command, with the overrides a tiny model needs and nothing else."""
    train = prompt_lengths("train", suite_dir)
    val = prompt_lengths("validation", suite_dir)
    assert len(train) >= 2 and val, (train, val)
    prompt_limit = max(train[1], val[0])  # two training rows and one validation row fit
    context = prompt_limit + RESPONSE
    sets = {
        "model": "tiny:llama",
        # lengths
        "model_overrides": json.dumps({"max_position_embeddings": context}),
        "max_prompt_len": prompt_limit,
        "max_response_len": RESPONSE,
        "val_max_response_len": RESPONSE,
        # batch
        "prompts_per_step": 2,
        "rollout_batch_size": 2,
        "mini_batch_size": 2,
        "micro_batch_size": 1,
        "val_max_rows": 1,
        # steps
        "total_steps": 2,
    }
    argv = ["train", "ppo", "--config", "ppo_reference", "--output-dir", str(out)]
    for key, value in sets.items():
        argv += ["--set", f"{key}={value}"]
    return [*argv, "--no-progress"]


def run_cli(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -m asmopt.cli ARGV` in a fresh interpreter, as a user runs it (the reward's
    worker processes are spawned from a script with a main guard)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "asmopt.cli", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=ROOT,
    )


def metric_lines(out: Path, kind: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [m for m in lines if m["kind"] == kind]


@pytest.mark.slow  # two PPO steps on ~8,500-token prompts, on CPU: about 2.5 minutes
def test_reference_config_trains_two_steps_with_the_execution_reward(tmp_path: Path) -> None:
    out = tmp_path / "run"
    started = time.monotonic()
    proc = run_cli(reference_argv(out), timeout=1800)
    wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-4000:]
    config = (out / "config.yaml").read_text()
    assert "reward: execution" in config and "supercoder-design2" in config

    train = metric_lines(out, "train")
    assert [m["step"] for m in train] == [1, 2]
    for m in train:
        # Sandbox verdict shares, from the execution reward's `verdict` column: every
        # logged outcome is a sandbox verdict, the shares cover every sample, and the
        # build and pass rates that only sandbox verdicts get are there.
        shares = {k[len("outcome/") :]: v for k, v in m.items() if k.startswith("outcome/")}
        assert shares and set(shares) <= set(ALL_VERDICTS), m
        assert abs(sum(shares.values()) - 1.0) < 1e-9, shares
        assert "build_rate" in m and "pass_rate" in m, m
        # Design 2 pays the speedup above 1 and 0 otherwise: a random model's answers (no
        # assembly) earn 0, and none is excluded (the sandbox ran: the reward's start-up
        # dry run scored a real answer, the -O3 baseline, through it, or the run had
        # stopped there).
        assert m["reward/excluded"] == 0 and m["reward/mean"] == 0.0, m
        assert any(k.startswith("reward/asmopt/") for k in m), m
    val = metric_lines(out, "val")
    assert val and all("pass_rate" in m and m["rows"] == 1 for m in val)
    costs = {
        key: [round(m[key], 1) for m in train]
        for key in ("time/rollout_s", "time/reward_s", "time/update_s", "time/step_s")
    }
    print(f"ppo_reference, 2 steps of 2 rows: {wall:.0f} s in all; per step {costs}")


def test_the_execution_reward_reads_rows_of_the_configs_own_suite(tmp_path: Path) -> None:
    """With `suite: DIR` (`--suite`), `suite:` rows name that suite's programs, which the
    execution reward must look up there (not in the built-in suite), and its start-up dry
    run scores that suite's first program fit for reward."""
    from dataclasses import replace

    from asmopt.adequacy import is_reward_fit
    from asmopt.programs import load_builtin_suite
    from asmopt.programs.model import Suite
    from asmopt.programs.suite_io import save_suite
    from asmopt.train.config import PPOConfig
    from asmopt.train.ppo import build_reward

    builtin = load_builtin_suite()
    program = next(p for p in builtin.select(split="train") if is_reward_fit(p)[0])
    renamed = replace(program, id=f"imported_{program.id}")  # a name the built-in suite lacks
    suite = Suite("imported", {renamed.id: renamed}, {renamed.id: "train"})
    directory = save_suite(suite, tmp_path / "suite")
    options = {"reward": "supercoder-design2", "measure": "none", "backend": "thread"}
    cfg = PPOConfig(suite=str(directory), reward="execution", reward_options=options)
    reward = build_reward(cfg, None)
    try:
        scores = reward(prompts=["p"], completions=["no assembly"], program_id=[renamed.id])
        assert scores == [0.0] and reward.last_results[0].verdict == "extraction_error"
    finally:
        reward.close()


IMPORTED = {
    # name: (source, one sample test, its answer); each count alone on its line governs what
    # follows, so the learnt generators draw past the sample and carry the data their
    # answers need.
    "list_sum": (
        '#include <stdio.h>\nint main(void){int n; long s=0,x; if(scanf("%d",&n)!=1) return 1;'
        ' for(int i=0;i<n;i++){ if(scanf("%ld",&x)!=1) return 2; s+=x*(i+1);}'
        ' printf("%ld\\n",s); return 0;}\n',
        "5\n3 1 4 1 5\n",
        "46\n",
    ),
    "pair_products": (
        '#include <stdio.h>\nint main(void){int n; unsigned long a,b,s=0; if(scanf("%d",&n)!=1)'
        ' return 1; for(int i=0;i<n;i++){ if(scanf("%lu %lu",&a,&b)!=2) return 2; s=s*31+a*b;}'
        ' printf("%lu\\n",s); return 0;}\n',
        "3\n1 2\n3 4\n5 6\n",
        "2324\n",
    ),
    "max_prefix": (
        '#include <stdio.h>\nint main(void){int n; long s=0,x,best=-1000000000000L;'
        ' if(scanf("%d",&n)!=1) return 1; for(int i=0;i<n;i++){ if(scanf("%ld",&x)!=1)'
        ' return 2; s+=x; if(s>best) best=s;} printf("%ld %ld\\n",best,s); return 0;}\n',
        "6\n-2 7 -1 3 -8 4\n",
        "7 3\n",
    ),
}


def _split_seed(names: list[str]) -> str:
    """A split seed under which the pool has two training programs and one validation
    program (a user picks `--split-seed` the same way: the split is a hash of it)."""
    from asmopt.data.common import split_for

    for k in range(1000):
        seed = f"s{k}"
        splits = [split_for(name, 0.34, 0.0, seed) for name in names]
        if splits.count("train") >= 2 and splits.count("validation") >= 1:
            return seed
    raise AssertionError("no seed splits the pool")


@pytest.mark.slow  # an import, then two PPO steps on short prompts: about 2 minutes
def test_reference_config_trains_on_an_imported_suites_rows(tmp_path: Path) -> None:
    """The published job on a suite a user imported (`asmopt data import dir`, learnt
    inputs, adequacy and entropy marks), named with `--set suite=DIR`: the reward looks the
    rows' programs up there, every step logs sandbox verdicts and design-2 rewards."""
    pool = tmp_path / "pool"
    for name, (source, stdin, answer) in IMPORTED.items():
        (pool / name / "tests").mkdir(parents=True)
        (pool / name / f"{name}.c").write_text(source)
        (pool / name / "tests" / "a.in").write_text(stdin)
        (pool / name / "tests" / "a.out").write_text(answer)
    suite_dir = tmp_path / "suite"
    seed = _split_seed(sorted(IMPORTED))
    imported = run_cli(
        ["data", "import", "dir", str(pool), "-o", str(suite_dir), "--val-frac", "0.34",
         "--test-frac", "0", "--split-seed", seed, "--json"],
        timeout=900,
    )
    assert imported.returncode == 0, imported.stderr[-4000:]
    from asmopt.adequacy import is_reward_fit
    from asmopt.programs.suite_io import load_suite

    suite = load_suite(suite_dir)
    assert all(is_reward_fit(p)[0] for p in suite), [is_reward_fit(p) for p in suite]

    out = tmp_path / "run"
    argv = reference_argv(out, suite_dir)
    proc = run_cli([*argv, "--set", f"suite={suite_dir}"], timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"suite: {suite_dir}" in (out / "config.yaml").read_text()
    train = metric_lines(out, "train")
    assert [m["step"] for m in train] == [1, 2]
    for m in train:
        shares = {k[len("outcome/") :]: v for k, v in m.items() if k.startswith("outcome/")}
        assert shares and set(shares) <= set(ALL_VERDICTS), m
        assert m["reward/excluded"] == 0 and m["reward/mean"] == 0.0, m
