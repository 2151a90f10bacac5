//! The CPU side of mscclpp.
