// Does a system-scope fence by one warp wait for the stores other warps of its SM issue while it waits? One GPU,
// its own memory. Every block's warps but the last stream stores into a large buffer (`movers`); lane 0 of the
// last warp times `fences` fences, one after another with a pause between, and records each one's SM cycles. Run
// with movers storing and with movers idle (argv[1] = 0): if a fence only waits for the stores issued before it,
// its time under load stays near the idle time plus a store's flight; if it drains the SM's stores, it grows with
// the stores the movers keep issuing. fence.sc.sys (__threadfence_system) and fence.acq_rel.sys, in turn.
// Build and run on a GPU host: nvcc -arch=sm_90 -o fence_probe fence_probe.cu && ./fence_probe
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>

__global__ void probe(float4* buf, unsigned long long perBlock, int rounds, int fences, int acqRel, bool load,
                      unsigned long long* out, unsigned int* done) {
  const unsigned movers = blockDim.x - 32;
  float4* mine = buf + (unsigned long long)blockIdx.x * perBlock;
  if (threadIdx.x < movers) {
    if (!load) return;
    const float4 v = make_float4(1.f, 2.f, 3.f, (float)blockIdx.x);
    for (int r = 0; r < rounds; ++r)
      for (unsigned long long i = threadIdx.x; i < perBlock; i += movers) mine[i] = v;
    return;
  }
  if (threadIdx.x != movers) return;
  for (int f = 0; f < fences; ++f) {
    const unsigned long long t0 = clock64();
    if (acqRel) {
      asm volatile("fence.acq_rel.sys;" ::: "memory");
    } else {
      asm volatile("fence.sc.sys;" ::: "memory");
    }
    const unsigned long long t1 = clock64();
    out[(unsigned long long)blockIdx.x * fences + f] = t1 - t0;
    __nanosleep(2000);
  }
  atomicAdd(done, 1u);
}

int main(int argc, char** argv) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  int clockKhz = 0;
  cudaDeviceGetAttribute(&clockKhz, cudaDevAttrClockRate, 0);
  const unsigned long long perBlock = (64ull << 20) / 16;  // 64 MiB per block
  const int fences = 64, rounds = 4;
  float4* buf;
  if (cudaMalloc(&buf, perBlock * 16 * sms) != cudaSuccess) { printf("cudaMalloc failed\n"); return 1; }
  unsigned long long* out;
  unsigned int* done;
  cudaMalloc(&out, sizeof(unsigned long long) * sms * fences);
  cudaMalloc(&done, sizeof(unsigned int));
  printf("# %d SMs, %d MHz (nominal); per fence: median / p90 / max SM cycles over %d blocks x %d fences\n", sms,
         clockKhz / 1000, sms, fences);
  for (int acqRel = 0; acqRel < 2; ++acqRel) {
    for (int load = 0; load < 2; ++load) {
      cudaMemset(done, 0, sizeof(unsigned int));
      cudaEvent_t a, b;
      cudaEventCreate(&a);
      cudaEventCreate(&b);
      cudaEventRecord(a);
      probe<<<sms, 1024>>>(buf, perBlock, rounds, fences, acqRel, load, out, done);
      cudaEventRecord(b);
      if (cudaDeviceSynchronize() != cudaSuccess) { printf("kernel failed\n"); return 1; }
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      std::vector<unsigned long long> h(sms * fences);
      cudaMemcpy(h.data(), out, h.size() * 8, cudaMemcpyDeviceToHost);
      std::sort(h.begin(), h.end());
      const double bytes = load ? (double)perBlock * 16 * sms * rounds : 0;
      printf("%-13s movers %-5s kernel %8.1f us (%6.0f GB/s stored)  fence median %7llu  p90 %7llu  max %8llu cycles\n",
             acqRel ? "fence.acq_rel" : "fence.sc", load ? "busy" : "idle", ms * 1e3, bytes / (ms * 1e-3) / 1e9,
             h[h.size() / 2], h[h.size() * 9 / 10], h.back());
    }
  }
  printf("PASS fence_probe\n");
  return 0;
}
