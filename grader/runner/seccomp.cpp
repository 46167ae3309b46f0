#include "runner/seccomp.h"

#ifdef GRADER_HAVE_SECCOMP
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <unistd.h>
#endif

namespace grader {

#ifdef GRADER_HAVE_SECCOMP
bool seccomp_available() { return true; }

std::string install_seccomp_filter() {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return "cannot set no_new_privs";
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  if (!filter) return "seccomp_init failed";
  const uint32_t kill = SCMP_ACT_KILL_PROCESS;
  int failures = 0;
  auto deny = [&](const char* name) {
    int call = seccomp_syscall_resolve_name(name);
    if (call == __NR_SCMP_ERROR) return;  // not on this architecture
    failures += seccomp_rule_add(filter, kill, call, 0) != 0;
  };
  for (const char* name : {"fork",
                           "vfork",
                           "execve",
                           "execveat",
                           "socket",
                           "socketpair",
                           "connect",
                           "bind",
                           "listen",
                           "accept",
                           "accept4",
                           "ptrace",
                           "process_vm_readv",
                           "process_vm_writev",
                           "pidfd_getfd",
                           "unshare",
                           "setns",
                           "mount",
                           "umount2",
                           "pivot_root",
                           "chroot",
                           "bpf",
                           "perf_event_open",
                           "keyctl",
                           "add_key",
                           "request_key",
                           "init_module",
                           "finit_module",
                           "delete_module",
                           "kexec_load",
                           "kexec_file_load",
                           "reboot",
                           "swapon",
                           "swapoff",
                           "io_uring_setup",
                           "io_uring_enter",
                           "io_uring_register",
                           "userfaultfd",
                           "open_by_handle_at",
                           "name_to_handle_at",
                           "personality"}) {
    deny(name);
  }
  // Threads (CLONE_THREAD) are LibTorch's and allowed; a clone without it is a
  // new process. clone3 passes its flags in memory the filter cannot read, so
  // it answers "not implemented" and the C library falls back to clone.
  failures += seccomp_rule_add(filter, kill, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)) != 0;
  failures += seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) != 0;

  // Signals reach this process only: nothing of another grade (its compiler,
  // its runner) or of the machine can be killed, with or without namespaces.
  const auto self = static_cast<scmp_datum_t>(getpid());
  failures += seccomp_rule_add(filter, kill, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_NE, self)) != 0;
  failures += seccomp_rule_add(filter, kill, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_NE, self)) != 0;
  failures += seccomp_rule_add(filter, kill, SCMP_SYS(rt_sigqueueinfo), 1, SCMP_A0(SCMP_CMP_NE, self)) != 0;
  failures += seccomp_rule_add(filter, kill, SCMP_SYS(rt_tgsigqueueinfo), 1, SCMP_A0(SCMP_CMP_NE, self)) != 0;
  for (const char* name : {"tkill", "pidfd_open", "pidfd_send_signal", "setpriority", "ioprio_set"}) deny(name);
  // Nor can it change a process's limits, scheduling or CPUs but through pid
  // 0, itself, as the C library does (between processes of one user the kernel
  // allows it; a runner's siblings, forked by the same zygote, and the zygote
  // itself would suffer or inherit them): refused with "operation not permitted".
  const uint32_t refused = SCMP_ACT_ERRNO(EPERM);
  failures += seccomp_rule_add(filter, refused, SCMP_SYS(prlimit64), 2, SCMP_A0(SCMP_CMP_NE, 0),
                               SCMP_A2(SCMP_CMP_NE, 0)) != 0;  // reading limits stays allowed
  for (const char* name : {"sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"}) {
    int call = seccomp_syscall_resolve_name(name);
    if (call != __NR_SCMP_ERROR) failures += seccomp_rule_add(filter, refused, call, 1, SCMP_A0(SCMP_CMP_NE, 0)) != 0;
  }

  // No file is created, changed or removed, and no IPC object made: the code
  // being graded needs none of its own, and so it can neither fill a disk, nor
  // touch another grade's compiled code, nor leave anything behind, in any
  // isolation mode.
  // Refused with EACCES (a program that tries gets an error, not a kill).
  const uint32_t refuse = SCMP_ACT_ERRNO(EACCES);
  auto refuse_writes = [&](int call, unsigned flags_arg) {
    for (scmp_datum_t bits :
         {scmp_datum_t(O_WRONLY), scmp_datum_t(O_RDWR), scmp_datum_t(O_CREAT), scmp_datum_t(O_TRUNC)}) {
      scmp_arg_cmp flags = {flags_arg, SCMP_CMP_MASKED_EQ, bits, bits};
      failures += seccomp_rule_add_array(filter, refuse, call, 1, &flags) != 0;
    }
  };
  refuse_writes(SCMP_SYS(open), 1);
  refuse_writes(SCMP_SYS(openat), 2);
  failures += seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0) != 0;  // flags in memory
  for (const char* name :
       {"creat", "mkdir", "mkdirat", "mknod", "mknodat", "rmdir", "unlink", "unlinkat", "rename", "renameat",
        "renameat2", "link", "linkat", "symlink", "symlinkat", "truncate", "chmod", "fchmodat", "chown", "lchown",
        "fchownat", "utime", "utimes", "utimensat", "futimesat", "setxattr", "lsetxattr", "removexattr", "lremovexattr",
        // The same through a descriptor (an open folder, a file opened for reading).
        "fchmod", "fchown", "fsetxattr", "fremovexattr",
        // System V and POSIX IPC: objects no scratch cleanup sees, outliving
        // the grade where there is no IPC namespace, and shared with others.
        "shmget", "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop", "semctl",
        "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"}) {
    int call = seccomp_syscall_resolve_name(name);
    if (call != __NR_SCMP_ERROR) failures += seccomp_rule_add(filter, refuse, call, 0) != 0;
  }
  if (failures) {
    seccomp_release(filter);
    return "cannot add the filter's rules";
  }
  int loaded = seccomp_load(filter);
  seccomp_release(filter);
  return loaded == 0 ? "" : "seccomp_load failed";
}
#else
bool seccomp_available() { return false; }
std::string install_seccomp_filter() { return "the runner was built without libseccomp"; }
#endif

}  // namespace grader
