//! The one implementation of each protocol. [`pb`] is PBcomb (Algorithms 1-2), [`pwf`] is
//! PWFcomb (Algorithms 3-4); [`PBComb`](crate::PBComb), [`PWFComb`](crate::PWFComb) and the
//! linked structures are thin users that plug in the batch they apply, what they write back
//! besides the record, and what they do once a pass is durable.

pub(crate) mod pb;
pub(crate) mod pwf;

#[cfg(test)]
mod tests;
