// NVLink traffic patterns between the GPUs of one host (one process, peer access): per-GPU bytes per second each
// way for all-to-all writes, all-to-all reads, ring writes, ring reads and the one-pass all-reduce mix (read every
// peer's slice, write the result to every peer), over a range of thread-block counts.
// nvcc -O3 -arch=sm_90 nvlink_probe.cu -o nvlink_probe && ./nvlink_probe [MiB per GPU]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(err_)); exit(1); } } while (0)

struct Ptrs { int4* p[8]; };

// mode 0: write my buffer's slice k to peer (self+k)'s buffer (all peers at once, blocks split over peers)
// mode 1: read peer (self+k)'s slice into my buffer
// mode 2: ring write: all bytes to peer self+1
// mode 3: ring read: all bytes from peer self-1
// mode 4: one pass: read slice from every peer (sum), write the sum to every peer
__global__ void pattern(Ptrs peers, int4* mine, int n, int self, size_t words, int mode) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (mode == 0 || mode == 1) {
    // words split into n-1 slices; block b works on slice (b % (n-1))
    int k = 1 + blockIdx.x % (n - 1);
    int nb = gridDim.x / (n - 1);
    int bi = blockIdx.x / (n - 1);
    size_t per = words / (n - 1);
    int4* peer = peers.p[(self + k) % n];
    size_t base = per * (k - 1);
    for (size_t i = (size_t)bi * blockDim.x + threadIdx.x; i < per; i += (size_t)nb * blockDim.x) {
      if (mode == 0) peer[base + i] = mine[base + i]; else mine[base + i] = peer[base + i];
    }
  } else if (mode == 2) {
    int4* peer = peers.p[(self + 1) % n];
    for (size_t i = t; i < words; i += stride) peer[i] = mine[i];
  } else if (mode == 3) {
    int4* peer = peers.p[(self + n - 1) % n];
    for (size_t i = t; i < words; i += stride) mine[i] = peer[i];
  } else {
    // my chunk: words/n; read each peer's copy of it, add, write to every peer
    size_t per = words / n;
    size_t base = per * self;
    for (size_t i = t; i < per; i += stride) {
      int4 acc = mine[base + i];
      for (int k = 1; k < n; ++k) { int4 v = peers.p[(self + k) % n][base + i]; acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w; }
      mine[base + i] = acc;
      for (int k = 1; k < n; ++k) peers.p[(self + k) % n][base + i] = acc;
    }
  }
}

int main(int argc, char** argv) {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n > 8) n = 8;
  size_t mib = argc > 1 ? atoi(argv[1]) : 256;
  size_t bytes = mib << 20, words = bytes / 16;
  std::vector<int4*> buf(n);
  std::vector<cudaStream_t> st(n);
  for (int d = 0; d < n; ++d) {
    CK(cudaSetDevice(d));
    for (int e = 0; e < n; ++e) if (e != d) CK(cudaDeviceEnablePeerAccess(e, 0));
    CK(cudaMalloc(&buf[d], bytes));
    CK(cudaMemset(buf[d], 0, bytes));
    CK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
  }
  Ptrs ps{};
  for (int d = 0; d < n; ++d) ps.p[d] = buf[d];
  const char* names[] = {"a2a-write", "a2a-read", "ring-write", "ring-read", "onepass-rw"};
  printf("# %d GPUs, %zu MiB per GPU; GB/s per GPU each way (bytes leaving or entering one GPU over its links)\n", n, mib);
  printf("%-11s %6s %7s %9s\n", "pattern", "blocks", "threads", "GB/s");
  for (int mode = 0; mode < 5; ++mode) {
    for (int blocks : {16, 24, 32, 48, 64, 96, 120, 128}) {
      for (int threads : {512, 1024}) {
        if ((mode == 0 || mode == 1) && blocks % (n - 1) != 0) continue;
        auto launch = [&]() {
          for (int d = 0; d < n; ++d) {
            CK(cudaSetDevice(d));
            pattern<<<blocks, threads, 0, st[d]>>>(ps, buf[d], n, d, words, mode);
          }
        };
        launch();
        for (int d = 0; d < n; ++d) { CK(cudaSetDevice(d)); CK(cudaStreamSynchronize(st[d])); }
        const int reps = 10;
        auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r) launch();
        for (int d = 0; d < n; ++d) { CK(cudaSetDevice(d)); CK(cudaStreamSynchronize(st[d])); }
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
        // bytes crossing one GPU's links each way per launch
        double moved = mode == 4 ? (double)bytes / n * (n - 1) : (mode <= 1 ? (double)(words / (n - 1)) * (n - 1) * 16 : (double)bytes);
        printf("%-11s %6d %7d %9.1f\n", names[mode], blocks, threads, moved / s / 1e9);
        fflush(stdout);
      }
    }
  }
  return 0;
}
