#include <stdio.h>
#include <time.h>
#include <unistd.h>
/* The child sleeps long after its parent exits; the sandbox must not let it linger. */
int main(void) {
    pid_t p = fork();
    if (p == 0) { setsid(); struct timespec t = {600, 0}; nanosleep(&t, 0); return 0; }
    printf("42\n");
    return 0;
}
