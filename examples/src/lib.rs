//! Shared code for the runnable examples.
