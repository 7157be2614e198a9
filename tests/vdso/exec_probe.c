/* Execs that reach a program in less usual ways (tests/vdso/handover.sh): usage
 * exec_probe HOW PROGRAM, where HOW is
 *   thread  a second thread execs PROGRAM (its exec stop carries the leader's pid);
 *   vfork   a vfork child execs it, the parent waits for it;
 *   spawn   posix_spawn runs it, the caller waits for it;
 *   failed  an execve of a path that does not exist first (it fails: the process must not stay
 *           traced), then "tracer PID caught SIG": its TracerPid right after, and a SIGUSR1 it
 *           sent itself and caught; then PROGRAM is exec'd.
 * PROGRAM's own line is the output, after the failed case's lines. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;
static char* program;

static void run_program(void) {
  char* argv[] = {program, NULL};
  execve(program, argv, environ);
  perror("execve");
  _exit(127);
}

static void* exec_from_thread(void* unused) {
  (void)unused;
  run_program();
  return NULL;
}

static volatile sig_atomic_t caught;
static void on_usr1(int signal) { caught = signal; }

static long tracer_pid(void) {
  FILE* status = fopen("/proc/self/status", "r");
  char line[256];
  long tracer = -1;
  while (status != NULL && fgets(line, sizeof(line), status) != NULL) {
    if (strncmp(line, "TracerPid:", 10) == 0) tracer = strtol(line + 10, NULL, 10);
  }
  if (status != NULL) fclose(status);
  return tracer;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  program = argv[2];
  int status = 0;
  if (strcmp(argv[1], "thread") == 0) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, exec_from_thread, NULL) != 0) return 1;
    pause();
  } else if (strcmp(argv[1], "vfork") == 0) {
    const pid_t child = vfork();
    if (child == 0) run_program();
    if (child < 0 || waitpid(child, &status, 0) != child) return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  } else if (strcmp(argv[1], "spawn") == 0) {
    pid_t child = 0;
    char* child_argv[] = {program, NULL};
    if (posix_spawn(&child, program, NULL, NULL, child_argv, environ) != 0) return 1;
    if (waitpid(child, &status, 0) != child) return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  } else if (strcmp(argv[1], "failed") == 0) {
    char* none[] = {"/nonexistent/vclock-exec-probe", NULL};
    execve(none[0], none, environ);
    const long tracer = tracer_pid();
    signal(SIGUSR1, on_usr1);
    raise(SIGUSR1);
    printf("tracer %ld caught %d\n", tracer, (int)caught);
    fflush(stdout);
    run_program();
  }
  return 2;
}
