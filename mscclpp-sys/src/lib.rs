//! CUDA driver and NVRTC edge of mscclpp.
