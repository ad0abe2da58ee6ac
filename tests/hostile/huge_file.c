#include <stdio.h>
#include <string.h>
int main(void) {
    char buf[65536]; memset(buf, 'x', sizeof buf);
    FILE *f = fopen("/tmp/huge.bin", "wb");
    if (!f) return 4;
    for (long i = 0; i < 100000; i++) fwrite(buf, 1, sizeof buf, f);
    fclose(f);
    printf("wrote\n");
    return 0;
}
