"""One prompt per template name: what training rows, dataset exports and evaluation requests
show a model is the same text, so a model trained on one is evaluated on the same words."""

from __future__ import annotations

from asmopt.data.export import make_row
from asmopt.data.prompt import build_c_only_question
from asmopt.policies.base import PolicyRequest
from asmopt.policies.llm import Completion, LLMPolicy
from asmopt.policies.prompts import load_template
from asmopt.programs import load_builtin_suite
from asmopt.toolchain import DEFAULT_O3_FLAGS, default_toolchain
from asmopt.train.data import rows_from_suite


class RecordingBackend:
    """A back-end that answers with the baseline and keeps the messages it was sent (the
    model is not what is tested here: the text it is shown is)."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.seen: list[list[dict[str, str]]] = []

    def generate(self, messages, n, params):  # type: ignore[no-untyped-def]
        self.seen.append(messages)
        return [Completion(text=f"```assembly\n{self.answer}\n```")] * n


def test_training_rows_exports_and_eval_requests_render_the_same_prompt() -> None:
    suite = load_builtin_suite()
    program = suite.select(split="train")[0]
    baseline = default_toolchain().baseline_assembly(program, DEFAULT_O3_FLAGS)

    backend = RecordingBackend(baseline)
    LLMPolicy(backend=backend).propose(
        PolicyRequest(program=program, baseline_asm=baseline, num_samples=1)
    )
    [eval_messages] = backend.seen
    train_row = next(r for r in rows_from_suite(suite, "train") if r["program_id"] == program.id)
    export_row = make_row(program, "train", 0, baseline, "asmopt")

    assert train_row["prompt"] == eval_messages
    assert export_row["prompt"] == eval_messages
    assert export_row["extra_info"]["question"] == eval_messages[0]["content"]
    # The text is the reference dataset's: the task sentence, both fences, the last line.
    text = eval_messages[0]["content"]
    assert text.startswith("Given the following C code and assembly code, your task is")
    assert f"```c\n{program.source.rstrip()}\n```" in text
    assert f"```assembly\n{baseline.rstrip()}\n```" in text
    assert text.endswith("Optimized Assembly Code:\n")


def test_the_c_only_export_is_the_c_only_template() -> None:
    program = load_builtin_suite().select(split="train")[0]
    text = build_c_only_question(program.source)
    assert text == load_template("c_only").render(program.source, "")
    assert "Assembly Code:\n\n```assembly" not in text and program.source.rstrip() in text


def test_feedback_goes_between_the_assembly_and_the_instructions() -> None:
    template = load_template("reference")
    plain = template.render("int main(void){return 0;}", "main:\n\tret")
    with_feedback = template.render("int main(void){return 0;}", "main:\n\tret", "test t1: wrong")
    assert "Feedback on your previous attempt:\ntest t1: wrong\n" in with_feedback
    head, tail = plain.split("Only output", 1)
    assert with_feedback.startswith(head.rstrip("\n")) and with_feedback.endswith(tail)


def test_a_source_that_spells_placeholders_cannot_pull_other_text_into_its_prompt() -> None:
    """Attack: a C source (an imported dataset's, so untrusted) that writes `$assembly`,
    `${feedback}` or `$c_code` in a comment must come out literally: a template renders its
    values once, never the placeholders inside them."""
    source = "/* $assembly ${feedback} $c_code $$ */\nint main(void) { return 0; }\n"
    text = load_template("reference").render(source, "main:\n\tret", "SECRET-FEEDBACK")
    assert source.rstrip("\n") in text
    assert text.count("main:\n\tret") == 1 and text.count("SECRET-FEEDBACK") == 1


def test_no_prompt_carries_a_test_input_or_expected_output() -> None:
    """What every template shows a policy is the C code and the -O3 assembly: no test's
    stdin or expected output appears in it unless the source itself spells it."""
    suite = load_builtin_suite()
    toolchain = default_toolchain()
    for program in suite.select(split="test"):
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        for name in ("reference", "c_only", "few_shot", "diff"):
            text = load_template(name).render(program.source, baseline)
            for test in program.tests:
                for hidden in (test.stdin, test.expected_stdout):
                    value = hidden.decode("utf-8", "replace").strip()
                    if len(value) >= 12 and value not in program.source + baseline:
                        assert value not in text, (program.id, name, test.name)
