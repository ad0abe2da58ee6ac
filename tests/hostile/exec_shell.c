#include <unistd.h>
int main(void) { char *argv[] = {"/bin/sh", "-c", "echo pwned", 0}; execv("/bin/sh", argv); execv("/proc/self/exe", argv); return 7; }
