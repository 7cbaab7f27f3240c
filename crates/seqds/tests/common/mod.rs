//! Shared drivers for the behaviour tests: random operation sequences checked against simple
//! sequential models.

#![allow(dead_code, unreachable_pub)] // reason: each test binary uses a subset of the helpers

pub mod map;
pub mod pq;
