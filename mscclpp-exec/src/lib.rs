//! The mscclpp runtime.
