#![doc = include_str!("../README.md")]

mod client;
mod dispatch;
mod driver;
mod error;
mod frame;
mod host;
mod kv;
mod net;
mod session;
mod storage;
mod sync;
mod wire;

pub use client::Client;
pub use dispatch::RaftDispatch;
pub use error::{FrameError, RaftError};
pub use frame::{encode_frame, read_frame, write_frame, FRAME_MAGIC, MAX_FRAME};
pub use host::{Host, HostConfig, HostStats};
pub use kv::Kv;
pub use net::NetFaults;
pub use wire::Consistency;
