"""Test adequacy: do a program's tests reject trivial and slightly wrong programs?

A reward is only as honest as the tests behind it. If a program's tests accept a `main`
that returns 0 at once, or one that prints the same text for every input, or the -O3
assembly with one `add` turned into `sub`, then a policy is paid for answers that are
wrong: a reward hole. This package looks for such holes by building and running probe
candidates through the normal sandboxed path (the toolchain sandbox to assemble and link,
`evaluate.check_candidate` with `stop_on_failure=True` to run), exactly as a model's answer
would be judged:

* `return0`: `main` returns 0 at once and prints nothing;
* `print_nothing`: prints nothing and exits with the first test's expected exit code
  (the same probe as `return0` when that code is 0);
* `constant_output`: prints the first test's expected stdout, whatever the input, and exits
  with that test's expected exit code;
* mutants: the program's -O3 baseline with ONE arithmetic or branch instruction changed
  (`add`<->`sub`, `imul`->`add`, `xor`->`or`, `je`<->`jne`, ...; see `MUTATIONS`).

Rules (docs/adequacy.md):

* no tests, or one test and no input generator (one fixed input: printing the constant
  answer passes) -> UNFIT by construction; with a generator, one fixed test is judged like
  any other number of them, since every check also draws inputs;
* any trivial probe passing every test (the fixed ones and K drawn inputs per class, as
  any answer is judged) -> UNFIT;
* the -O3 baseline failing its own tests -> UNFIT (nothing can be judged against it);
* mutants are judged like any answer: on the fixed tests and then on K inputs per size
  class drawn from a secret seed (`fresh`, asmopt.fresh), so a program's drawn inputs
  count towards killing them as much as its fixed tests;
* a mutant that survives may be an *equivalent* mutant (a change that cannot alter the
  output, e.g. a flipped branch into two identical blocks). Where the program can draw
  inputs, each survivor is run against the baseline on EQUIVALENCE_DRAWS inputs of its
  light classes; one that never differs is reported as equivalent and not counted. The
  kill rate is killed / built and killed / (built - equivalent);
* one survivor proves nothing, but when at least half of the non-equivalent mutants
  survive, equivalence cannot explain it away: the tests barely look at the computation.
  So: UNFIT when survivors >= half of the non-equivalent mutants built; otherwise FIT,
  with a warning naming every survivor.

The result is an `AdequacyReport`. Its mark lives in the program's metadata on disk
(`program.json` -> `metadata.adequacy`, with `checked_with` naming the toolchain), and
`is_reward_fit` reads it, beside the rule that no answer can be precomputed (a program
without an input generator, or with a tabulable timed class, asmopt.entropy, is unfit
whatever its marks say): the reward service, every other reward path, training rows and
exports refuse unfit programs unless explicitly allowed. A program with a generator that
was never checked (or whose source or tests changed since) counts as fit but "not
checked"; the mark is cheap to add with `asmopt suite verify --write-marks`.

The package, one job a module: `report.py` (the `AdequacyReport` and its `Mutation`s, as
stored in a mark), `fitness.py` (whether a program is fit for reward, from its marks, and
the refusal of unfit programs), `probes.py` (the trivial probes' assembly), `mutants.py`
(the mutation operators and where they apply in a .s), `check.py` (probes and mutants built
and judged, survivors checked for equivalence, the verdict) and `summary.py` (kill rates
over many reports). The fitness verdict (`is_reward_fit`, `require_fit`, `unfit_programs`,
`UnfitProgramError`) is importable from the package itself: the reward paths, training
rows, exports, the eval run and the CLI all read it.
"""

from __future__ import annotations

from asmopt.adequacy.fitness import UnfitProgramError, is_reward_fit, require_fit, unfit_programs

__all__ = ["UnfitProgramError", "is_reward_fit", "require_fit", "unfit_programs"]
