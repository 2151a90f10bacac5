/* ABI check of libmscclpp_nccl.so against the real nccl.h (NCCL 2.28.9), on a machine without GPUs.
 *
 *   abi_check preload REAL_LIB   the real libnccl.so.2 is loaded RTLD_LOCAL first (as torch does)
 *   abi_check env REAL_LIB       the real libnccl.so.2 is reached through MSCCLPP_NCCL_LIB_PATH
 *   abi_check none               no real NCCL anywhere: our own answers, clean errors
 *
 * Prints one line per check and exits non-zero on the first failure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

/* From nccl_device.h, which needs the CUDA toolkit; the pointer types are opaque here. */
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void* reqs, void* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void* devComm);

static int failures = 0;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (cond) {                                            \
      printf("ok: ");                                      \
    } else {                                               \
      printf("FAILED: ");                                  \
      failures++;                                          \
    }                                                      \
    printf(__VA_ARGS__);                                   \
    printf("\n");                                          \
  } while (0)

#define FN(name) {#name, (void*)name}
static const struct {
  const char* name;
  void* addr;
} functions[] = {
    FN(ncclMemAlloc), FN(ncclMemFree), FN(ncclGetVersion), FN(ncclGetUniqueId), FN(ncclCommInitRankConfig),
    FN(ncclCommInitRank), FN(ncclCommInitAll), FN(ncclCommFinalize), FN(ncclCommDestroy), FN(ncclCommAbort),
    FN(ncclCommRevoke), FN(ncclCommSplit), FN(ncclCommShrink), FN(ncclCommInitRankScalable),
    FN(ncclGetErrorString), FN(ncclGetLastError), FN(ncclResetDebugInit), FN(ncclCommGetAsyncError),
    FN(ncclCommCount), FN(ncclCommCuDevice), FN(ncclCommUserRank), FN(ncclCommRegister), FN(ncclCommDeregister),
    FN(ncclCommWindowRegister), FN(ncclCommWindowDeregister), FN(ncclRedOpCreatePreMulSum), FN(ncclRedOpDestroy),
    FN(ncclReduce), FN(ncclBcast), FN(ncclBroadcast), FN(ncclAllReduce), FN(ncclReduceScatter), FN(ncclAllGather),
    FN(ncclAlltoAll), FN(ncclGather), FN(ncclScatter), FN(ncclSend), FN(ncclRecv), FN(ncclGroupStart),
    FN(ncclGroupEnd), FN(ncclGroupSimulateEnd), FN(ncclDevCommCreate), FN(ncclDevCommDestroy),
    FN(pncclMemAlloc), FN(pncclMemFree), FN(pncclGetVersion), FN(pncclGetUniqueId), FN(pncclCommInitRankConfig),
    FN(pncclCommInitRank), FN(pncclCommInitAll), FN(pncclCommFinalize), FN(pncclCommDestroy), FN(pncclCommAbort),
    FN(pncclCommRevoke), FN(pncclCommSplit), FN(pncclCommShrink), FN(pncclCommInitRankScalable),
    FN(pncclGetErrorString), FN(pncclGetLastError), FN(pncclResetDebugInit), FN(pncclCommGetAsyncError),
    FN(pncclCommCount), FN(pncclCommCuDevice), FN(pncclCommUserRank), FN(pncclCommRegister),
    FN(pncclCommDeregister), FN(pncclCommWindowRegister), FN(pncclCommWindowDeregister),
    FN(pncclRedOpCreatePreMulSum), FN(pncclRedOpDestroy), FN(pncclReduce), FN(pncclBcast), FN(pncclBroadcast),
    FN(pncclAllReduce), FN(pncclReduceScatter), FN(pncclAllGather), FN(pncclAlltoAll), FN(pncclGather),
    FN(pncclScatter), FN(pncclSend), FN(pncclRecv), FN(pncclGroupStart), FN(pncclGroupEnd),
    FN(pncclGroupSimulateEnd),
};

static void check_programs_are_registered(void) {
  size_t (*count)(void) = (size_t (*)(void))dlsym(RTLD_DEFAULT, "mscclpp_nccl_program_count");
  size_t n = count ? count() : 0;
  CHECK(n > 0, "the library's registry holds the default programs (%zu)", n);
}

static void check_every_function_is_ours(void) {
  size_t n = sizeof(functions) / sizeof(functions[0]);
  int ours = 0;
  for (size_t i = 0; i < n; i++) {
    Dl_info info;
    if (functions[i].addr && dladdr(functions[i].addr, &info) && info.dli_fname &&
        strstr(info.dli_fname, "libmscclpp_nccl")) {
      ours++;
    } else {
      printf("FAILED: %s does not resolve into libmscclpp_nccl.so\n", functions[i].name);
      failures++;
    }
  }
  CHECK(ours == (int)n, "%d of %zu declared functions resolve into libmscclpp_nccl.so", ours, n);
  check_programs_are_registered();
}

static int is_zero(const char* p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

static void check_bad_config(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&comm, 1, id, 0, &config);
  const char* last = ncclGetLastError(NULL);
  CHECK(r == ncclInvalidArgument && last && strstr(last, "NCCL_CONFIG_INITIALIZER"),
        "a config without NCCL_CONFIG_INITIALIZER's magic is refused (%d: %s)", r, last ? last : "(null)");
}

static int forward_mode(const char* real_path, int preload) {
  if (!preload) {
    /* Nothing loaded the real NCCL: our library must find it through MSCCLPP_NCCL_LIB_PATH. */
    ncclUniqueId first;
    memset(&first, 0, sizeof first);
    ncclResult_t r0 = ncclGetUniqueId(&first);
    CHECK(r0 == ncclSuccess && is_zero(first.internal + 40, NCCL_UNIQUE_ID_BYTES - 40) &&
              dlopen(real_path, RTLD_NOW | RTLD_NOLOAD) != NULL,
          "MSCCLPP_NCCL_LIB_PATH: the real NCCL was loaded by us and made the unique id (%d)", r0);
  }
  void* real = dlopen(real_path, RTLD_NOW | RTLD_LOCAL);
  CHECK(real != NULL, "the real NCCL loads from %s", real_path);
  if (!real) return 1;
  check_every_function_is_ours();

  int version = 0;
  ncclResult_t r = ncclGetVersion(&version);
  CHECK(r == ncclSuccess && version == NCCL_VERSION_CODE, "ncclGetVersion reports the real NCCL's %d (%d)",
        NCCL_VERSION_CODE, version);

  const char* (*real_error_string)(ncclResult_t) = (const char* (*)(ncclResult_t))dlsym(real, "pncclGetErrorString");
  int same = real_error_string != NULL;
  for (int code = 0; same && code <= ncclNumResults; code++)
    same = strcmp(ncclGetErrorString((ncclResult_t)code), real_error_string((ncclResult_t)code)) == 0;
  CHECK(same, "ncclGetErrorString gives the real NCCL's text for every result code (e.g. \"%s\")",
        ncclGetErrorString(ncclInvalidUsage));

  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  r = ncclGetUniqueId(&id);
  /* A real NCCL id: magic and socket address in the first 40 bytes, the rest zero (ours would be text). */
  CHECK(r == ncclSuccess && !is_zero(id.internal, 40) && is_zero(id.internal + 40, NCCL_UNIQUE_ID_BYTES - 40),
        "ncclGetUniqueId returns the real NCCL's id (%d)", r);
  ncclUniqueId id2;
  memset(&id2, 0, sizeof id2);
  r = ncclGetUniqueId(&id2);
  CHECK(r == ncclSuccess && memcmp(&id, &id2, sizeof id) != 0, "two unique ids differ");

  check_bad_config();

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = NULL;
  r = ncclCommInitRankConfig(&comm, 1, id, 0, &config);
  const char* last = ncclGetLastError(NULL);
  CHECK(r != ncclSuccess && r != ncclInProgress && last != NULL,
        "a nonblocking init without a GPU fails cleanly: %d (%s), last error \"%s\"", r, ncclGetErrorString(r),
        last ? last : "(null)");

  comm = NULL;
  r = ncclCommInitRank(&comm, 1, id2, 0);
  last = ncclGetLastError(NULL);
  CHECK(r != ncclSuccess && last != NULL, "a blocking init without a GPU fails cleanly: %d (%s), last error \"%s\"",
        r, ncclGetErrorString(r), last ? last : "(null)");

  r = ncclCommInitRank(NULL, 1, id2, 0);
  CHECK(r == ncclInvalidArgument, "init with a NULL comm pointer is an invalid argument (%d)", r);
  r = ncclCommGetAsyncError(NULL, NULL);
  CHECK(r == ncclInvalidArgument, "ncclCommGetAsyncError(NULL, NULL) is an invalid argument (%d)", r);
  return failures != 0;
}

static int none_mode(void) {
  check_every_function_is_ours();
  int version = 0;
  ncclResult_t r = ncclGetVersion(&version);
  CHECK(r == ncclSuccess && version == NCCL_VERSION_CODE, "without a real NCCL, ncclGetVersion reports the header's %d (%d)",
        NCCL_VERSION_CODE, version);
  CHECK(strcmp(ncclGetErrorString(ncclInvalidUsage), "invalid usage (run with NCCL_DEBUG=WARN for details)") == 0,
        "ncclGetErrorString has NCCL's texts (\"%s\")", ncclGetErrorString(ncclInvalidUsage));

  r = ncclSend(NULL, 1, ncclFloat32, 1, (ncclComm_t)0x1000, NULL);
  const char* last = ncclGetLastError(NULL);
  CHECK(r == ncclInvalidUsage && last && strstr(last, "MSCCLPP_NCCL_LIB_PATH"),
        "a call only NCCL can serve is an invalid usage that says why (%d: %s)", r, last ? last : "(null)");
  r = ncclCommRevoke((ncclComm_t)0x1000, 0);
  CHECK(r == ncclInvalidUsage, "ncclCommRevoke too (%d)", r);

  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  r = ncclGetUniqueId(&id);
  CHECK(r == ncclSuccess && !is_zero(id.internal, 8) && memchr(id.internal, '/', NCCL_UNIQUE_ID_BYTES) != NULL,
        "ncclGetUniqueId makes an id of our own bootstrap (%.60s)", id.internal);

  check_bad_config();

  ncclComm_t comm = NULL;
  r = ncclCommInitRank(&comm, 2, id, 5);
  CHECK(r == ncclInvalidArgument, "rank 5 of 2 is an invalid argument (%d: %s)", r, ncclGetLastError(NULL));
  r = ncclCommInitRank(&comm, 1, id, 0);
  last = ncclGetLastError(NULL);
  CHECK(r != ncclSuccess && comm == NULL && last && strlen(last) > 0,
        "init without a GPU fails cleanly: %d, last error \"%s\"", r, last ? last : "(null)");
  return failures != 0;
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "preload") == 0) return forward_mode(argv[2], 1);
  if (argc >= 3 && strcmp(argv[1], "env") == 0) return forward_mode(argv[2], 0);
  if (argc >= 2 && strcmp(argv[1], "none") == 0) return none_mode();
  fprintf(stderr, "usage: %s preload REAL_LIB | env REAL_LIB | none\n", argv[0]);
  return 2;
}
