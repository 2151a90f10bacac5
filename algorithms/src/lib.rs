//! The default collective algorithms, written with the mscclpp eDSL.
