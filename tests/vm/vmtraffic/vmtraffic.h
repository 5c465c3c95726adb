// SPDX-License-Identifier: GPL-2.0-only
/* vmtraffic's commands, a file each (main.c says what each does and
 * prints), and the helpers they share (util.c). */
#ifndef VMTRAFFIC_H
#define VMTRAFFIC_H

#include <sys/socket.h>

/* util.c */
__attribute__((noreturn)) void die(const char *what);
void sleep_ms(long ms);
void sleep_us(long us);
socklen_t make_addr(const char *addr, int port, struct sockaddr_storage *ss);
int wait_readable(int fd, int ms);
double now_s(void);
void pin(int cpu);

int udp(const char *addr, int port, int n, int peek);             /* reads.c */
int tcp(const char *addr, int port, int m, const char *shape, int gap_ms,
        int peek);                                                /* reads.c */
int qcheck(const char *dir, const char *reads, double t0,
           long long base);                                       /* qcheck.c */
int clamp(int port, double secs);                                 /* window.c */
int stall(int port, int bytes, int idle, int seconds);            /* window.c */
int conc(int port, int flows, int n, int spin);                   /* conc.c */
int drops(const char *kind, int port, int n);                     /* drops.c */
int vlan(int port, int n, const char *tags);                      /* vlan.c */
int groups(int n, const char *cgdir, int seconds);                /* groups.c */

#endif
