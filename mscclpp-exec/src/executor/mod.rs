//! The plan executor: an MSCCL++ execution plan plus the caller's buffers become a context (connections,
//! channels, registered memory, scratch, semaphores, set up collectively once and cached) and device records
//! that the interpreter kernel runs on the caller's stream.

pub mod records;
