"""asmopt: language models that make x86-64 assembly faster than gcc -O3, judged safely."""

__version__ = "0.1.0"
