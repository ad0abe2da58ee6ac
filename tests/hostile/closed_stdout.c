#include <stdio.h>
#include <unistd.h>
int main(void) { close(1); printf("42\n"); fflush(stdout); return 0; }
