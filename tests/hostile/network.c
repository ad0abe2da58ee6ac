#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET; a.sin_port = htons(80); a.sin_addr.s_addr = htonl(0x01010101);
    int r = connect(s, (struct sockaddr *)&a, sizeof a);
    printf("socket=%d connect=%d\n", s, r);
    return 0;
}
