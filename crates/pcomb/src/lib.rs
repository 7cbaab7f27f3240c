#![doc = include_str!("../README.md")]

mod config;
mod engine;
mod error;
mod fingerprint;
mod layout;
mod memory;
mod object;
pub mod objects;
mod pbcomb;
mod pbcomb1;
mod pwfcomb;
mod pwfcomb1;
mod recovered;
mod slots;
pub mod structures;
mod sync;
#[cfg(all(test, not(loom)))]
mod test_media;
mod unlock;
mod volatile;
mod wait;
mod words;

pub use config::MAX_THREADS;
pub use error::{CombBuildError, CombRegisterError};
pub use fingerprint::type_fingerprint;
pub use nr_core::{Dispatch, Poisoned};
pub use pbcomb::{PBComb, PBCombHandle};
pub use pbcomb1::{PBComb1, PBComb1Handle};
pub use pmem::{self, NoPersist, Persist, Pod};
pub use pwfcomb::{PWFComb, PWFCombHandle};
pub use pwfcomb1::{PWFComb1, PWFComb1Handle};
pub use recovered::Recovered;
pub use volatile::{VolatilePBComb, VolatilePBCombHandle};
