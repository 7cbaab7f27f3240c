//! Dev-only test support.
