#include "bench_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

int bench_die_with_parent(void) {
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return -1;
    /* Reparented already: the parent ended before the request, which then never fires. */
    return getppid() == parent ? 0 : -1;
}
