"""The kernels' OpenMP team as a process-wide resource: NumPy's BLAS jobs run on it, a
forked child can still run kernels, and kernels ask whether its threads share a CPU.

NOTE(blas-pool): NumPy's OpenBLAS (the pthreads build its wheels bundle) keeps a pool
of its own beside libgomp's team, and its idle workers busy-spin about 0.1 s after each
product, so a fused kernel right after a matmul shared the cores with a spinning worker
(the k-means step lost 16-26% when measured). OpenBLAS 0.3.27 and later take a
threads callback: given one, `exec_blas` hands it a call's jobs instead of queueing them
to its workers. When the CPU target first loads kernels, pyjit gives every OpenBLAS
loaded in the process a callback that runs the jobs on libgomp's team, so one team,
with NOTE(omp-wait-policy)'s short spin, serves both. The bits do not change: OpenBLAS
splits the work as before and its own code runs each job.

What the callback must get right, read from OpenBLAS 0.3.31's `exec_threads`:
  * A job's thread number indexes OpenBLAS's per-thread state (`thread_status`, the
    packing buffers; MAX_THREADS slots), and a job marks its slot busy while it runs.
    A worker of OpenBLAS's pool that is still in its idle spin treats its own slot
    marked busy as a reason to keep spinning: handing job i slot i (as the OpenMP build
    does) kept a worker spinning for good, and the MLP ran 2x slower. The pool's
    workers watch the lowest slots, one fewer than its threads, so jobs take the
    highest ones; a library whose threads (or the CPUs, the larger) are more than half
    its MAX_THREADS is left to its own pool. (The layout was read from the code of
    0.3.31 and 0.3.34; only the API is called.)
  * The jobs of one call wait for each other (level-3 products), so all must run at
    once: a team libgomp makes smaller than asked (`OMP_THREAD_LIMIT`, `OMP_DYNAMIC`,
    a nested region) gets threads of its own for the jobs left over.
  * Calls from several Python threads run one at a time (the slots and buffers are
    shared); OpenBLAS serializes its threaded products the same way.
`pyjit.config.blas_threads = "openblas"` (PYJIT_BLAS_THREADS) leaves OpenBLAS's pool as
it was; setting it back and loading kernels hands the callback out again.

NOTE(stacked-team): on some virtual machines (this one: KVM, kernel 6.18) the scheduler
wakes a sleeping thread on the CPU of the thread that wakes it, even with another CPU
idle. A team whose worker slept then shares the caller's CPU, and keeps sharing it: each
call of a 40 µs loop took 95 µs, its serial time plus both threads' bounded spins
(NOTE(omp-wait-policy)), where one thread took 43 µs and two CPUs 25 µs. The library
below answers `pyjit_team_apart()`, which kernels ask before a loop of middling work
(the C renderer's APART_CHECKED_BELOW) goes on threads: every 256th question of a thread
runs an empty region in which each team thread compares its CPU with the caller's, and
the answer stands until the next. A stacked team runs those loops serially (the worker
then sleeps, and the next probe is likely to wake it stacked again); a team apart keeps
them on threads. Loops with more work always go on threads: there the scheduler moves a
stacked thread within the call. Kernels declare the function weak: loaded where this
library is not, they take the team as apart.

NOTE(fork-child): libgomp does not survive fork: a child forked after a parallel region
waits forever for the parent's team at its first region (a kernel, or a product through
the callback). The library below registers a `pthread_atfork` child handler that takes
the callback back from every OpenBLAS (the child's products use OpenBLAS's own pool,
which OpenBLAS re-creates after fork) and sets the forking thread's team to one thread,
so kernels in the child run serially. Threads the child starts later would still get the
full team: running kernels there is not supported (docs/codegen.md).
"""

from __future__ import annotations

import ctypes
import itertools
import os
import threading

from ... import config
from . import build

__all__ = ["BlasPool", "share_with_blas", "state", "team_probes"]

_SOURCE = r"""
/* NOTE(blas-pool), NOTE(fork-child) in pyjit/codegen/cpu/threads.py */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef void (*dojob_fn)(int slot, void *job, int data);
typedef void (*callback_fn)(int sync, dojob_fn dojob, int count, size_t job_size, void *jobs, int data);
typedef void (*setter_fn)(callback_fn callback);
typedef char *(*config_fn)(void);
typedef int (*threads_fn)(void);

#define MAX_LIBRARIES 4
typedef struct {
  setter_fn set;
  threads_fn threads; /* openblas_get_num_threads */
  int max_threads;    /* MAX_THREADS: the number of slots */
  int active;
  char path[4096];
} Blas;

static Blas libraries[MAX_LIBRARIES];
static int library_count;
static pthread_mutex_t one_call = PTHREAD_MUTEX_INITIALIZER;
static int64_t calls, lowest_slot = -1, highest_slot = -1, own_threads;

typedef struct { dojob_fn dojob; void *job; int slot; int data; } Job;

static void *run_job(void *argument) {
  Job *job = argument;
  job->dojob(job->slot, job->job, job->data);
  return NULL;
}

static void note_slots(int first, int count) {
  calls++;
  if (lowest_slot < 0 || first < lowest_slot) lowest_slot = first;
  if (first + count - 1 > highest_slot) highest_slot = first + count - 1;
}

/* The jobs this team has no thread for, on threads of their own (they wait for each
   other, so none may wait for a thread to come free). */
static void start_leftovers(Job *jobs, pthread_t *threads, int team, int count) {
  for (int i = team; i < count; i++) {
    if (pthread_create(&threads[i], NULL, run_job, &jobs[i]) != 0) {
      fprintf(stderr, "pyjit: cannot start a thread for an OpenBLAS job\n");
      abort();
    }
  }
  own_threads += count - team;
}

static void run_jobs(Blas *blas, dojob_fn dojob, int count, size_t job_size, void *jobdata, int data) {
  pthread_mutex_lock(&one_call);
  int first = blas->max_threads - count;
  if (first < 0) first = 0;
  note_slots(first, count);
  Job *jobs = malloc(sizeof(Job) * (size_t)count);
  pthread_t *threads = malloc(sizeof(pthread_t) * (size_t)count);
  if (!jobs || !threads) abort();
  for (int i = 0; i < count; i++) {
    jobs[i] = (Job){dojob, (char *)jobdata + (size_t)i * job_size, first + i, data};
  }
  int team = 1;
#pragma omp parallel num_threads(count)
  {
    int me = 0, size = 1;
#ifdef _OPENMP
    me = omp_get_thread_num();
    size = omp_get_num_threads();
#endif
    if (me == 0) {
      team = size;
      if (size < count) start_leftovers(jobs, threads, size, count);
    }
    run_job(&jobs[me]);
  }
  for (int i = team; i < count; i++) pthread_join(threads[i], NULL);
  free(threads);
  free(jobs);
  pthread_mutex_unlock(&one_call);
}

#define TRAMPOLINE(n) \
  static void run_jobs_##n(int sync, dojob_fn dojob, int count, size_t size, void *jobs, int data) { \
    (void)sync; run_jobs(&libraries[n], dojob, count, size, jobs, data); }
TRAMPOLINE(0) TRAMPOLINE(1) TRAMPOLINE(2) TRAMPOLINE(3)
static const callback_fn trampolines[MAX_LIBRARIES] = {run_jobs_0, run_jobs_1, run_jobs_2, run_jobs_3};

static void in_forked_child(void) {
  /* A product running in another thread at the fork held it; that thread is gone. */
  pthread_mutex_init(&one_call, NULL);
  for (int i = 0; i < library_count; i++) {
    if (libraries[i].active) libraries[i].set(NULL);
    libraries[i].active = 0;
  }
#ifdef _OPENMP
  omp_set_num_threads(1);
#endif
}

__attribute__((constructor)) static void register_fork_handler(void) {
  pthread_atfork(NULL, NULL, in_forked_child);
}

/* The library's API function `name` under the prefixes and suffixes OpenBLAS builds
   use (scipy-openblas renames its API). */
static void *api_symbol(void *handle, const char *name) {
  static const char *const prefixes[] = {"", "scipy_"};
  static const char *const suffixes[] = {"", "64_", "_64"};
  char full[160];
  for (int p = 0; p < 2; p++) {
    for (int s = 0; s < 3; s++) {
      snprintf(full, sizeof full, "%s%s%s", prefixes[p], name, suffixes[s]);
      void *symbol = dlsym(handle, full);
      if (symbol) return symbol;
    }
  }
  return NULL;
}

static int max_threads_of(void *handle) {
  config_fn get_config = (config_fn)api_symbol(handle, "openblas_get_config");
  const char *text = get_config ? get_config() : NULL;
  const char *field = text ? strstr(text, "MAX_THREADS=") : NULL;
  return field ? atoi(field + strlen("MAX_THREADS=")) : 0;
}

static void adopt(const char *path) {
  for (int i = 0; i < library_count; i++) {
    if (strcmp(libraries[i].path, path) == 0) return;
  }
  if (library_count == MAX_LIBRARIES || strlen(path) >= sizeof libraries[0].path) return;
  void *handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  if (!handle) return;
  Blas blas = {(setter_fn)api_symbol(handle, "openblas_set_threads_callback_function"),
               (threads_fn)api_symbol(handle, "openblas_get_num_threads"), max_threads_of(handle), 0, ""};
  dlclose(handle);
  if (!blas.set || !blas.threads) return;
  long cpus = sysconf(_SC_NPROCESSORS_CONF);
  int threads = blas.threads();
  if (2 * (threads > cpus ? threads : cpus) > blas.max_threads) return;
  strcpy(blas.path, path);
  libraries[library_count++] = blas;
}

static int find_openblas(struct dl_phdr_info *info, size_t size, void *unused) {
  (void)size; (void)unused;
  const char *slash = strrchr(info->dlpi_name, '/');
  if (strstr(slash ? slash : info->dlpi_name, "openblas")) adopt(info->dlpi_name);
  return 0;
}

/* Hands the callback to every OpenBLAS loaded that can take it (share != 0), or takes
   it back (share == 0); returns how many hold it. */
int pyjit_share_blas(int share) {
#ifndef _OPENMP
  share = 0;
#endif
  if (share) dl_iterate_phdr(find_openblas, NULL);
  int active = 0;
  for (int i = 0; i < library_count; i++) {
    if (libraries[i].active != share) libraries[i].set(share ? trampolines[i] : NULL);
    libraries[i].active = share;
    active += share;
  }
  return active;
}

/* NOTE(stacked-team): whether this thread's team runs on CPUs of its own, asked by the
   kernels before a loop of middling work goes on threads. Every PROBE_INTERVAL-th call
   runs an empty region in which each team thread compares its CPU with the caller's. */
#define PROBE_INTERVAL 256
static _Thread_local int64_t team_questions;
static _Thread_local int team_apart = 1;
static int64_t probes, stacked_probes;

int pyjit_team_apart(void) {
#ifdef _OPENMP
  if (team_questions++ % PROBE_INTERVAL != 0) return team_apart;
  if (omp_get_max_threads() < 2) return team_apart = 1;
  const int caller = sched_getcpu();
  int stacked = 0;
#pragma omp parallel reduction(|: stacked)
  {
    if (omp_get_thread_num() != 0 && sched_getcpu() == caller) stacked = 1;
  }
  __atomic_add_fetch(&probes, 1, __ATOMIC_RELAXED);
  if (stacked) __atomic_add_fetch(&stacked_probes, 1, __ATOMIC_RELAXED);
  team_apart = !stacked;
#endif
  return team_apart;
}

void pyjit_team_probes(int64_t out[2]) {
  out[0] = __atomic_load_n(&probes, __ATOMIC_RELAXED);
  out[1] = __atomic_load_n(&stacked_probes, __ATOMIC_RELAXED);
}

/* calls, lowest and highest slot used, jobs run on threads of their own. */
void pyjit_blas_jobs(int64_t out[4]) {
  pthread_mutex_lock(&one_call);
  out[0] = calls; out[1] = lowest_slot; out[2] = highest_slot; out[3] = own_threads;
  pthread_mutex_unlock(&one_call);
}

const char *pyjit_blas_library(int i, int *pool_threads, int *max_threads) {
  if (i < 0 || i >= library_count) return NULL;
  *pool_threads = libraries[i].threads();
  *max_threads = libraries[i].max_threads;
  return libraries[i].active ? libraries[i].path : "";
}
"""

_lock = threading.Lock()
_library: ctypes.CDLL | None = None
_CHOICES = ("openmp", "openblas")


class BlasPool:
    """What NOTE(blas-pool) did in this process: the OpenBLAS libraries that hand their
    jobs to pyjit, and what the callback has run."""

    def __init__(self, libraries: list[dict], jobs: list[int]):
        self.libraries = libraries  # [{"path", "pool_threads", "max_threads"}] holding the callback
        self.calls, self.lowest_slot, self.highest_slot, self.own_threads = jobs

    def __repr__(self) -> str:
        return (f"BlasPool(libraries={self.libraries!r}, calls={self.calls}, "
                f"slots={self.lowest_slot}..{self.highest_slot}, own_threads={self.own_threads})")


def share_with_blas() -> None:
    """Load the team's library (its fork handler, NOTE(fork-child)) and hand OpenBLAS the
    callback, or take it back, as config.blas_threads says (NOTE(blas-pool)). Called by
    the CPU target before it loads kernels; raises ValueError for an unknown setting,
    and build's errors when no C compiler works."""
    choice = config.blas_threads
    if choice not in _CHOICES:
        raise ValueError(f"pyjit.config.blas_threads (PYJIT_BLAS_THREADS) is {choice!r}; "
                         f"expected one of {', '.join(map(repr, _CHOICES))}")
    with _lock:
        _loaded().pyjit_share_blas(int(choice == "openmp"))


def state() -> BlasPool:
    """The callback's libraries and counters; loads the team's library if needed."""
    with _lock:
        library = _loaded()
    jobs = (ctypes.c_int64 * 4)()
    library.pyjit_blas_jobs(jobs)
    libraries, pool_threads, max_threads = [], ctypes.c_int(), ctypes.c_int()
    for index in itertools.count():  # the C side answers NULL past its last library
        path = library.pyjit_blas_library(index, ctypes.byref(pool_threads), ctypes.byref(max_threads))
        if path is None:
            break
        if path:
            libraries.append({"path": path.decode(), "pool_threads": pool_threads.value,
                              "max_threads": max_threads.value})
    return BlasPool(libraries, list(jobs))


def team_probes() -> tuple[int, int]:
    """(probes run, probes that found the team stacked on the caller's CPU) in this
    process (NOTE(stacked-team)); loads the team's library if needed."""
    with _lock:
        library = _loaded()
    counts = (ctypes.c_int64 * 2)()
    library.pyjit_team_probes(counts)
    return counts[0], counts[1]


def _loaded() -> ctypes.CDLL:
    global _library
    if _library is None:
        kernels = build.load(_SOURCE)  # built and cached like kernels, with their compiler and OpenMP
        # Never unloaded: OpenBLAS and the fork handler keep pointers into it.
        # Global: kernels call its pyjit_team_apart (NOTE(stacked-team)).
        library = ctypes.CDLL(kernels.path, mode=os.RTLD_NOW | os.RTLD_NODELETE | os.RTLD_GLOBAL)
        library.pyjit_share_blas.argtypes = [ctypes.c_int]
        library.pyjit_blas_jobs.argtypes = [ctypes.POINTER(ctypes.c_int64)]
        library.pyjit_blas_library.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                               ctypes.POINTER(ctypes.c_int)]
        library.pyjit_blas_library.restype = ctypes.c_char_p
        library.pyjit_team_probes.argtypes = [ctypes.POINTER(ctypes.c_int64)]
        _library = library
    return _library
