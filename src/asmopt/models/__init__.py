"""Model architectures implemented natively in this package (no `trust_remote_code`).

Importing a subpackage registers its classes with transformers' Auto classes, e.g.
`import asmopt.models.plt` makes `AutoModelForCausalLM.from_pretrained` load PLT and
LoopCoder directories.
"""
