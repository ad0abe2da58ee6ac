"""Yes/no problems about a structure, one answer per test case, with samples that show it:
a lapindrome (are a word's halves anagrams of each other?), a queue (did anyone move more
than two places, and if not how many bribes?) and a line of seats (does everyone sit at
least four places from the next person?). A uniform draw answers them one way nearly
always, so the import tests and the exploit tests both use them to show that
the learnt generator plants the structure (data/shapes.py). Beside them, a ledger whose
contract the rows show (days in order, an amount 0 that ends the input), which a learnt
generator keeps while it grows the rows (data/mutator.py)."""

LAPINDROMES_C = r"""#include <stdio.h>
#include <string.h>
int main(void)
{
    int t; static char s[1100];
    if (scanf("%d", &t) != 1) return 1;
    while (t--) {
        if (scanf("%1000s", s) != 1) return 2;
        int n = (int)strlen(s), a[26] = {0}, ok = 1;
        for (int i = 0; i < n / 2; i++) { a[s[i] - 'a']++; a[s[n - 1 - i] - 'a']--; }
        for (int c = 0; c < 26; c++) ok &= a[c] == 0;
        puts(ok ? "YES" : "NO");
    }
    return 0;
}
"""
QUEUE_C = r"""#include <stdio.h>
int main(void)
{
    int t, n, q[2000];
    if (scanf("%d", &t) != 1) return 1;
    while (t--) {
        if (scanf("%d", &n) != 1 || n < 1 || n > 2000) return 2;
        for (int i = 0; i < n; i++) if (scanf("%d", &q[i]) != 1) return 3;
        long bribes = 0; int chaotic = 0;
        for (int i = n - 1; i >= 0; i--) {
            if (q[i] - (i + 1) > 2) { chaotic = 1; break; }
            for (int j = q[i] - 2 > 0 ? q[i] - 2 : 0; j < i; j++) bribes += q[j] > q[i];
        }
        if (chaotic) puts("Too chaotic"); else printf("%ld\n", bribes);
    }
    return 0;
}
"""
SPACING_C = r"""#include <stdio.h>
int main(void)
{
    int t, n, seat;
    if (scanf("%d", &t) != 1) return 1;
    while (t--) {
        if (scanf("%d", &n) != 1 || n < 1) return 2;
        int last = -1000000, apart = 1;
        for (int i = 0; i < n; i++) {
            if (scanf("%d", &seat) != 1) return 3;
            if (seat) { if (i - last < 4) apart = 0; last = i; }
        }
        puts(apart ? "APART" : "CLOSE");
    }
    return 0;
}
"""
# Two sample files; only the first shows people kept apart (a uniform line of ten seats
# keeps them four apart with chance 36/1024), and both files' lines are drawn that way.
SPACING_SAMPLES = (
    "2\n10\n1 0 0 0 1 0 0 0 1 0\n5\n1 1 0 0 0\n",
    "4\n5\n1 1 0 0 0\n7\n0 0 1 0 0 1 0\n6\n0 0 0 0 0 1\n8\n1 0 1 0 0 0 0 0\n",
)
# A ledger: `day, amount` rows up to the one whose amount is 0; a day before the one above
# it is invalid input (exit 1). The balance earns 1 per 1000 per day it is positive.
LEDGER_C = r"""#include <stdio.h>
int main(void)
{
    int day, last = 0; long amount, balance = 0, interest = 0;
    for (;;) {
        if (scanf("%d, %ld", &day, &amount) != 2 || day < last) {
            printf("invalid\n");
            return 1;
        }
        if (balance > 0) interest += balance / 1000 * (day - last);
        balance += amount;
        last = day;
        if (amount == 0) break;
    }
    printf("%ld %ld\n", balance, interest);
    return 0;
}
"""
# Its sample: four transactions, then the amount 0 that ends them.
LEDGER_SAMPLE = "3, 2000\n10, -500\n45, 7000\n46, -100\n90, 0\n"

# Pairs `a b` read until the input ends, one answer each (a chicken problem's shape: what
# is left over, or what is missing). Its sample shows three pairs and no count.
PAIRS_TO_END_C = r"""#include <stdio.h>
int main(void)
{
    long a, b;
    while (scanf("%ld %ld", &a, &b) == 2) {
        if (a < b) printf("left %ld\n", b - a);
        else printf("short %ld\n", a - b);
    }
    return 0;
}
"""
# The same rows, but exactly three of them are read: rows past the third are not its input.
PAIRS_THREE_C = r"""#include <stdio.h>
int main(void)
{
    long a, b;
    for (int i = 0; i < 3; i++) {
        if (scanf("%ld %ld", &a, &b) != 2) return 1;
        printf("%ld\n", a < b ? b - a : a - b);
    }
    return 0;
}
"""
PAIRS_SAMPLE = "20 100\n2 3\n10 1\n"
# Cases read until the input ends, each a line that states its own length (`n v1 .. vn`):
# the least and the most of each. Its sample shows four cases of four lengths.
CASES_TO_END_C = r"""#include <stdio.h>
int main(void)
{
    int n, k = 0;
    while (scanf("%d", &n) == 1) {
        long lo = 0, hi = 0, v;
        for (int i = 0; i < n; i++) {
            if (scanf("%ld", &v) != 1) return 1;
            if (i == 0 || v < lo) lo = v;
            if (i == 0 || v > hi) hi = v;
        }
        printf("Case %d: %ld %ld\n", ++k, lo, hi);
    }
    return 0;
}
"""
CASES_SAMPLE = "2 4 10\n9 2 5 6 4 5 9 2 1 4\n7 6 10 1 2 5 10 9\n1 9\n"
# The same pairs up to a terminator `0 0`; a read that fails is an error (exit 1), so only
# the terminator says where the rows end.
PAIRS_UNTIL_ZEROS_C = r"""#include <stdio.h>
int main(void)
{
    long a, b;
    for (;;) {
        if (scanf("%ld %ld", &a, &b) != 2) return 1;
        if (a == 0 && b == 0) break;
        printf("%ld\n", a < b ? b - a : a - b);
    }
    return 0;
}
"""
# Reads each line as a string of digits until a line "0" and prints its value modulo a
# prime: a number too long for any integer type is text to it. Its sample: four numbers.
DIGITS_C = r"""#include <stdio.h>
#include <string.h>
int main(void)
{
    static char s[100001];
    while (scanf("%100000s", s) == 1 && strcmp(s, "0") != 0) {
        unsigned long long v = 0;
        for (size_t i = 0; s[i]; i++) v = (v * 10 + (unsigned)(s[i] - '0')) % 1000000007ULL;
        printf("%llu\n", v);
    }
    return 0;
}
"""
DIGITS_SAMPLE = "25114\n1111111111\n3333333333\n1013\n0\n"

# One list of numbers read until the input ends, no count before it: the place of its
# least value (the first, on a tie) and the sum of its values, each weighted by its place.
# Its sample shows five values on one line.
LIST_TO_END_C = r"""#include <stdio.h>
int main(void)
{
    long x, least = 0, s = 0;
    int i = 0, at = 0;
    while (scanf("%ld", &x) == 1) {
        if (i == 0 || x < least) { least = x; at = i; }
        s += x * (i % 7 + 1);
        i++;
    }
    printf("%d %ld\n", at, s);
    return 0;
}
"""
# The same list, but exactly five values are read: values past the fifth are not its input.
LIST_FIVE_C = LIST_TO_END_C.replace(
    'while (scanf("%ld", &x) == 1) {', 'while (i < 5 && scanf("%ld", &x) == 1) {'
)
LIST_SAMPLE = "3 4 1 7 2\n"

# Pairs `a b` after their count n, at most 75 pairs of values at most 40 (its assertions),
# folded into one 64-bit hash. Its sample of 70 pairs is already past the largest target
# of every growing level but `grown`, whose sizes its limits refuse.
HASHED_PAIRS_C = r"""#include <assert.h>
#include <stdio.h>
int main(void)
{
    int n; unsigned long a, b, s = 0;
    if (scanf("%d", &n) != 1) return 1;
    assert(n > 0 && n < 76);
    for (int i = 0; i < n; i++) {
        if (scanf("%lu %lu", &a, &b) != 2) return 2;
        assert(a <= 40 && b <= 40);
        s = s * 1000003 + a * 41 + b;
    }
    printf("%lu\n", s);
    return 0;
}
"""
SEVENTY_PAIRS = "70\n" + "".join(f"{i % 40 + 1} {7 * i % 40 + 1}\n" for i in range(70))

SAMPLES = {
    "lapindromes": "6\ngaga\nabcde\nrotor\nxyzxy\nabbaab\nabcab\n",
    "queue": "3\n5\n2 1 5 3 4\n5\n2 5 1 3 4\n8\n1 2 5 3 4 7 8 6\n",
}
