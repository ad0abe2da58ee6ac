#include <stdio.h>
int main(void) { for (;;) fputs("yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\n", stdout); }
