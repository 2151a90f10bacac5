/* The floor of a CUDA process's start-up: initialise the driver, create (retain) GPU 0's primary context, make it
 * current, allocate and free 1 MiB, exit. `startup-timing.sh` runs it under mpirun beside `mscclpp test`.
 * `-v` prints the milliseconds of each step on stderr; `-x` leaves through _exit (no atexit handlers, no context
 * release), to see what the driver's teardown at exit costs. */
#include <cuda.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  int verbose = 0, fast_exit = 0;
  for (int i = 1; i < argc; i++) {
    verbose |= strcmp(argv[i], "-v") == 0;
    fast_exit |= strcmp(argv[i], "-x") == 0;
  }
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  double t0 = now_ms();
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS) return 1;
  double t1 = now_ms();
  if (cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) return 1;
  double t2 = now_ms();
  if (cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) return 1;
  double t3 = now_ms();
  if (verbose)
    fprintf(stderr, "cuda_init: cuInit %.1f ms, primary context %.1f ms, 1 MiB alloc+free %.1f ms\n", t1 - t0,
            t2 - t1, t3 - t2);
  if (fast_exit) _exit(0);
  cuDevicePrimaryCtxRelease(dev);
  if (verbose) fprintf(stderr, "cuda_init: context release %.1f ms\n", now_ms() - t3);
  return 0;
}
