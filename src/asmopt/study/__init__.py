"""The loop-count study: how many loops should a looped (PLT) decoder run?

Corpus (`corpus`, `synthetic`), tokenizer (`tokenizer`), token arrays (`data`), matched
training across loop counts (`lm`), diagnostics (`diagnostics`), the task metric (`task`), the
study itself (`loops`) and its report (`report`). See docs/study.md.
"""
