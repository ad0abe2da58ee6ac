"""The report: a self-contained HTML page and a Markdown summary with the headline numbers."""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest

from asmopt.evaluate import CheckResult, SampleOutcome
from asmopt.judge import TestVerdict, Verdict
from asmopt.measure.speedup import MeasureMode, MeasureStatus, ProgramSpeedup, TestSpeedup
from asmopt.programs.model import Program, TestCase
from asmopt.report import PlotsUnavailable, write_report
from asmopt.store import ResultStore

BASELINE = "\t.text\n\t.globl main\nmain:\n\tmovl $1, %eax\n\timull %eax, %eax\n\tret\n"
FASTER = "\t.text\n\t.globl main\nmain:\n\tmovl $1, %eax\n\tret\n"


def _measured(pid: str, ratio: float, low: float, high: float, asm: str) -> SampleOutcome:
    t = TestSpeedup("t1", MeasureMode.TIME, MeasureStatus.MEASURED, ratio, low, high, n=8)
    sp = ProgramSpeedup(MeasureMode.TIME, MeasureStatus.MEASURED, ratio, low, high, tests=[t])
    check = CheckResult(
        pid,
        Verdict.PASS,
        "all 1 tests passed",
        [TestVerdict("t1", Verdict.PASS)],
        speedup=sp,
    )
    return SampleOutcome(pid, 0, check, assembly=asm)


def _new_store(path: Path, pids: tuple[str, ...]) -> ResultStore:
    """A run of one-test programs `pids`, each with the BASELINE assembly."""
    s = ResultStore(path)
    s.begin_run(
        {"suite": "demo", "policy": "unit", "split": "all", "measure": "time"},
        {"cpu_model": "Test CPU", "kernel": "6.1", "compiler": "gcc 12"},
    )
    for pid in pids:
        s.put_program(
            Program(
                id=pid,
                source=f"int main(){{return 0;}} // {pid}",
                tests=(TestCase("t1", b"", b""),),
            ),
            "test",
            BASELINE,
        )
    return s


@pytest.fixture()
def store(tmp_path: Path) -> ResultStore:
    s = _new_store(tmp_path / "run", ("alpha", "beta", "gamma", "delta"))
    s.record(_measured("alpha", 1.5, 1.4, 1.6, FASTER))
    s.record(_measured("beta", 0.99, 0.97, 1.01, BASELINE + "\tnop\n"))
    copy = CheckResult(
        "gamma",
        Verdict.PASS,
        "ok",
        [TestVerdict("t1", Verdict.PASS)],
        speedup=ProgramSpeedup.copy_of_baseline(MeasureMode.TIME, ["t1"]),
    )
    s.record(SampleOutcome("gamma", 0, copy, assembly=BASELINE, is_copy=True))
    wrong = CheckResult(
        "delta",
        Verdict.WRONG_OUTPUT,
        "test t1: line 1: expected '1', got '2'",
        [TestVerdict("t1", Verdict.WRONG_OUTPUT, "line 1: expected '1'")],
    )
    s.record(SampleOutcome("delta", 0, wrong, assembly="broken"))
    yield s
    s.close()


def test_html_report_has_the_headline_numbers(store: ResultStore, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")  # the inline plot
    html_path, md_path = write_report(store, tmp_path / "out")
    html = html_path.read_text()
    assert html.startswith("<!DOCTYPE html>") and "</html>" in html
    assert "75.0%" in html  # test pass: 3 of 4
    assert "25.0%" in html  # significantly faster, %Opt, copies: 1 of 4 each
    assert "1.500x" in html and "[1.400, 1.600]" in html
    assert "data:image/png;base64," in html  # the plot is inline: the page stands alone
    assert "wrong_output" in html and "expected" in html  # failure taxonomy with an example
    assert "Largest wins" in html and "imull" in html  # the diff shows the removed line
    assert "Test CPU" in html  # environment fingerprint
    md = md_path.read_text()
    assert "| test pass | 75.0% | reference |" in md
    assert "```diff" in md and "-\timull %eax, %eax" in md


def test_missing_matplotlib_is_a_clear_error(
    store: ResultStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(PlotsUnavailable, match="pip install matplotlib"):
        write_report(store, tmp_path / "a")
    html_path, _ = write_report(store, tmp_path / "b", plots=False)
    assert "1.500x" in html_path.read_text()


def _search_record(chosen: str, budget_hit: bool) -> dict[str, object]:
    tried = [
        {
            "name": "gcc -O2",
            "status": "not_chosen",
            "detail": "",
            "speedup": 1.04,
            "low": 0.98,
            "high": 1.1,
        },
        {
            "name": "gcc -O3 PGO",
            "status": "chosen",
            "detail": "",
            "speedup": 1.6,
            "low": 1.5,
            "high": 1.7,
        },
        {
            "name": "clang -O3",
            "status": "unavailable",
            "detail": "clang is not installed",
            "speedup": None,
            "low": None,
            "high": None,
        },
        {
            "name": "gcc -Os",
            "status": "skipped_budget",
            "detail": "budget spent",
            "speedup": None,
            "low": None,
            "high": None,
        },
    ]
    return {
        "chosen": chosen,
        "tried": tried,
        "selection": "scored input",
        "selection_tests": ["t1"],
        "budget_s": 30.0,
        "budget_hit": budget_hit,
        "seconds": 31.2,
    }


def _search_store(path: Path, budget_hit: bool) -> ResultStore:
    """A compiler-search run with one measured program whose record lists its variants."""
    s = ResultStore(path)
    s.begin_run({"suite": "demo", "policy": "compiler-search", "measure": "time"}, {})
    s.put_program(
        Program(id="alpha", source="int main(){}", tests=(TestCase("t1", b"", b""),)),
        "test",
        BASELINE,
    )
    out = _measured("alpha", 1.5, 1.4, 1.6, FASTER)
    out.policy_info = {"policy_s": 31.2, "search": _search_record("gcc -O3 PGO", budget_hit)}
    s.record(out)
    return s


def test_report_shows_every_compiler_search_variant(tmp_path: Path) -> None:
    """A compiler-search run's stored record becomes a per-program table in the report,
    naming the chosen variant, the selection input and the programs that hit their budget."""
    s = _search_store(tmp_path / "run", budget_hit=True)
    _, md_path = write_report(s, tmp_path / "out", plots=False)
    s.close()
    md = md_path.read_text()
    assert "alpha: chose gcc -O3 PGO; selected on the scored input" in md
    assert "| gcc -O2 | measured, not chosen | 1.040x | [0.980, 1.100] |" in md
    assert "| clang -O3 | compiler not installed |" in md
    assert "| gcc -Os | skipped (budget spent) |" in md
    assert "Programs that hit their search budget: alpha" in md
    # the answer's wall time includes the search's own time
    assert "| 31.2 |" in md


def test_report_refuses_a_run_that_mixes_suites(store: ResultStore, tmp_path: Path) -> None:
    from asmopt.report.build import MixedSuitesError

    store.set_meta("sessions", [{"suite_id": "llvm@aaaa"}, {"suite_id": "llvm@bbbb"}])
    with pytest.raises(MixedSuitesError, match="2 suites"):
        write_report(store, tmp_path / "out", plots=False)


def test_results_show_verbose_lists_every_variant_and_compare_names_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asmopt.cli

    s = _search_store(tmp_path / "run", budget_hit=False)
    s.close()
    assert asmopt.cli.main(["results", "show", str(tmp_path / "run"), "-v"]) == 0
    text = capsys.readouterr().out
    assert "alpha: chose gcc -O3 PGO; selected on the scored input" in text
    assert "gcc -O2" in text and "[0.980, 1.100]" in text and "wall s" in text
    assert asmopt.cli.main(["results", "show", str(tmp_path / "run")]) == 0
    assert "gcc -O2" not in capsys.readouterr().out  # the variant table only with -v
    assert (
        asmopt.cli.main(["results", "compare", str(tmp_path / "run"), str(tmp_path / "run")]) == 0
    )
    header = capsys.readouterr().out.splitlines()[0]
    assert "A verdict" in header and "B note" in header and "changed" in header


def test_report_names_answers_whose_timing_stopped_on_a_budget(tmp_path: Path) -> None:
    s = _new_store(tmp_path / "run", ("slow", "fine"))
    slow = _measured("slow", 1.2, 1.0, 1.4, FASTER)
    assert slow.check.speedup is not None
    slow.check.speedup.tests[0].context = {"stopped": "candidate_budget"}
    s.record(slow)
    fine = _measured("fine", 1.5, 1.45, 1.55, FASTER + "\tnop\n")
    assert fine.check.speedup is not None
    fine.check.speedup.tests[0].context = {"stopped": "target"}
    s.record(fine)
    html_path, md_path = write_report(s, tmp_path / "out", plots=False)
    md = md_path.read_text()
    assert "Timing stopped on its budget" in md and "slow#0" in md and "fine#0" not in md
    assert "slow#0" in html_path.read_text()
    s.close()


def test_html_escapes_what_a_stored_run_holds(tmp_path: Path) -> None:
    """Program ids, messages, run settings and assembly come from a stored run, which may
    have been written by anyone: in the page they are text, never markup."""
    hostile = "<script>alert(1)</script>"
    s = _new_store(tmp_path / "run", ("alpha",))
    s.set_meta("run", {"suite": hostile, "policy": "unit", "split": "all", "measure": "time"})
    # A database written by hand need not hold a valid program id.
    s.record(_measured(hostile, 1.5, 1.4, 1.6, FASTER + f"\t# {hostile}\n"))
    wrong = CheckResult(
        "alpha",
        Verdict.WRONG_OUTPUT,
        f"test t1: got {hostile}",
        [TestVerdict("t1", Verdict.WRONG_OUTPUT, hostile)],
    )
    s.record(SampleOutcome("alpha", 0, wrong, assembly="broken"))
    html_path, md_path = write_report(s, tmp_path / "out", plots=False)
    s.close()
    html = html_path.read_text()
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<title>asmopt report: &lt;script&gt;" in html  # the run's settings too
    assert "alpha: test t1: got &lt;script&gt;" in html  # the failure taxonomy's example
    assert "<td>test t1: got &lt;script&gt;" in html  # the answer's detail
    assert '<table class="diff"' in html  # difflib's own table stays markup...
    assert "#&nbsp;&lt;script&gt;" in html  # ...and escapes the assembly it shows
    # Markdown is text: it keeps the id as stored.
    assert f"| {hostile} | 0 | pass |" in md_path.read_text()
