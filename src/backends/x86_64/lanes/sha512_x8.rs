//! (kernel to come)
