#ifndef BENCH_PROCESS_H
#define BENCH_PROCESS_H

/* Asks the kernel to send this process SIGKILL when its parent ends (prctl's
   PR_SET_PDEATHSIG, which Swift cannot call: prctl is variadic). Returns 0, or -1 when the
   parent had already ended by the time the request took effect. */
int bench_die_with_parent(void);

#endif
