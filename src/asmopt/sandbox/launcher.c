/*
 * asmopt in-sandbox launcher.
 *
 * Runs inside the bubblewrap sandbox, between the sandbox's init and the untrusted program:
 *   - applies resource limits to the child only (CPU, address space, file size, processes,
 *     open files, no core dumps);
 *   - installs a seccomp filter in the child that kills the process on process creation,
 *     a second exec, networking, tracing, signals to other processes and namespace tricks;
 *   - times the child itself (fork to wait4), so sandbox start-up is outside the timed
 *     region, and reads user/system CPU time and peak RSS from the child's rusage;
 *   - reports on a private file descriptor the child never holds. The launcher is made
 *     non-dumpable so the child (same uid) cannot reach that descriptor through /proc or
 *     ptrace.
 *
 * With --runs N the child is started N times in a row with identical argv, environment,
 * stdin and working directory, one report line per run, so warm-up and timed runs are
 * indistinguishable to it.
 *
 * Report protocol (text lines on --report-fd):
 *   started
 *   run i=<k> exit=<code|-1> signal=<n|0> utime_us=<u> stime_us=<s> maxrss_kb=<r> wall_ns=<w>
 *   error <message>          (the launcher itself failed; never the child's fault)
 *   done
 *
 * This file is our own trusted code; it is compiled once per compiler version and cached.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILTER 256

static struct sock_filter filter[MAX_FILTER];
static int filter_len = 0;
static int report_fd = -1;

static void emit(struct sock_filter ins) {
    if (filter_len >= MAX_FILTER) {
        _exit(120);
    }
    filter[filter_len++] = ins;
}

#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define ARG_HI(i) (offsetof(struct seccomp_data, args) + 8 * (i) + 4)
#define KILL SECCOMP_RET_KILL_PROCESS
#define ALLOW SECCOMP_RET_ALLOW

static void load_nr(void) {
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
}

static void deny(int nr) {
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KILL));
}

static void fail_with_errno(int nr, int err) {
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t)err));
}

/* Allow syscall `nr` only when its first argument (low 32 bits) is one of three values. */
static void allow_if_arg0_in(int nr, uint32_t a, uint32_t b, uint32_t c) {
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 6));
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, a, 3, 0));
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, b, 2, 0));
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c, 1, 0));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KILL));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ALLOW));
    load_nr();
}

static int install_seccomp(const char *exec_path) {
    uint64_t ptr = (uint64_t)(uintptr_t)exec_path;
    uint32_t pid = (uint32_t)getpid();

    /* Only native x86-64 system calls; x32 and i386 entry points are refused. */
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KILL));
    load_nr();
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KILL));

    /* The one exec we perform ourselves: same pathname pointer, in this address space only. */
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 0, 6));
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ptr, 0, 3));
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(0)));
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(ptr >> 32), 0, 1));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ALLOW));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KILL));
    load_nr();

    /* Threads are allowed (clone with CLONE_THREAD); new processes are not. */
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4));
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ALLOW));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KILL));
    load_nr();
    /* clone3 passes flags in memory we cannot inspect: make glibc fall back to clone. */
    fail_with_errno(SYS_clone3, ENOSYS);

    /* Signals only to itself (its own pid or its own process group). */
    allow_if_arg0_in(SYS_kill, pid, 0, (uint32_t)(-(int32_t)pid));
    allow_if_arg0_in(SYS_tkill, pid, pid, pid);
    allow_if_arg0_in(SYS_tgkill, pid, pid, pid);

    static const int denied[] = {
        SYS_fork, SYS_vfork, SYS_execveat,
        SYS_socket, SYS_socketpair, SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4,
        SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_pidfd_open,
        SYS_pidfd_getfd, SYS_pidfd_send_signal, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo,
        SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_unshare, SYS_setns,
        SYS_bpf, SYS_perf_event_open, SYS_keyctl, SYS_add_key, SYS_request_key,
        SYS_userfaultfd, SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
        SYS_kexec_load, SYS_init_module, SYS_finit_module, SYS_delete_module,
        SYS_setpriority, SYS_sched_setaffinity, SYS_sched_setscheduler, SYS_sched_setattr,
        SYS_ioprio_set, SYS_personality, SYS_memfd_create,
        SYS_name_to_handle_at, SYS_open_by_handle_at, SYS_fanotify_init, SYS_inotify_init,
        SYS_inotify_init1, SYS_quotactl, SYS_swapon, SYS_swapoff, SYS_reboot,
        SYS_sethostname, SYS_setdomainname, SYS_acct, SYS_settimeofday, SYS_clock_settime,
        SYS_clock_adjtime, SYS_adjtimex,
    };
    for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
        deny(denied[i]);
    }
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ALLOW));

    struct sock_fprog prog = {.len = (unsigned short)filter_len, .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        return -1;
    }
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    if ((size_t)n >= sizeof buf) {
        n = sizeof buf - 1;
    }
    ssize_t off = 0;
    while (off < n) {
        ssize_t w = write(report_fd, buf + off, (size_t)(n - off));
        if (w <= 0) {
            if (errno == EINTR) continue;
            return;
        }
        off += w;
    }
}

static int set_limit(int resource, rlim_t soft, rlim_t hard) {
    struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard};
    return setrlimit(resource, &rl);
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static unsigned long long parse_num(const char *s, const char *what) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || !end || *end) {
        fprintf(stderr, "asmopt-launch: bad value for %s: %s\n", what, s);
        exit(121);
    }
    return v;
}

int main(int argc, char **argv) {
    unsigned long long cpu = 0, as = 0, fsize = 0, nproc = 0, nofile = 0, runs = 1;
    int use_seccomp = 1;
    const char *stdin_path = "/dev/null";
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) { i++; break; }
        if (i + 1 >= argc) { fprintf(stderr, "asmopt-launch: %s needs a value\n", a); return 121; }
        const char *v = argv[++i];
        if (strcmp(a, "--cpu") == 0) cpu = parse_num(v, a);
        else if (strcmp(a, "--as") == 0) as = parse_num(v, a);
        else if (strcmp(a, "--fsize") == 0) fsize = parse_num(v, a);
        else if (strcmp(a, "--nproc") == 0) nproc = parse_num(v, a);
        else if (strcmp(a, "--nofile") == 0) nofile = parse_num(v, a);
        else if (strcmp(a, "--runs") == 0) runs = parse_num(v, a);
        else if (strcmp(a, "--seccomp") == 0) use_seccomp = (int)parse_num(v, a);
        else if (strcmp(a, "--stdin") == 0) stdin_path = v;
        else if (strcmp(a, "--report-fd") == 0) report_fd = (int)parse_num(v, a);
        else { fprintf(stderr, "asmopt-launch: unknown option %s\n", a); return 121; }
    }
    if (report_fd < 0 || i >= argc) {
        fprintf(stderr, "usage: asmopt-launch --report-fd N [limits] -- PROGRAM [ARGS...]\n");
        return 121;
    }
    fcntl(report_fd, F_SETFD, FD_CLOEXEC);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    report("started\n");
    char **child_argv = &argv[i];
    const char *exec_path = child_argv[0];

    for (unsigned long long run = 0; run < runs; run++) {
        int in_fd = open(stdin_path, O_RDONLY | O_CLOEXEC);
        if (in_fd < 0) {
            report("error cannot open stdin file: %s\n", strerror(errno));
            return 122;
        }
        int exec_pipe[2];
        if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
            report("error pipe failed: %s\n", strerror(errno));
            return 122;
        }
        long long t0 = now_ns();
        pid_t pid = fork();
        if (pid < 0) {
            report("error fork failed: %s\n", strerror(errno));
            return 122;
        }
        if (pid == 0) {
            setpgid(0, 0);
            if (dup2(in_fd, 0) < 0) _exit(123);
            close(report_fd);
            close(exec_pipe[0]);
            prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
            set_limit(RLIMIT_CORE, 0, 0);
            if (cpu) set_limit(RLIMIT_CPU, cpu, cpu + 1);
            if (as) set_limit(RLIMIT_AS, as, as);
            if (fsize) set_limit(RLIMIT_FSIZE, fsize, fsize);
            if (nproc) set_limit(RLIMIT_NPROC, nproc, nproc);
            if (nofile) set_limit(RLIMIT_NOFILE, nofile, nofile);
            int err = 0;
            if (use_seccomp && install_seccomp(exec_path) != 0) {
                err = errno ? errno : EINVAL;
            } else {
                execv(exec_path, child_argv);
                err = errno;
            }
            ssize_t ignored = write(exec_pipe[1], &err, sizeof err);
            (void)ignored;
            _exit(127);
        }
        close(in_fd);
        close(exec_pipe[1]);
        int status = 0;
        struct rusage ru;
        memset(&ru, 0, sizeof ru);
        pid_t w;
        do {
            w = wait4(pid, &status, 0, &ru);
        } while (w < 0 && errno == EINTR);
        long long wall = now_ns() - t0;
        /* Whatever the child left behind in its group dies with it. */
        kill(-pid, SIGKILL);
        if (w < 0) {
            report("error wait4 failed: %s\n", strerror(errno));
            return 122;
        }
        int exec_err = 0;
        ssize_t got = read(exec_pipe[0], &exec_err, sizeof exec_err);
        close(exec_pipe[0]);
        if (got == (ssize_t)sizeof exec_err) {
            report("error cannot start program: %s\n", strerror(exec_err));
            return 122;
        }
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        report("run i=%llu exit=%d signal=%d utime_us=%lld stime_us=%lld maxrss_kb=%ld wall_ns=%lld\n",
               run, code, sig,
               (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
               (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec,
               ru.ru_maxrss, wall);
    }
    report("done\n");
    return 0;
}
