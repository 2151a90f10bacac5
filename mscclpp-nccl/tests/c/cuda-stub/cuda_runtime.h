/* The one CUDA runtime type nccl.h needs, so the ABI check compiles on machines without the CUDA toolkit. */
#ifndef MSCCLPP_NCCL_CUDA_RUNTIME_STUB_H
#define MSCCLPP_NCCL_CUDA_RUNTIME_STUB_H
typedef struct CUstream_st* cudaStream_t;
#endif
