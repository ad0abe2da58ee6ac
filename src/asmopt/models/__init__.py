"""Model architectures implemented natively in this package (no `trust_remote_code`).

`import asmopt` makes transformers' Auto classes know their model types (see
`asmopt.transformers_registration`), e.g. `AutoModelForCausalLM.from_pretrained` loads PLT
and LoopCoder directories; the subpackages import their model code on first use.
"""
