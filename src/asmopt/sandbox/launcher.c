/*
 * asmopt in-sandbox launcher: the per-run supervisor inside the bubblewrap sandbox.
 *
 * The rule it enforces (docs/sandbox.md): a run's only inputs are the binary and the test's
 * bytes, and nothing a run does is observable by a later run, or by the grader, except its
 * stdout, stderr, exit status and resource use. So every run, correctness run, warm-up or
 * timed run, baseline or candidate, gets kernel objects of its own:
 *
 *   - a new pid namespace (clone with CLONE_NEWPID): the run's "init" is pid 1 and the
 *     program is pid 2 in every run, thread ids start afresh, and killing the init kills
 *     everything the run left behind;
 *   - a new mount namespace with a new tmpfs on /tmp (--fresh-tmp): nothing written survives
 *     the run, and there is no clean-up walk for a hostile directory tree to attack;
 *   - a new stdin: a sealed memfd filled with the test's bytes (a new open file description
 *     and a new inode per run, so no lock, owner, signal, lease or flag set on it survives);
 *   - new stdout and stderr pipes, relayed by the launcher, with per-run byte caps;
 *   - only descriptors 0, 1 and 2 (everything else is closed on exec);
 *   - resource limits, no capabilities, and a seccomp ALLOWLIST (below): system calls that
 *     gcc-compiled C programs need, with argument filters on the dangerous ones; known
 *     hostile calls kill the process (SIGSYS), everything else fails with ENOSYS.
 *
 * The launcher itself never spins: it sleeps in poll() with the run's wall deadline as
 * timeout and kills the run (every process of it, by its process group, and its init, and
 * with it the pid namespace) when the deadline, an output cap, or a stop of the program is
 * reached. The program never runs at a higher scheduling priority than the launcher: a
 * real-time launcher lowers the program one level.
 *
 * Real time is for the launcher's poll() and for the program only (see leave_realtime):
 * nothing that reaps a program's tasks, or waits for their teardown, is real-time then.
 * bubblewrap's init is demoted at once; each run's init notices its program's end without
 * reaping it and leaves real time before it reaps; the launcher demotes a run's init
 * before killing it, and itself before waiting for a killed run's init.
 *
 * Isolation needs CAP_SYS_ADMIN in bubblewrap's user namespace (bwrap --cap-add
 * CAP_SYS_ADMIN); --isolate 0 (trusted runs outside bubblewrap) uses a plain fork instead.
 *
 * Programs are given either as a path after `--` (trusted toolchain runs) or as open file
 * descriptors with --exec-fd (untrusted programs), executed from the fixed number EXEC_FD
 * with execveat(AT_EMPTY_PATH), so every program sees the same argv, environment and
 * working directory. With several --exec-fd and --order 0101..., a baseline and a candidate
 * alternate in one sandbox; with several --stdin-fd and --feed, several tests share it.
 *
 * Report protocol (text lines on --report-fd, a descriptor the program never holds):
 *   started
 *   run i=<k> prog=<p> input=<c> exit=<code|-1> signal=<n|0> utime_us=<u> stime_us=<s>
 *       maxrss_kb=<r> wall_ns=<w> nvcsw=<v> nivcsw=<iv> minflt=<f> majflt=<F>
 *       out=<bytes> err=<bytes> killed=<none|wall|stdout|stderr> exec_errno=<e>
 *       (one line; exec_errno is non-zero when the program could not be executed)
 *   log <hex bytes>          (with --log-fd: what the program wrote to that descriptor)
 *   stopped after run <k>    (a run was killed or could not start: the rest are skipped)
 *   error <message>          (the launcher itself failed; never the child's fault)
 *   done
 *
 * This file is our own trusted code; it is compiled once per compiler version and cached.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILTER 1024
#define MAX_PROGS 9  /* --order names a program with one digit */
#define MAX_INPUTS 256      /* --feed names each run's input by its decimal index, comma-separated */
#define EXEC_FD 200        /* every program is executed from this descriptor number */
#define HIGH_FD_BASE 210   /* our own descriptors live above it, out of the way */
#define LOG_KEEP 8192      /* with --log-fd, the last bytes kept per run */

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#define F_SEAL_WRITE 0x0008
#endif

static struct sock_filter filter[MAX_FILTER];
static int filter_len = 0;
static int report_fd = -1;
static const char empty_path[] = "";

/* ------------------------------------------------------------------------ seccomp */
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
#define ERRNO(e) (SECCOMP_RET_ERRNO | (uint32_t)(e))
#define STMT(code, k) emit((struct sock_filter)BPF_STMT((code), (k)))
#define JUMP(code, k, jt, jf) emit((struct sock_filter)BPF_JUMP((code), (k), (jt), (jf)))

static void load_nr(void) { STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)); }
static void load_arg_lo(int i) { STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(i)); }

/* The system calls a C program built by gcc against glibc and libm makes (measured with
 * strace over the built-in suite and llvm-test-suite SingleSource programs; docs/sandbox.md
 * says how to extend the list). Ordered roughly by frequency: the filter is a linear scan. */
static const int allowed[] = {
    SYS_read, SYS_write, SYS_brk, SYS_mmap, SYS_munmap, SYS_mprotect, SYS_mremap,
    SYS_futex, SYS_newfstatat, SYS_fstat, SYS_stat, SYS_lstat, SYS_statx, SYS_lseek,
    SYS_openat, SYS_open, SYS_close, SYS_pread64, SYS_pwrite64, SYS_readv, SYS_writev,
    SYS_preadv, SYS_pwritev, SYS_preadv2, SYS_pwritev2,
    SYS_rt_sigaction, SYS_rt_sigprocmask, SYS_rt_sigreturn, SYS_rt_sigpending,
    SYS_rt_sigsuspend, SYS_rt_sigtimedwait, SYS_sigaltstack, SYS_pause,
    SYS_exit, SYS_exit_group, SYS_getpid, SYS_getppid, SYS_gettid, SYS_getuid, SYS_geteuid,
    SYS_getgid, SYS_getegid, SYS_getgroups, SYS_getresuid, SYS_getresgid, SYS_getpgrp,
    SYS_getpgid, SYS_getsid, SYS_uname, SYS_sysinfo, SYS_getrusage, SYS_times,
    SYS_getrlimit, SYS_setrlimit, SYS_clock_gettime, SYS_clock_getres, SYS_clock_nanosleep,
    SYS_nanosleep, SYS_gettimeofday, SYS_time, SYS_getitimer, SYS_setitimer, SYS_alarm,
    SYS_timer_create, SYS_timer_settime, SYS_timer_gettime, SYS_timer_getoverrun,
    SYS_timer_delete, SYS_timerfd_create, SYS_timerfd_settime, SYS_timerfd_gettime,
    SYS_set_robust_list, SYS_get_robust_list, SYS_set_tid_address, SYS_rseq,
    SYS_arch_prctl, SYS_sched_yield, SYS_sched_getaffinity, SYS_sched_get_priority_max,
    SYS_sched_get_priority_min, SYS_getrandom, SYS_membarrier,
    SYS_access, SYS_faccessat, SYS_faccessat2, SYS_readlink, SYS_readlinkat, SYS_getcwd,
    SYS_chdir, SYS_fchdir, SYS_getdents64, SYS_getdents, SYS_mkdir, SYS_mkdirat, SYS_rmdir,
    SYS_unlink, SYS_unlinkat, SYS_rename, SYS_renameat, SYS_renameat2, SYS_link,
    SYS_linkat, SYS_symlink, SYS_symlinkat, SYS_chmod, SYS_fchmod, SYS_fchmodat,
    SYS_truncate, SYS_ftruncate, SYS_fsync, SYS_fdatasync, SYS_statfs, SYS_fstatfs,
    SYS_utimensat, SYS_umask, SYS_dup, SYS_dup2, SYS_dup3, SYS_pipe, SYS_pipe2,
    SYS_poll, SYS_ppoll, SYS_select, SYS_pselect6, SYS_epoll_create, SYS_epoll_create1,
    SYS_epoll_ctl, SYS_epoll_wait, SYS_epoll_pwait, SYS_eventfd, SYS_eventfd2,
    SYS_msync, SYS_getxattr, SYS_lgetxattr, SYS_fgetxattr, SYS_mknod, SYS_mknodat,
    SYS_sendfile, SYS_copy_file_range, SYS_fallocate, SYS_close_range, SYS_capget,
};

/* Hostile by nature: the process is killed (verdict sandbox_violation). */
static const int killed[] = {
    SYS_fork, SYS_vfork,
    SYS_socket, SYS_socketpair, SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4,
    SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_pidfd_open,
    SYS_pidfd_getfd, SYS_pidfd_send_signal, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo,
    SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_unshare, SYS_setns,
    SYS_bpf, SYS_perf_event_open, SYS_keyctl, SYS_add_key, SYS_request_key,
    SYS_userfaultfd, SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
    SYS_kexec_load, SYS_init_module, SYS_finit_module, SYS_delete_module,
    SYS_setpriority, SYS_sched_setaffinity, SYS_sched_setscheduler, SYS_sched_setattr,
    SYS_sched_setparam, SYS_ioprio_set, SYS_personality, SYS_memfd_create, SYS_modify_ldt,
    SYS_setpgid, SYS_setsid, SYS_kcmp, SYS_process_madvise, SYS_migrate_pages,
    SYS_move_pages, SYS_set_mempolicy, SYS_mbind,
    SYS_name_to_handle_at, SYS_open_by_handle_at, SYS_fanotify_init, SYS_inotify_init,
    SYS_inotify_init1, SYS_quotactl, SYS_swapon, SYS_swapoff, SYS_reboot,
    SYS_sethostname, SYS_setdomainname, SYS_acct, SYS_settimeofday, SYS_clock_settime,
    SYS_clock_adjtime, SYS_adjtimex,
    SYS_vhangup, SYS_iopl, SYS_ioperm, SYS_setuid, SYS_setgid, SYS_setreuid, SYS_setregid, SYS_setresuid,
    SYS_setresgid, SYS_setgroups, SYS_setfsuid, SYS_setfsgid, SYS_capset,
};

static const int refused[] = {SYS_flock, SYS_mincore, SYS_readahead, SYS_fadvise64};

/* fcntl commands that only touch the caller's own descriptor table or flags. Locks, owners,
 * signals, leases, notifications, pipe sizes and seals are refused (EPERM). */
static const uint32_t fcntl_ok[] = {
    F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_DUPFD_CLOEXEC, 1034 /* F_GET_SEALS */,
};
/* ioctl: what glibc's isatty and terminal-size queries use; everything else ENOTTY. */
static const uint32_t ioctl_ok[] = {TCGETS, TIOCGWINSZ, FIONREAD};
/* madvise advice that cannot touch the page cache shared with later runs (PAGEOUT, COLD,
 * WILLNEED and REMOVE can): EINVAL otherwise. */
static const uint32_t madvise_ok[] = {
    0 /* NORMAL */, 1 /* RANDOM */, 2 /* SEQUENTIAL */, 4 /* DONTNEED */, 8 /* FREE */,
    10 /* DONTFORK */, 11 /* DOFORK */, 14 /* HUGEPAGE */, 15 /* NOHUGEPAGE */,
    16 /* DONTDUMP */, 17 /* DODUMP */,
};
/* prctl options that read or change only the caller: EINVAL otherwise. */
static const uint32_t prctl_ok[] = {
    PR_SET_NAME, PR_GET_NAME, PR_GET_DUMPABLE, PR_CAPBSET_READ, PR_GET_SECCOMP,
    PR_GET_NO_NEW_PRIVS, PR_GET_TIMERSLACK, PR_GET_THP_DISABLE, 0x53564d41 /* PR_SET_VMA */,
    PR_SET_PDEATHSIG, PR_GET_PDEATHSIG, PR_GET_TID_ADDRESS,
};

/* How the filter finds a system call's rule: a balanced binary search over the sorted
 * syscall numbers, so every call (and the kernel's per-syscall emulation when it builds
 * its allow-cache at install time) costs about log2(rules) comparisons, not a scan of
 * hundreds of instructions. Rules with argument checks jump to a handler body. */
enum handler {
    H_NONE, H_CLONE, H_KILL, H_TGKILL, H_PRLIMIT, H_FCNTL, H_IOCTL, H_MADVISE, H_PRCTL,
    H_EXECVE, H_EXECVEAT, H_COUNT
};

struct rule {
    uint32_t nr;
    uint32_t action;    /* for H_NONE */
    enum handler handler;
};

#define MAX_RULES 256
static struct rule rules[MAX_RULES];
static int n_rules = 0;
static int handler_at[H_COUNT];
/* Jumps to patch once handler bodies and subtrees are placed: (instruction, handler). */
static int patch_insn[MAX_RULES];
static enum handler patch_handler[MAX_RULES];
static int n_patches = 0;

static void add_rule(int nr, uint32_t action, enum handler h) {
    for (int k = 0; k < n_rules; k++) {
        if (rules[k].nr == (uint32_t)nr) return; /* first listing wins */
    }
    if (n_rules >= MAX_RULES) _exit(120);
    rules[n_rules].nr = (uint32_t)nr;
    rules[n_rules].action = action;
    rules[n_rules].handler = h;
    n_rules++;
}

static int by_nr(const void *a, const void *b) {
    uint32_t x = ((const struct rule *)a)->nr, y = ((const struct rule *)b)->nr;
    return x < y ? -1 : x > y;
}

/* Rules [lo, hi) with the syscall number in the accumulator. */
static void emit_tree(int lo, int hi) {
    if (hi - lo <= 4) {
        for (int k = lo; k < hi; k++) {
            JUMP(BPF_JMP | BPF_JEQ | BPF_K, rules[k].nr, 0, 1);
            if (rules[k].handler == H_NONE) {
                STMT(BPF_RET | BPF_K, rules[k].action);
            } else {
                if (n_patches >= MAX_RULES) _exit(120);
                patch_insn[n_patches] = filter_len;
                patch_handler[n_patches++] = rules[k].handler;
                STMT(BPF_JMP | BPF_JA, 0); /* to the handler, patched below */
            }
        }
        STMT(BPF_RET | BPF_K, ERRNO(ENOSYS)); /* not listed: as if the kernel lacked it */
        return;
    }
    int mid = (lo + hi) / 2;
    /* nr >= rules[mid].nr: the right half, through a long jump placed after this test. */
    JUMP(BPF_JMP | BPF_JGE | BPF_K, rules[mid].nr, 0, 1);
    int ja = filter_len;
    STMT(BPF_JMP | BPF_JA, 0);
    emit_tree(lo, mid);
    filter[ja].k = (uint32_t)(filter_len - ja - 1);
    emit_tree(mid, hi);
}

/* Handler: allow when argument `arg` (low 32 bits) is one of `vals`, else `other`. */
static void body_arg_in(int arg, const uint32_t *vals, int n, uint32_t other) {
    load_arg_lo(arg);
    for (int k = 0; k < n; k++) {
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, vals[k], (uint8_t)(n - k), 0);
    }
    STMT(BPF_RET | BPF_K, other);
    STMT(BPF_RET | BPF_K, ALLOW);
}

static int install_seccomp(const char *exec_path, int by_fd) {
    uint32_t pid = (uint32_t)getpid();
    filter_len = 0;
    n_rules = 0;
    n_patches = 0;

    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) add_rule(allowed[i], ALLOW, H_NONE);
    for (size_t i = 0; i < sizeof(killed) / sizeof(killed[0]); i++) add_rule(killed[i], KILL, H_NONE);
    /* Locks, and page-cache residency (eviction, prefetch, probing) of the files every run
     * shares: refused, but not fatal, since ordinary programs may try them. */
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) add_rule(refused[i], ERRNO(EPERM), H_NONE);
    /* clone3 passes flags in memory we cannot inspect: make glibc fall back to clone. */
    add_rule(SYS_clone3, ERRNO(ENOSYS), H_NONE);
    add_rule(SYS_clone, 0, H_CLONE);
    add_rule(SYS_kill, 0, H_KILL);
    add_rule(SYS_tgkill, 0, H_TGKILL);
    add_rule(SYS_tkill, 0, H_TGKILL);
    add_rule(SYS_prlimit64, 0, H_PRLIMIT);
    add_rule(SYS_fcntl, 0, H_FCNTL);
    add_rule(SYS_ioctl, 0, H_IOCTL);
    add_rule(SYS_madvise, 0, H_MADVISE);
    add_rule(SYS_prctl, 0, H_PRCTL);
    if (by_fd) {
        add_rule(SYS_execve, KILL, H_NONE);
        add_rule(SYS_execveat, 0, H_EXECVEAT);
    } else {
        add_rule(SYS_execveat, KILL, H_NONE);
        add_rule(SYS_execve, 0, H_EXECVE);
    }
    qsort(rules, (size_t)n_rules, sizeof rules[0], by_nr);

    /* Only native x86-64 system calls; x32 and i386 entry points are refused. */
    STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
    STMT(BPF_RET | BPF_K, KILL);
    load_nr();
    JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
    STMT(BPF_RET | BPF_K, KILL);
    emit_tree(0, n_rules);

    /* Threads only: clone must carry exactly the flags of a new thread in this process
     * (CLONE_VM|FS|FILES|SIGHAND|THREAD plus SYSVSEM and the tid/tls bookkeeping flags). */
    {
        const uint32_t must = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD;
        const uint32_t may = must | CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID |
                             CLONE_CHILD_CLEARTID | CLONE_CHILD_SETTID;
        handler_at[H_CLONE] = filter_len;
        load_arg_lo(0);
        JUMP(BPF_JMP | BPF_JSET | BPF_K, ~may, 3, 0);       /* any other flag: kill */
        STMT(BPF_ALU | BPF_AND | BPF_K, must);
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, must, 0, 1);        /* all thread flags: allow */
        STMT(BPF_RET | BPF_K, ALLOW);
        STMT(BPF_RET | BPF_K, KILL);
    }
    /* Signals only to itself: its own pid (2 in its pid namespace), its own group (0 or
     * -pid), its own threads (tgkill/tkill with the process's own id). */
    {
        const uint32_t self[] = {pid, 0, (uint32_t)(-(int32_t)pid)};
        handler_at[H_KILL] = filter_len;
        body_arg_in(0, self, 3, KILL);
        const uint32_t own[] = {pid};
        handler_at[H_TGKILL] = filter_len;
        body_arg_in(0, own, 1, KILL);
    }
    /* Resource limits: read or set its own only (the kernel refuses raising a hard limit
     * without privileges, and the launcher set the hard limits). */
    {
        const uint32_t me[] = {0, pid};
        handler_at[H_PRLIMIT] = filter_len;
        body_arg_in(0, me, 2, KILL);
    }
    /* fcntl: the listed descriptor-table commands; F_SETFL without O_ASYNC or O_DIRECT. */
    {
        int n = (int)(sizeof(fcntl_ok) / sizeof(fcntl_ok[0]));
        handler_at[H_FCNTL] = filter_len;
        load_arg_lo(1);
        for (int k = 0; k < n; k++) {
            JUMP(BPF_JMP | BPF_JEQ | BPF_K, fcntl_ok[k], (uint8_t)(n - k + 3), 0);
        }
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETFL, 0, 4);
        load_arg_lo(2);
        JUMP(BPF_JMP | BPF_JSET | BPF_K, O_ASYNC | O_DIRECT, 0, 1);
        STMT(BPF_RET | BPF_K, ERRNO(EPERM));
        STMT(BPF_RET | BPF_K, ALLOW);
        STMT(BPF_RET | BPF_K, ERRNO(EPERM));
    }
    handler_at[H_IOCTL] = filter_len;
    body_arg_in(1, ioctl_ok, (int)(sizeof(ioctl_ok) / sizeof(ioctl_ok[0])), ERRNO(ENOTTY));
    handler_at[H_MADVISE] = filter_len;
    body_arg_in(2, madvise_ok, (int)(sizeof(madvise_ok) / sizeof(madvise_ok[0])), ERRNO(EINVAL));
    handler_at[H_PRCTL] = filter_len;
    body_arg_in(0, prctl_ok, (int)(sizeof(prctl_ok) / sizeof(prctl_ok[0])), ERRNO(EINVAL));
    /* The one exec we perform ourselves. Descriptor mode: execveat(EXEC_FD, <our ""
     * pointer>, ..., AT_EMPTY_PATH). Path mode: execve with exactly our pathname pointer. */
    {
        uint64_t ptr = (uint64_t)(uintptr_t)empty_path;
        handler_at[H_EXECVEAT] = filter_len;
        load_arg_lo(0);
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, EXEC_FD, 0, 9);
        load_arg_lo(1);
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ptr, 0, 7);
        STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(1));
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(ptr >> 32), 0, 5);
        load_arg_lo(4);
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, AT_EMPTY_PATH, 0, 3);
        STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(4));
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1);
        STMT(BPF_RET | BPF_K, ALLOW);
        STMT(BPF_RET | BPF_K, KILL);
    }
    {
        uint64_t ptr = (uint64_t)(uintptr_t)exec_path;
        handler_at[H_EXECVE] = filter_len;
        load_arg_lo(0);
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ptr, 0, 3);
        STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(0));
        JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(ptr >> 32), 0, 1);
        STMT(BPF_RET | BPF_K, ALLOW);
        STMT(BPF_RET | BPF_K, KILL);
    }
    for (int k = 0; k < n_patches; k++) {
        filter[patch_insn[k]].k = (uint32_t)(handler_at[patch_handler[k]] - patch_insn[k] - 1);
    }

    struct sock_fprog prog = {.len = (unsigned short)filter_len, .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        return -1;
    }
    /* SPEC_ALLOW: a filter would otherwise switch on the kernel's speculative-store-bypass
     * mitigation for the program (and, on some kernels, costly barriers at every context
     * switch), changing the speed of the very code being measured. Those mitigations
     * protect the filtered process from others; ours is the untrusted one. */
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, &prog) == 0) {
        return 0;
    }
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* ------------------------------------------------------------------------ helpers */
static void write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, p + off, n - off);
        if (w <= 0) {
            if (w < 0 && errno == EINTR) continue;
            return;
        }
        off += (size_t)w;
    }
}

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...) {
    char buf[768];
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

/* A new, sealed, read-only-in-effect copy of input `src` for one run. */
static int fresh_stdin(int src) {
    int fd = (int)syscall(SYS_memfd_create, "stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return -1;
    }
    char buf[65536];
    off_t off = 0;
    for (;;) {
        ssize_t got = pread(src, buf, sizeof buf, off);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) { close(fd); return -1; }
        if (got == 0) break;
        off += got;
        size_t done = 0;
        while (done < (size_t)got) {
            ssize_t w = write(fd, buf + done, (size_t)got - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) { close(fd); return -1; }
            done += (size_t)w;
        }
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0 ||
        lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* What a run's init tells the launcher once its program has ended. */
struct run_status {
    int phase;          /* 1: the program has started (pid follows); 2: it has ended */
    int pid;            /* the program's pid as the launcher sees it (plain mode only) */
    int status;
    int exec_errno;
    int setup_errno;    /* the init could not prepare the run (ours, never the child's) */
    char setup_what[64];
    long long wall_ns;
    struct rusage ru;
};

/* Leave real-time scheduling (pid 0: the caller). Returns 0, or -1 with errno set.
 *
 * Why: releasing a dead task (wait4 -> release_task) flushes its /proc dentries, and
 * shrink_dcache_parent loops, with cond_resched() only, until dentries that another task is
 * killing are gone. A real-time reaper never yields to a lower-priority task on its core:
 * when that task is the program's last thread, preempted half-way through its own release,
 * the reaper spins in the kernel for as long as it stays real-time (a SCHED_FIFO 2 init
 * reaping a FIFO 1 program whose main thread had called SYS_exit spun for 17 minutes, and
 * ended within seconds of being demoted). So a reaper must never be above the tasks it
 * reaps: it reaps under SCHED_OTHER, below the program, and the program's last thread
 * always finishes its exit first. (Noticing the end with waitid(WNOWAIT) releases nothing,
 * so the init may do that at its real-time priority.) Lowering one's own or a same-owner
 * process's policy needs no privilege. */
static int leave_realtime(pid_t pid) {
    int pol = sched_getscheduler(pid);
    if (pol < 0) return -1;
    if (pol != SCHED_FIFO && pol != SCHED_RR) return 0;
    struct sched_param sp = {.sched_priority = 0};
    return sched_setscheduler(pid, SCHED_OTHER, &sp);
}

struct options {
    unsigned long long cpu, as, fsize, nproc, nofile, tmp_size, run_wall_ms[MAX_PROGS];
    unsigned long long out_cap, err_cap;
    int use_seccomp, isolate, lower_priority, log_fd, n_progs;
    int prog_fd[MAX_PROGS];
    char **child_argv;
};

static void init_fail(int status_fd, const char *what, int err) {
    struct run_status st;
    memset(&st, 0, sizeof st);
    st.phase = 2;
    st.setup_errno = err ? err : EINVAL;
    snprintf(st.setup_what, sizeof st.setup_what, "%s", what);
    write_all(status_fd, &st, sizeof st);
    _exit(0);
}

/* What the program's process tells its init before exec (ready = 1: its setup's CPU time
 * and the clock) and, if exec fails, after it (err). */
struct exec_note {
    int ready;
    int err;
    long long t_ns;
    struct rusage ru;
};

static long long tv_us(struct timeval tv) { return (long long)tv.tv_sec * 1000000LL + tv.tv_usec; }

static void tv_sub(struct timeval *a, struct timeval b) {
    long long d = tv_us(*a) - tv_us(b);
    if (d < 0) d = 0;
    a->tv_sec = (time_t)(d / 1000000LL);
    a->tv_usec = (suseconds_t)(d % 1000000LL);
}

/* The program's side of a run, between fork and exec. Never returns. */
static void become_program(const struct options *o, int which, int in_fd, int out_w, int err_w,
                           int log_w, int exec_w) {
    /* Isolated, the program stays in its init's process group: the launcher kills the whole
     * run with one kill(-init) that needs no help from any of its processes (setpgid and
     * setsid are refused by the filter, so the program cannot leave). Plain mode has no pid
     * namespace: the program's own group is what its init kills after it. */
    if (!o->isolate) setpgid(0, 0);
    if (dup2(in_fd, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0) _exit(123);
    if (o->log_fd >= 0 && dup2(log_w, o->log_fd) < 0) _exit(123); /* dup2 clears cloexec */
    if (o->n_progs && dup3(o->prog_fd[which], EXEC_FD, O_CLOEXEC) < 0) _exit(123);
    /* Every other descriptor closes at exec: only 0, 1, 2 (and the log) reach the program. */
    if (o->log_fd >= 0) {
        if (o->log_fd > 3) syscall(SYS_close_range, 3, o->log_fd - 1, CLOSE_RANGE_CLOEXEC);
        syscall(SYS_close_range, o->log_fd + 1, ~0U, CLOSE_RANGE_CLOEXEC);
    } else {
        syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    /* Never above the supervisor: a real-time launcher runs its program one level lower. */
    if (o->lower_priority) {
        struct sched_param sp;
        int pol = sched_getscheduler(0);
        if ((pol == SCHED_FIFO || pol == SCHED_RR) && sched_getparam(0, &sp) == 0 &&
            sp.sched_priority > 1) {
            sp.sched_priority -= 1;
            sched_setscheduler(0, pol, &sp);
        }
    }
    set_limit(RLIMIT_CORE, 0, 0);
    if (o->cpu) set_limit(RLIMIT_CPU, o->cpu, o->cpu + 1);
    if (o->as) set_limit(RLIMIT_AS, o->as, o->as);
    if (o->fsize) set_limit(RLIMIT_FSIZE, o->fsize, o->fsize);
    if (o->nproc) set_limit(RLIMIT_NPROC, o->nproc, o->nproc);
    if (o->nofile) set_limit(RLIMIT_NOFILE, o->nofile, o->nofile);
    /* No capabilities: the launcher holds CAP_SYS_ADMIN in the sandbox's user namespace
     * (as an ambient capability, to create each run's namespaces); the program holds none. */
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct caps[2];
    memset(caps, 0, sizeof caps);
    syscall(SYS_capset, &hdr, caps);
    struct exec_note note;
    memset(&note, 0, sizeof note);
    const char *exec_path = o->child_argv[0];
    if (o->use_seccomp && install_seccomp(exec_path, o->n_progs > 0) != 0) {
        note.err = errno ? errno : EINVAL;
    } else {
        /* Everything so far (rlimits, capabilities, the filter's installation) is ours, not
         * the program's: its CPU time and the clock are read here and subtracted, so the
         * timed region starts at the exec. */
        getrusage(RUSAGE_SELF, &note.ru);
        note.t_ns = now_ns();
        note.ready = 1;
        write_all(exec_w, &note, sizeof note);
        note.ready = 0;
        if (o->n_progs) {
            extern char **environ;
            syscall(SYS_execveat, EXEC_FD, empty_path, o->child_argv, environ, AT_EMPTY_PATH);
        } else {
            execv(exec_path, o->child_argv);
        }
        note.err = errno;
    }
    write_all(exec_w, &note, sizeof note);
    _exit(127);
}

/* The run's init: pid 1 of the run's own pid namespace (or a plain child with --isolate 0).
 * It prepares the run's private /tmp, starts the program, times it from fork to wait4 and
 * reports. Never returns. */
static void run_init(const struct options *o, int which, int in_fd, int out_w, int err_w,
                     int log_w, int status_w) {
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (o->isolate) setpgid(0, 0); /* the run's process group (the launcher does it too) */
    if (o->tmp_size) {
        char data[96];
        snprintf(data, sizeof data, "size=%llu,nr_inodes=65536,mode=1777", o->tmp_size);
        if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, data) != 0) {
            init_fail(status_w, "mount a private /tmp", errno);
        }
        if (chdir("/tmp") != 0) init_fail(status_w, "enter the private /tmp", errno);
    }
    int exec_pipe[2];
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) init_fail(status_w, "pipe", errno);
    long long t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0) init_fail(status_w, "fork", errno);
    if (pid == 0) {
        close(exec_pipe[0]);
        become_program(o, which, in_fd, out_w, err_w, log_w, exec_pipe[1]);
    }
    close(exec_pipe[1]);
    /* Only the program holds its output pipes: the launcher sees their end when it ends. */
    close(in_fd);
    close(out_w);
    close(err_w);
    if (log_w >= 0) close(log_w);
    struct run_status st;
    memset(&st, 0, sizeof st);
    st.phase = 1;
    st.pid = pid;
    write_all(status_w, &st, sizeof st);
    /* The program's end is noticed at our priority, but it is reaped below it (see
     * leave_realtime). waitid with WNOWAIT releases nothing, so it cannot spin on the
     * program's exit; it returns once every thread of the program has exited, when the
     * clock is read (at real-time priority, so the wall time does not include whatever
     * else wants the core then). Then we leave real time and reap it: the program's last
     * thread, above us from now on, finishes its own exit first. */
    siginfo_t si;
    int wr;
    do {
        memset(&si, 0, sizeof si);
        wr = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT);
    } while (wr < 0 && errno == EINTR);
    long long t_end = now_ns();
    if (leave_realtime(0) != 0) init_fail(status_w, "leave real-time priority", errno);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    pid_t w;
    do {
        w = wait4(pid, &status, 0, &ru);
    } while (w < 0 && errno == EINTR);
    if (wr < 0) t_end = now_ns();
    long long wall = t_end - t0;
    if (w < 0) init_fail(status_w, "wait4", errno);
    if (!o->isolate) kill(-pid, SIGKILL); /* whatever it left in its group dies with it */
    int exec_err = 0;
    struct exec_note note;
    for (;;) {
        ssize_t got = read(exec_pipe[0], &note, sizeof note);
        if (got < 0 && errno == EINTR) continue;
        if (got != (ssize_t)sizeof note) break;
        if (note.ready) {
            /* The timed region starts at the exec: subtract the setup before it. */
            wall = t_end - note.t_ns;
            tv_sub(&ru.ru_utime, note.ru.ru_utime);
            tv_sub(&ru.ru_stime, note.ru.ru_stime);
            ru.ru_minflt -= note.ru.ru_minflt;
            ru.ru_majflt -= note.ru.ru_majflt;
            ru.ru_nvcsw -= note.ru.ru_nvcsw;
            ru.ru_nivcsw -= note.ru.ru_nivcsw;
        } else {
            exec_err = note.err;
        }
    }
    st.phase = 2;
    st.status = status;
    st.exec_errno = exec_err;
    st.wall_ns = wall;
    st.ru = ru;
    write_all(status_w, &st, sizeof st);
    _exit(0);
}

/* Kill a run without any cooperation from its processes, then leave real time: we only
 * wait from here on (the sandbox stops after a killed run).
 *
 * The init is demoted first, so that it does not reap (dying, it reaps the whole pid
 * namespace) at real-time priority; the process group kill then reaches every thread of
 * the program directly, so they die at their own priority without waiting for the init
 * (now below them) to get the core; the init dies too, and with it anything else left in
 * the namespace. */
static void kill_run(const struct options *o, pid_t init, const struct run_status *st) {
    leave_realtime(init);
    if (o->isolate) kill(-init, SIGKILL);
    kill(init, SIGKILL);
    if (!o->isolate && st != NULL && st->phase >= 1 && st->pid > 0) kill(-st->pid, SIGKILL);
    leave_realtime(0);
}

int main(int argc, char **argv) {
    struct options o;
    memset(&o, 0, sizeof o);
    o.use_seccomp = 1;
    o.isolate = 1;
    o.lower_priority = 1;
    o.log_fd = -1;
    unsigned long long runs = 1;
    const char *stdin_path = "/dev/null";
    const char *order = NULL;
    const char *marker = NULL;
    int input_fd[MAX_INPUTS];
    int n_inputs = 0;
    const char *feed = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) { i++; break; }
        if (i + 1 >= argc) { fprintf(stderr, "asmopt-launch: %s needs a value\n", a); return 121; }
        const char *v = argv[++i];
        if (strcmp(a, "--cpu") == 0) o.cpu = parse_num(v, a);
        else if (strcmp(a, "--as") == 0) o.as = parse_num(v, a);
        else if (strcmp(a, "--fsize") == 0) o.fsize = parse_num(v, a);
        else if (strcmp(a, "--nproc") == 0) o.nproc = parse_num(v, a);
        else if (strcmp(a, "--nofile") == 0) o.nofile = parse_num(v, a);
        else if (strcmp(a, "--runs") == 0) runs = parse_num(v, a);
        else if (strcmp(a, "--seccomp") == 0) o.use_seccomp = (int)parse_num(v, a);
        else if (strcmp(a, "--isolate") == 0) o.isolate = (int)parse_num(v, a);
        else if (strcmp(a, "--fresh-tmp") == 0) o.tmp_size = parse_num(v, a);
        else if (strcmp(a, "--run-wall-ms") == 0) {
            /* One deadline for every run, or one per program ("20000,3000"). */
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            int k = 0;
            for (char *tok = strtok(buf, ","); tok && k < MAX_PROGS; tok = strtok(NULL, ",")) {
                o.run_wall_ms[k++] = parse_num(tok, a);
            }
            for (; k < MAX_PROGS; k++) o.run_wall_ms[k] = o.run_wall_ms[k - 1];
        }
        else if (strcmp(a, "--stdout-cap") == 0) o.out_cap = parse_num(v, a);
        else if (strcmp(a, "--stderr-cap") == 0) o.err_cap = parse_num(v, a);
        else if (strcmp(a, "--stdin") == 0) stdin_path = v;
        else if (strcmp(a, "--report-fd") == 0) report_fd = (int)parse_num(v, a);
        else if (strcmp(a, "--order") == 0) order = v;
        else if (strcmp(a, "--marker") == 0) marker = v;
        else if (strcmp(a, "--log-fd") == 0) o.log_fd = (int)parse_num(v, a);
        else if (strcmp(a, "--feed") == 0) feed = v;
        else if (strcmp(a, "--stdin-fd") == 0) {
            if (n_inputs >= MAX_INPUTS) { fprintf(stderr, "asmopt-launch: too many --stdin-fd\n"); return 121; }
            input_fd[n_inputs++] = (int)parse_num(v, a);
        } else if (strcmp(a, "--exec-fd") == 0) {
            if (o.n_progs >= MAX_PROGS) { fprintf(stderr, "asmopt-launch: too many --exec-fd\n"); return 121; }
            o.prog_fd[o.n_progs++] = (int)parse_num(v, a);
        } else { fprintf(stderr, "asmopt-launch: unknown option %s\n", a); return 121; }
    }
    if (report_fd < 0 || i >= argc) {
        fprintf(stderr, "usage: asmopt-launch --report-fd N [limits] -- PROGRAM [ARGS...]\n");
        return 121;
    }
    if (o.log_fd >= 0 && (o.log_fd < 3 || o.log_fd == EXEC_FD ||
                          (o.nofile && (unsigned long long)o.log_fd >= o.nofile))) {
        fprintf(stderr, "asmopt-launch: --log-fd must be at least 3, not %d, and below --nofile\n",
                EXEC_FD);
        return 121;
    }
    /* Our descriptors must be unreachable for the child and out of the way of EXEC_FD. */
    struct rlimit nof;
    const rlim_t want_fds = HIGH_FD_BASE + MAX_INPUTS + MAX_PROGS + 64;
    if (getrlimit(RLIMIT_NOFILE, &nof) == 0 && nof.rlim_cur < want_fds) {
        nof.rlim_cur = nof.rlim_max < want_fds ? nof.rlim_max : want_fds;
        setrlimit(RLIMIT_NOFILE, &nof);
    }
    report_fd = move_high(report_fd);
    if (report_fd < 0) {
        fprintf(stderr, "asmopt-launch: cannot move the report descriptor\n");
        return 122;
    }
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    report("started\n");
    /* Any inherited number is fine, EXEC_FD included (a caller with hundreds of descriptors
       open hands one over as 200): each is moved above HIGH_FD_BASE before a child exists. */
    for (int k = 0; k < o.n_progs; k++) {
        if ((o.prog_fd[k] = move_high(o.prog_fd[k])) < 0) {
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
    /* --feed: the input index of every run, "0,0,1,2,...", one per character of --order. */
    int *feed_idx = NULL;
    if (feed != NULL) {
        size_t want = order ? strlen(order) : 0;
        feed_idx = calloc(want ? want : 1, sizeof *feed_idx);
        size_t got = 0;
        const char *p = feed;
        while (feed_idx != NULL && *p && got < want) {
            char *end = NULL;
            long idx = strtol(p, &end, 10);
            if (end == p || idx < 0 || idx >= n_inputs || (*end != ',' && *end != '\0')) break;
            feed_idx[got++] = (int)idx;
            p = *end == ',' ? end + 1 : end;
        }
        if (feed_idx == NULL || order == NULL || got != want || *p != '\0') {
            report("error --feed must name an input that was given for every run of --order\n");
            return 122;
        }
    }
    if (order != NULL) {
        runs = strlen(order);
        for (size_t k = 0; k < runs; k++) {
            if (order[k] < '0' || order[k] >= '0' + (o.n_progs ? o.n_progs : 1)) {
                report("error --order names a program that was not given\n");
                return 122;
            }
        }
    }
    o.child_argv = &argv[i];
    size_t marker_len = marker ? strlen(marker) : 0;
    signal(SIGPIPE, SIG_IGN);
    /* Inside bubblewrap our parent is its pid 1, which only waits and reaps (whatever we
     * leave when we die): it must not stay at the real-time priority it was started with. */
    if (o.isolate && getppid() == 1) leave_realtime(1);

    for (unsigned long long run = 0; run < runs; run++) {
        int which = order ? order[run] - '0' : 0;
        int in_fd;
        if (n_inputs) {
            in_fd = fresh_stdin(input_fd[feed_idx ? feed_idx[run] : 0]);
        } else {
            in_fd = open(stdin_path, O_RDONLY | O_CLOEXEC);
        }
        if (in_fd < 0) {
            report("error cannot prepare stdin: %s\n", strerror(errno));
            return 122;
        }
        int out_p[2], err_p[2], status_p[2], log_p[2] = {-1, -1};
        if (pipe2(out_p, O_CLOEXEC) != 0 || pipe2(err_p, O_CLOEXEC) != 0 ||
            pipe2(status_p, O_CLOEXEC) != 0 || (o.log_fd >= 0 && pipe2(log_p, O_CLOEXEC) != 0)) {
            report("error pipe failed: %s\n", strerror(errno));
            return 122;
        }
        int flags = SIGCHLD | (o.isolate ? CLONE_NEWPID | CLONE_NEWNS : 0);
        pid_t init = (pid_t)syscall(SYS_clone, flags, 0, 0, 0, 0);
        if (init < 0) {
            report("error cannot start a run: %s\n", strerror(errno));
            return 122;
        }
        if (o.isolate) setpgid(init, init); /* as the init does: whichever runs first */
        if (init == 0) {
            close(out_p[0]);
            close(err_p[0]);
            close(status_p[0]);
            if (log_p[0] >= 0) close(log_p[0]);
            run_init(&o, which, in_fd, out_p[1], err_p[1], log_p[1], status_p[1]);
        }
        close(in_fd);
        close(out_p[1]);
        close(err_p[1]);
        close(status_p[1]);
        if (log_p[1] >= 0) close(log_p[1]);

        /* Relay the run's output, watch its deadline, collect its status. */
        struct run_status st;
        memset(&st, 0, sizeof st);
        unsigned char stbuf[sizeof st];
        size_t st_got = 0;
        int have_status = 0;
        unsigned long long out_n = 0, err_n = 0;
        const char *killed = "none";
        static unsigned char log_buf[LOG_KEEP];
        size_t log_len = 0;
        long long deadline =
            o.run_wall_ms[which] ? now_ns() + (long long)o.run_wall_ms[which] * 1000000LL : 0;
        int fds[4] = {out_p[0], err_p[0], status_p[0], log_p[0]};
        int open_n = log_p[0] >= 0 ? 4 : 3;
        int live = open_n;
        while (live > 0) {
            struct pollfd pf[4];
            int np = 0;
            int idx[4];
            for (int k = 0; k < open_n; k++) {
                if (fds[k] >= 0) {
                    pf[np].fd = fds[k];
                    pf[np].events = POLLIN;
                    idx[np++] = k;
                }
            }
            int timeout = 1000;
            if (deadline) {
                long long left = (deadline - now_ns()) / 1000000LL;
                if (left <= 0) {
                    killed = "wall";
                    break;
                }
                if (left < timeout) timeout = (int)left + 1;
            }
            int r = poll(pf, (nfds_t)np, timeout);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                report("error poll failed: %s\n", strerror(errno));
                kill_run(&o, init, NULL);
                return 122;
            }
            for (int q = 0; q < np; q++) {
                if (!(pf[q].revents & (POLLIN | POLLHUP | POLLERR))) continue;
                int k = idx[q];
                unsigned char chunk[65536];
                ssize_t got = read(fds[k], chunk, sizeof chunk);
                if (got < 0 && errno == EINTR) continue;
                if (got <= 0) {
                    close(fds[k]);
                    fds[k] = -1;
                    live--;
                    continue;
                }
                size_t g = (size_t)got;
                if (k == 0 || k == 1) {
                    unsigned long long *n = k == 0 ? &out_n : &err_n;
                    unsigned long long cap = k == 0 ? o.out_cap : o.err_cap;
                    size_t keep = g;
                    if (cap && *n + g > cap) keep = (size_t)(cap - *n);
                    write_all(k == 0 ? 1 : 2, chunk, keep);
                    *n += g;
                    if (cap && *n > cap) {
                        killed = k == 0 ? "stdout" : "stderr";
                        break;
                    }
                } else if (k == 2) {
                    /* Whole status records, however the pipe splits or joins them. */
                    for (size_t used = 0; used < g;) {
                        size_t take = g - used;
                        if (st_got + take > sizeof st) take = sizeof st - st_got;
                        memcpy(stbuf + st_got, chunk + used, take);
                        st_got += take;
                        used += take;
                        if (st_got == sizeof st) {
                            memcpy(&st, stbuf, sizeof st);
                            st_got = 0;
                            if (st.phase == 2) have_status = 1;
                        }
                    }
                } else if (g >= LOG_KEEP) { /* keep the tail */
                    memcpy(log_buf, chunk + g - LOG_KEEP, LOG_KEEP);
                    log_len = LOG_KEEP;
                } else {
                    if (log_len + g > LOG_KEEP) {
                        size_t drop = log_len + g - LOG_KEEP;
                        memmove(log_buf, log_buf + drop, log_len - drop);
                        log_len -= drop;
                    }
                    memcpy(log_buf + log_len, chunk, g);
                    log_len += g;
                }
            }
            if (strcmp(killed, "none") != 0) break;
        }
        if (strcmp(killed, "none") != 0 || !have_status) {
            kill_run(&o, init, &st);
        }
        /* After a kill we only wait (the sandbox stops after a killed run). Otherwise the
         * init has reaped the program before reporting, and a pid namespace's init becomes
         * reapable only once every other task of it is released, so this wait never
         * overlaps a program's teardown and we may stay real-time for the next run. */
        for (int k = 0; k < open_n; k++) {
            if (fds[k] >= 0) close(fds[k]);
        }
        int istatus;
        while (waitpid(init, &istatus, 0) < 0 && errno == EINTR) {
        }
        if (!have_status && strcmp(killed, "none") == 0) {
            /* The init died without a word: only a kill from outside does that. */
            report("error the run's supervisor was lost (status %d)\n", istatus);
            return 122;
        }
        if (have_status && st.setup_errno) {
            report("error cannot prepare the run (%s): %s\n", st.setup_what,
                   strerror(st.setup_errno));
            return 122;
        }
        int code = -1, sig = 0;
        if (have_status && strcmp(killed, "none") == 0) {
            code = WIFEXITED(st.status) ? WEXITSTATUS(st.status) : -1;
            sig = WIFSIGNALED(st.status) ? WTERMSIG(st.status) : 0;
        } else {
            sig = SIGKILL;
        }
        report("run i=%llu prog=%d input=%d exit=%d signal=%d utime_us=%lld stime_us=%lld "
               "maxrss_kb=%ld wall_ns=%lld nvcsw=%ld nivcsw=%ld minflt=%ld majflt=%ld "
               "out=%llu err=%llu killed=%s exec_errno=%d\n",
               run, which, feed_idx ? feed_idx[run] : 0, code, sig,
               (long long)st.ru.ru_utime.tv_sec * 1000000LL + st.ru.ru_utime.tv_usec,
               (long long)st.ru.ru_stime.tv_sec * 1000000LL + st.ru.ru_stime.tv_usec,
               st.ru.ru_maxrss, st.wall_ns, st.ru.ru_nvcsw, st.ru.ru_nivcsw, st.ru.ru_minflt,
               st.ru.ru_majflt, out_n, err_n, killed, have_status ? st.exec_errno : 0);
        if (o.log_fd >= 0) {
            report_log(log_buf, log_len);
        }
        if (marker) {
            char nl = '\n';
            write_all(1, marker, marker_len);
            write_all(1, &nl, 1);
        }
        /* A run stopped by a deadline or a cap, or one that could not start, decides the
         * outcome: the remaining runs would only cost time (a program that stalls only
         * when timed would hold the timing core for every run left). */
        if (strcmp(killed, "none") != 0 || (have_status && st.exec_errno)) {
            report("stopped after run %llu\n", run);
            break;
        }
    }
    report("done\n");
    return 0;
}
