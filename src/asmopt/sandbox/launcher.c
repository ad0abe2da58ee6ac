/*
 * asmopt in-sandbox launcher.
 *
 * Runs inside the bubblewrap sandbox, between the sandbox's init and the untrusted program:
 *   - applies resource limits to the child only (CPU, address space, file size, processes,
 *     open files, no core dumps);
 *   - installs a seccomp filter in the child that kills the process on process creation,
 *     a second exec, networking, tracing, signals to other processes and namespace tricks,
 *     and refuses System V / POSIX message-queue IPC (state that would outlive a run);
 *   - times the child itself (fork to wait4), so sandbox start-up is outside the timed
 *     region, and reads user/system CPU time, peak RSS, context switches and page faults
 *     from the child's rusage;
 *   - reports on a private file descriptor the child never holds. The launcher is made
 *     non-dumpable so the child (same uid) cannot reach that descriptor through /proc or
 *     ptrace.
 *
 * Programs are given either as a path after `--` (trusted toolchain runs) or as open file
 * descriptors with --exec-fd (untrusted programs). A descriptor is duplicated onto the fixed
 * number EXEC_FD and executed with execveat(EXEC_FD, "", AT_EMPTY_PATH), so every program
 * started this way sees the same argv, environment, working directory, stdin and even the
 * same AT_EXECFN string ("/dev/fd/200"), and no binary is visible in the sandbox's file
 * system. With two --exec-fd and --order 0101..., a baseline and a candidate alternate in
 * one sandbox and cannot tell which runs are warm-ups, which are timed, or whether they are
 * being timed at all (correctness runs use the same mechanism).
 *
 * Stdin can be given the same way (--stdin-fd, repeatable, with --feed naming the input of
 * each run), so several tests share one sandbox and no input file is visible either; the
 * launcher rewinds the descriptor before every run.
 *
 * Between runs (--wipe DIR) the writable directories are emptied, so a program cannot leave
 * a result behind for its next run to replay; --marker writes a line to stdout after each
 * run so the caller can check every run's output separately.
 *
 * Report protocol (text lines on --report-fd):
 *   started
 *   run i=<k> prog=<p> input=<c> exit=<code|-1> signal=<n|0> utime_us=<u> stime_us=<s>
 *       maxrss_kb=<r> wall_ns=<w> nvcsw=<v> nivcsw=<iv> minflt=<f> majflt=<F>   (one line)
 *   log <hex bytes>          (with --log-fd: what the program wrote to that descriptor)
 *   tamper <message>         (the program left state behind that could not be removed)
 *   error <message>          (the launcher itself failed; never the child's fault)
 *   done
 *
 * This file is our own trusted code; it is compiled once per compiler version and cached.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILTER 320
#define MAX_PROGS 4
#define MAX_INPUTS 36       /* --feed names inputs with one character: 0-9 then a-z */
#define MAX_WIPE 4
#define EXEC_FD 200        /* every program is executed from this descriptor number */
#define HIGH_FD_BASE 210   /* our own descriptors live above it, out of the way */
#define LOG_KEEP 8192      /* with --log-fd, the last bytes kept per run */
#define WIPE_MAX_DEPTH 128

static struct sock_filter filter[MAX_FILTER];
static int filter_len = 0;
static int report_fd = -1;
static const char empty_path[] = "";

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

/* The one exec we perform ourselves.
 * Path mode: execve with exactly our pathname pointer. Descriptor mode: execveat(EXEC_FD,
 * <our "" pointer>, ..., AT_EMPTY_PATH). Every other exec kills the process. */
static int install_seccomp(const char *exec_path, int by_fd) {
    uint32_t pid = (uint32_t)getpid();

    /* Only native x86-64 system calls; x32 and i386 entry points are refused. */
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KILL));
    load_nr();
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KILL));

    if (by_fd) {
        uint64_t ptr = (uint64_t)(uintptr_t)empty_path;
        deny(SYS_execve);
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 0, 12));
        emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, EXEC_FD, 0, 9));
        emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)));
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ptr, 0, 7));
        emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(1)));
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(ptr >> 32), 0, 5));
        emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(4)));
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AT_EMPTY_PATH, 0, 3));
        emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(4)));
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1));
        emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ALLOW));
        emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KILL));
        load_nr();
    } else {
        uint64_t ptr = (uint64_t)(uintptr_t)exec_path;
        deny(SYS_execveat);
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 0, 6));
        emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ptr, 0, 3));
        emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(0)));
        emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(ptr >> 32), 0, 1));
        emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ALLOW));
        emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KILL));
        load_nr();
    }

    /* Threads are allowed (clone with CLONE_THREAD); new processes are not. */
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4));
    emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)));
    emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ALLOW));
    emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KILL));
    load_nr();
    /* clone3 passes flags in memory we cannot inspect: make glibc fall back to clone. */
    fail_with_errno(SYS_clone3, ENOSYS);
    /* IPC objects live in the sandbox's IPC namespace and would survive from one run to the
     * next (a cache of answers across timed runs): refused, as if the kernel lacked them. */
    static const int no_ipc[] = {
        SYS_shmget, SYS_semget, SYS_msgget, SYS_mq_open,
    };
    for (size_t i = 0; i < sizeof(no_ipc) / sizeof(no_ipc[0]); i++) {
        fail_with_errno(no_ipc[i], ENOSYS);
    }

    /* Signals only to itself (its own pid or its own process group). */
    allow_if_arg0_in(SYS_kill, pid, 0, (uint32_t)(-(int32_t)pid));
    allow_if_arg0_in(SYS_tkill, pid, pid, pid);
    allow_if_arg0_in(SYS_tgkill, pid, pid, pid);

    static const int denied[] = {
        SYS_fork, SYS_vfork,
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

static void write_all(int fd, const char *buf, size_t n) {
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, buf + off, n - off);
        if (w <= 0) {
            if (w < 0 && errno == EINTR) continue;
            return;
        }
        off += (size_t)w;
    }
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
    write_all(report_fd, buf, (size_t)n);
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

/* Move an inherited descriptor above HIGH_FD_BASE and mark it close-on-exec. */
static int move_high(int fd) {
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD_BASE);
    if (moved < 0) {
        return -1;
    }
    close(fd);
    return moved;
}

/* Remove everything inside the directory `dfd` refers to. The program ran as our uid, so
 * whatever it created we may delete, after giving ourselves permission where it took it
 * away. Returns 0 when the directory is empty afterwards. */
static int wipe_dir(int dfd, int depth) {
    if (depth > WIPE_MAX_DEPTH) {
        return -1;
    }
    DIR *d = fdopendir(dfd);
    if (d == NULL) {
        close(dfd);
        return -1;
    }
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (e == NULL) {
            if (errno) rc = -1;
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0) continue;
        /* A directory (or one we may not enter yet): open it up, empty it, remove it. */
        fchmodat(dirfd(d), e->d_name, 0700, 0);
        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0 || wipe_dir(sub, depth + 1) != 0 ||
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0) {
            rc = -1;
        }
        rewinddir(d);
    }
    closedir(d);
    return rc;
}

static int wipe_path(const char *path) {
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        return errno == ENOENT ? 0 : -1;
    }
    return wipe_dir(dfd, 0);
}

static void report_log(const unsigned char *buf, size_t n) {
    static const char hex[] = "0123456789abcdef";
    char line[2 * 200 + 8];
    for (size_t off = 0; off < n; off += 200) {
        size_t len = n - off < 200 ? n - off : 200;
        memcpy(line, "log ", 4);
        for (size_t k = 0; k < len; k++) {
            line[4 + 2 * k] = hex[buf[off + k] >> 4];
            line[4 + 2 * k + 1] = hex[buf[off + k] & 15];
        }
        line[4 + 2 * len] = '\n';
        write_all(report_fd, line, 4 + 2 * len + 1);
    }
}

int main(int argc, char **argv) {
    unsigned long long cpu = 0, as = 0, fsize = 0, nproc = 0, nofile = 0, runs = 1;
    int use_seccomp = 1;
    const char *stdin_path = "/dev/null";
    const char *order = NULL;
    const char *marker = NULL;
    const char *wipe[MAX_WIPE];
    int n_wipe = 0;
    int prog_fd[MAX_PROGS];
    int n_progs = 0;
    int log_fd = -1;
    int input_fd[MAX_INPUTS];
    int n_inputs = 0;
    const char *feed = NULL;
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
        else if (strcmp(a, "--order") == 0) order = v;
        else if (strcmp(a, "--marker") == 0) marker = v;
        else if (strcmp(a, "--log-fd") == 0) log_fd = (int)parse_num(v, a);
        else if (strcmp(a, "--feed") == 0) feed = v;
        else if (strcmp(a, "--stdin-fd") == 0) {
            if (n_inputs >= MAX_INPUTS) { fprintf(stderr, "asmopt-launch: too many --stdin-fd\n"); return 121; }
            input_fd[n_inputs++] = (int)parse_num(v, a);
        }
        else if (strcmp(a, "--wipe") == 0) {
            if (n_wipe >= MAX_WIPE) { fprintf(stderr, "asmopt-launch: too many --wipe\n"); return 121; }
            wipe[n_wipe++] = v;
        } else if (strcmp(a, "--exec-fd") == 0) {
            if (n_progs >= MAX_PROGS) { fprintf(stderr, "asmopt-launch: too many --exec-fd\n"); return 121; }
            prog_fd[n_progs++] = (int)parse_num(v, a);
        } else { fprintf(stderr, "asmopt-launch: unknown option %s\n", a); return 121; }
    }
    if (report_fd < 0 || i >= argc) {
        fprintf(stderr, "usage: asmopt-launch --report-fd N [limits] -- PROGRAM [ARGS...]\n");
        return 121;
    }
    if (log_fd >= 0 && (log_fd < 3 || log_fd >= EXEC_FD)) {
        fprintf(stderr, "asmopt-launch: --log-fd must be between 3 and %d\n", EXEC_FD - 1);
        return 121;
    }
    /* Our descriptors must be unreachable for the child and out of the way of EXEC_FD. */
    struct rlimit nof;
    if (getrlimit(RLIMIT_NOFILE, &nof) == 0 && nof.rlim_cur < HIGH_FD_BASE + 32) {
        nof.rlim_cur = nof.rlim_max < HIGH_FD_BASE + 32 ? nof.rlim_max : HIGH_FD_BASE + 32;
        setrlimit(RLIMIT_NOFILE, &nof);
    }
    report_fd = move_high(report_fd);
    if (report_fd < 0) {
        fprintf(stderr, "asmopt-launch: cannot move the report descriptor\n");
        return 122;
    }
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    report("started\n");
    for (int k = 0; k < n_progs; k++) {
        if (prog_fd[k] == EXEC_FD || (prog_fd[k] = move_high(prog_fd[k])) < 0) {
            report("error bad program descriptor\n");
            return 122;
        }
    }
    for (int k = 0; k < n_inputs; k++) {
        if ((input_fd[k] = move_high(input_fd[k])) < 0) {
            report("error bad stdin descriptor\n");
            return 122;
        }
    }
    if (feed != NULL && (order == NULL || strlen(feed) != strlen(order))) {
        report("error --feed needs --order of the same length\n");
        return 122;
    }
    for (size_t k = 0; feed != NULL && feed[k]; k++) {
        int idx = feed[k] >= 'a' ? feed[k] - 'a' + 10 : feed[k] - '0';
        if (idx < 0 || idx >= n_inputs) {
            report("error --feed names an input that was not given\n");
            return 122;
        }
    }
    if (order != NULL) {
        runs = strlen(order);
        for (size_t k = 0; k < runs; k++) {
            if (order[k] < '0' || order[k] >= '0' + (n_progs ? n_progs : 1)) {
                report("error --order names a program that was not given\n");
                return 122;
            }
        }
    }
    char **child_argv = &argv[i];
    const char *exec_path = child_argv[0];
    size_t marker_len = marker ? strlen(marker) : 0;

    for (unsigned long long run = 0; run < runs; run++) {
        int which = order ? order[run] - '0' : 0;
        int in_fd;
        if (n_inputs) {
            char f = feed ? feed[run] : '0';
            int src = input_fd[f >= 'a' ? f - 'a' + 10 : f - '0'];
            /* The child shares this descriptor's offset: start every run at the beginning. */
            if (lseek(src, 0, SEEK_SET) != 0) {
                report("error cannot rewind stdin: %s\n", strerror(errno));
                return 122;
            }
            in_fd = fcntl(src, F_DUPFD_CLOEXEC, 0);
        } else {
            in_fd = open(stdin_path, O_RDONLY | O_CLOEXEC);
        }
        if (in_fd < 0) {
            report("error cannot open stdin file: %s\n", strerror(errno));
            return 122;
        }
        int exec_pipe[2];
        if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
            report("error pipe failed: %s\n", strerror(errno));
            return 122;
        }
        int log_pipe[2] = {-1, -1};
        if (log_fd >= 0 && pipe2(log_pipe, O_CLOEXEC) != 0) {
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
            if (log_fd >= 0) {
                close(log_pipe[0]);
                if (exec_pipe[1] == log_fd) {
                    exec_pipe[1] = fcntl(exec_pipe[1], F_DUPFD_CLOEXEC, HIGH_FD_BASE);
                }
                if (dup2(log_pipe[1], log_fd) < 0) _exit(123); /* dup2 clears close-on-exec */
            }
            if (n_progs && dup3(prog_fd[which], EXEC_FD, O_CLOEXEC) < 0) _exit(123);
            prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
            set_limit(RLIMIT_CORE, 0, 0);
            if (cpu) set_limit(RLIMIT_CPU, cpu, cpu + 1);
            if (as) set_limit(RLIMIT_AS, as, as);
            if (fsize) set_limit(RLIMIT_FSIZE, fsize, fsize);
            if (nproc) set_limit(RLIMIT_NPROC, nproc, nproc);
            if (nofile) set_limit(RLIMIT_NOFILE, nofile, nofile);
            int err = 0;
            if (use_seccomp && install_seccomp(exec_path, n_progs > 0) != 0) {
                err = errno ? errno : EINVAL;
            } else {
                if (n_progs) {
                    extern char **environ;
                    syscall(SYS_execveat, EXEC_FD, empty_path, child_argv, environ, AT_EMPTY_PATH);
                } else {
                    execv(exec_path, child_argv);
                }
                err = errno;
            }
            ssize_t ignored = write(exec_pipe[1], &err, sizeof err);
            (void)ignored;
            _exit(127);
        }
        close(in_fd);
        close(exec_pipe[1]);
        static unsigned char log_buf[LOG_KEEP];
        size_t log_len = 0;
        if (log_fd >= 0) {
            /* Drain while the child runs so it never blocks on a full pipe; keep the tail. */
            close(log_pipe[1]);
            unsigned char chunk[4096];
            for (;;) {
                ssize_t got = read(log_pipe[0], chunk, sizeof chunk);
                if (got < 0 && errno == EINTR) continue;
                if (got <= 0) break;
                size_t g = (size_t)got; /* sizeof chunk < LOG_KEEP */
                if (log_len + g > LOG_KEEP) {
                    size_t drop = log_len + g - LOG_KEEP;
                    memmove(log_buf, log_buf + drop, log_len - drop);
                    log_len -= drop;
                }
                memcpy(log_buf + log_len, chunk, g);
                log_len += g;
            }
            close(log_pipe[0]);
        }
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
        report("run i=%llu prog=%d input=%c exit=%d signal=%d utime_us=%lld stime_us=%lld "
               "maxrss_kb=%ld wall_ns=%lld nvcsw=%ld nivcsw=%ld minflt=%ld majflt=%ld\n",
               run, which, feed ? feed[run] : '0', code, sig,
               (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
               (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec,
               ru.ru_maxrss, wall, ru.ru_nvcsw, ru.ru_nivcsw, ru.ru_minflt, ru.ru_majflt);
        if (log_fd >= 0) {
            report_log(log_buf, log_len);
        }
        if (marker) {
            char nl = '\n';
            write_all(1, marker, marker_len);
            write_all(1, &nl, 1);
        }
        if (run + 1 < runs) {
            for (int k = 0; k < n_wipe; k++) {
                if (wipe_path(wipe[k]) != 0) {
                    report("tamper the program left files in %s that could not be removed\n",
                           wipe[k]);
                    return 0;
                }
            }
        }
    }
    report("done\n");
    return 0;
}
