#include <time.h>
int main(void) { struct timespec t = {1000, 0}; for (;;) nanosleep(&t, 0); }
