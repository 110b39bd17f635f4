/*
 * libfsocket.so -- netrun lab STAND-IN for FreeFlow's socket library. Not FreeFlow.
 *
 * FreeFlow's router container copies its libfsocket.so into /freeflow; application
 * containers then run with LD_PRELOAD=/freeflow/libfsocket.so. In the emulated lab
 * there is no FreeFlow image (nothing can be pulled), so this library takes its place
 * to prove the plumbing: it is preloaded, it sees the socket calls, and it changes none
 * of them. Every call is passed through untouched to libc.
 *
 * Proof that it was loaded: it shows in /proc/<pid>/maps, and, if /freeflow/loaded is
 * writable, the constructor writes /freeflow/loaded/<hostname>.<pid> ("<comm> loaded"),
 * and the destructor appends how many socket/connect/accept calls passed through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static unsigned long n_socket, n_connect, n_accept;
static char marker[PATH_MAX];

static void note(const char *mode, const char *text) {
    FILE *f;
    if (!marker[0]) return;
    f = fopen(marker, mode);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

__attribute__((constructor)) static void fsocket_loaded(void) {
    char host[256] = "unknown", comm[64] = "?", line[128];
    FILE *f;
    if (access("/freeflow/loaded", W_OK) != 0) return;
    gethostname(host, sizeof host - 1);
    f = fopen("/proc/self/comm", "r");
    if (f) {
        if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = 0;
        fclose(f);
    }
    snprintf(marker, sizeof marker, "/freeflow/loaded/%s.%d", host, (int)getpid());
    snprintf(line, sizeof line, "%s loaded\n", comm);
    note("w", line);
}

__attribute__((destructor)) static void fsocket_unloaded(void) {
    char line[160];
    snprintf(line, sizeof line, "socket=%lu connect=%lu accept=%lu\n",
             __atomic_load_n(&n_socket, __ATOMIC_RELAXED),
             __atomic_load_n(&n_connect, __ATOMIC_RELAXED),
             __atomic_load_n(&n_accept, __ATOMIC_RELAXED));
    note("a", line);
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

int socket(int domain, int type, int protocol) {
    __atomic_fetch_add(&n_socket, 1, __ATOMIC_RELAXED);
    return NEXT(socket)(domain, type, protocol);
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    __atomic_fetch_add(&n_connect, 1, __ATOMIC_RELAXED);
    return NEXT(connect)(fd, addr, len);
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) {
    __atomic_fetch_add(&n_accept, 1, __ATOMIC_RELAXED);
    return NEXT(accept)(fd, addr, len);
}
