/*
** maxrss.c: usage: maxrss CMD [ARGS...]
**
** Runs CMD (standard streams inherited), then prints "maxrss_kb N" on
** standard error: the peak resident set of CMD as wait4(2) reports it.
** Exits with CMD's status (128 + signal if a signal killed it). For tests
** that bound the reader's memory; GNU time is not on every machine.
*/

#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
  struct rusage ru;
  int st;
  pid_t pid;
  if (argc < 2) {
    fprintf(stderr, "usage: maxrss CMD [ARGS...]\n");
    return 2;
  }
  if ((pid = fork()) == 0) {
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    _exit(127);
  }
  if (pid < 0 || wait4(pid, &st, 0, &ru) < 0) {
    perror("maxrss");
    return 2;
  }
  fprintf(stderr, "maxrss_kb %ld\n", ru.ru_maxrss);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
