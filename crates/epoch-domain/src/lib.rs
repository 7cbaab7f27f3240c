#![doc = include_str!("../README.md")]

mod domain;
mod sync;

pub use domain::{Domain, Guard};
