"""Copy detection: edits that change no instruction are copies, real edits are not."""

from __future__ import annotations

import pytest

from asmopt.measure.canonical import canonical_hash, canonical_text, is_copy

BASE = """\t.file\t"main.c"
\t.text
\t.section\t.rodata.str1.1,"aMS",@progbits,1
.LC0:
\t.string\t"%d # not a comment\\n"
\t.section\t.text.startup,"ax",@progbits
\t.p2align 4
\t.globl\tmain
\t.type\tmain, @function
main:
.LFB0:
\t.cfi_startproc
\tsubq\t$8, %rsp
\t.cfi_def_cfa_offset 16
\tmovl\t$3, %esi
.L2:
\tsubl\t$1, %esi
\tjne\t.L2
\tleaq\t.LC0(%rip), %rdi
\txorl\t%eax, %eax
\tcall\tprintf@PLT
\txorl\t%eax, %eax
\taddq\t$8, %rsp
\tret
\t.cfi_endproc
.LFE0:
\t.size\tmain, .-main
\t.ident\t"GCC: (Debian 12.2.0-14) 12.2.0"
\t.section\t.note.GNU-stack,"",@progbits
"""


def _edit(old: str, new: str) -> str:
    assert old in BASE
    return BASE.replace(old, new)


COPIES = {
    "identical": BASE,
    "comments": BASE.replace("\tret\n", "\tret  # done\n").replace(
        "main:\n", "main: /* entry */\n# a comment line\n"
    ),
    "whitespace": BASE.replace("\t", "    ").replace(", ", ",").replace("\n", "\n\n"),
    "bookkeeping directives removed": "\n".join(
        line
        for line in BASE.splitlines()
        if not line.strip().startswith((".cfi", ".file", ".ident", ".size", ".type"))
    ),
    "note section removed": BASE.replace('\t.section\t.note.GNU-stack,"",@progbits\n', ""),
    "labels renamed": BASE.replace(".L2", ".Lloop").replace(".LC0", ".Lfmt"),
    "unused labels dropped": BASE.replace(".LFB0:\n", "").replace(".LFE0:\n", ""),
    "semicolon separated": _edit("\txorl\t%eax, %eax\n\taddq", "\txorl %eax,%eax; addq"),
}

NOT_COPIES = {
    "changed immediate": _edit("movl\t$3, %esi", "movl\t$4, %esi"),
    "swapped instructions": _edit(
        "\tleaq\t.LC0(%rip), %rdi\n\txorl\t%eax, %eax\n",
        "\txorl\t%eax, %eax\n\tleaq\t.LC0(%rip), %rdi\n",
    ),
    "alignment changed": _edit("\t.p2align 4\n", "\t.p2align 5\n"),
    "string changed": _edit('"%d # not a comment\\n"', '"%d # not a comment!\\n"'),
    "global renamed": BASE.replace("main", "entry"),
    "instruction added": _edit("\tret\n", "\tnop\n\tret\n"),
}


@pytest.mark.parametrize("name", sorted(COPIES))
def test_copy_is_detected(name: str) -> None:
    assert is_copy(COPIES[name], BASE), canonical_text(COPIES[name])
    assert canonical_hash(COPIES[name]) == canonical_hash(BASE)


@pytest.mark.parametrize("name", sorted(NOT_COPIES))
def test_real_change_is_not_a_copy(name: str) -> None:
    assert not is_copy(NOT_COPIES[name], BASE)


def test_strings_keep_their_hash_signs() -> None:
    assert '"%d # not a comment\\n"' in canonical_text(BASE)
