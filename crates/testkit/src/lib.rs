#![doc = include_str!("../README.md")]

mod sync;

pub mod child;
pub mod lin;
pub mod models;

pub use lin::{check, Checker, History, Model, Recorder, ThreadRecorder, Violation};
