"""Fault 4: `data import dir` never follows a symlink out of the pool (docs/faults.md)."""

from __future__ import annotations

from pathlib import Path

from faultkit import ECHO_C, run_asmopt


def _problem(pool: Path, name: str) -> Path:
    pdir = pool / name
    (pdir / "tests").mkdir(parents=True)
    (pdir / f"{name}.c").write_text(ECHO_C.replace("WORK", "1"))
    (pdir / "tests" / "t.in").write_text("3\n")
    return pdir


def test_fault4_symlinked_expected_output_outside_the_pool_is_dropped(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not a test output\n")
    pool = tmp_path / "pool"
    good = _problem(pool, "good")
    (good / "tests" / "t.out").write_text("3\n")
    bad = _problem(pool, "leaky")
    (bad / "tests" / "t.out").symlink_to(secret)
    out = tmp_path / "suite"
    proc = run_asmopt("data", "import", "dir", str(pool), "-o", str(out), "--no-adequacy")
    assert proc.returncode == 0, proc.stderr
    assert "leaky" in proc.stdout + proc.stderr and "outside the pool" in proc.stdout + proc.stderr
    assert (out / "programs" / "good").is_dir()
    assert not (out / "programs" / "leaky").exists()
    assert not any(
        "not a test output" in p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()
    )


def test_fault4_symlink_inside_the_pool_is_fine(tmp_path: Path) -> None:
    pool = tmp_path / "pool"
    pdir = _problem(pool, "inner")
    (pdir / "shared.out").write_text("3\n")
    (pdir / "tests" / "t.out").symlink_to(pdir / "shared.out")
    proc = run_asmopt(
        "data", "import", "dir", str(pool), "-o", str(tmp_path / "s"), "--no-adequacy"
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "s" / "programs" / "inner" / "tests").is_dir()
