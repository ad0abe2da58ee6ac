#include <stdio.h>
int main(void) { volatile int a = 1, b = 0; printf("%d\n", a / b); return 0; }
