//! The Redis-style sorted set of §8.3.

mod ranked;

use crate::invariant::{ensure, InvariantError};
use nr_core::Dispatch;
use ranked::{Entry, RankedSkipList};
use std::collections::HashMap;
use std::fmt;

/// A read-only sorted-set command (`ReadOperation` of [`SortedSet`]).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{SortedSet, SortedSetRead, SortedSetResponse};
///
/// let zset = SortedSet::with_items(10); // member m has score m
/// assert_eq!(zset.dispatch(SortedSetRead::ZRank(3)), SortedSetResponse::Rank(Some(3)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortedSetRead {
    /// `ZRANK member`: the member's 0-based rank in (score, member) order.
    ZRank(u64),
    /// `ZSCORE member`: the member's score.
    ZScore(u64),
    /// `ZCARD`: the number of members.
    ZCard,
}

/// A mutating sorted-set command (`WriteOperation` of [`SortedSet`]).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{SortedSet, SortedSetResponse, SortedSetWrite};
///
/// let mut zset = SortedSet::new();
/// let op = SortedSetWrite::ZIncrBy { member: 7, delta: 5 };
/// assert_eq!(zset.dispatch_mut(op), SortedSetResponse::IncrBy(Ok(5)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortedSetWrite {
    /// `ZINCRBY key delta member`: adds `delta` to the member's score; an absent member is
    /// added with score `delta` (as if it had score 0).
    ZIncrBy {
        /// The member.
        member: u64,
        /// The increment (may be negative).
        delta: i64,
    },
    /// `ZADD key score member`: sets the member's score, adding the member if absent.
    ZAdd {
        /// The member.
        member: u64,
        /// Its new score.
        score: i64,
    },
    /// `ZREM key member`: removes the member.
    ZRem(u64),
}

/// `ZINCRBY` would take a score past `i64::MIN..=i64::MAX`.
///
/// Cause: the member's score plus the increment overflows `i64`. The set is left unchanged
/// (Redis likewise rejects an increment whose result is not a number). Remedy: use smaller
/// increments, or keep scores in a range that leaves headroom.
///
/// # Examples
///
/// ```
/// use seqds::{ScoreOverflow, SortedSet};
///
/// let mut zset = SortedSet::new();
/// zset.zadd(1, i64::MAX);
/// assert_eq!(zset.zincrby(1, 1), Err(ScoreOverflow));
/// assert_eq!(zset.zscore(1), Some(i64::MAX));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScoreOverflow;

impl fmt::Display for ScoreOverflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("increment would overflow the score (an i64)")
    }
}

impl std::error::Error for ScoreOverflow {}

/// The result of a [`SortedSetRead`] or [`SortedSetWrite`]: one variant per command.
///
/// # Examples
///
/// ```
/// use seqds::SortedSetResponse;
///
/// assert_ne!(SortedSetResponse::Added(true), SortedSetResponse::Removed(true));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortedSetResponse {
    /// [`SortedSetRead::ZRank`]: the 0-based rank, `None` if the member is absent.
    Rank(Option<usize>),
    /// [`SortedSetRead::ZScore`]: the score, `None` if the member is absent.
    Score(Option<i64>),
    /// [`SortedSetRead::ZCard`]: the number of members.
    Card(usize),
    /// [`SortedSetWrite::ZIncrBy`]: the new score, or the overflow that left the set unchanged.
    IncrBy(Result<i64, ScoreOverflow>),
    /// [`SortedSetWrite::ZAdd`]: whether the member was new (Redis's reply 1 or 0).
    Added(bool),
    /// [`SortedSetWrite::ZRem`]: whether the member was present.
    Removed(bool),
}

/// A Redis sorted set of `u64` members with `i64` scores — the structure of Calciu et al.,
/// ASPLOS'17, §8.3 (Figure 11): a hash table from member to score, for O(1) lookups, and a
/// skip list of `(score, member)` with a span count on every link (Redis's `zskiplist`), so
/// `ZRANK` is an O(log n) expected search that sums spans. Equal scores are ordered by member,
/// as Redis orders them lexicographically.
///
/// The two are updated together by every write, so no operation sees one without the other.
/// `ZINCRBY` finds the member in the hash table, then deletes and reinserts it in the skip list
/// with the new score, as the paper describes. Scores are integers rather than Redis's doubles,
/// so they have no NaN and a total order; overflow is an error ([`ScoreOverflow`]).
///
/// The skip list draws tower heights from a seeded generator stored in the set, so replicas
/// that apply the same writes stay identical ([`Dispatch`](nr_core::Dispatch#determinism)).
///
/// # Examples
///
/// ```
/// use nr_core::Dispatch;
/// use seqds::{SortedSet, SortedSetRead, SortedSetResponse, SortedSetWrite};
///
/// let mut zset = SortedSet::with_capacity(16);
/// zset.dispatch_mut(SortedSetWrite::ZAdd { member: 1, score: 10 });
/// zset.dispatch_mut(SortedSetWrite::ZAdd { member: 2, score: 20 });
/// assert_eq!(zset.dispatch(SortedSetRead::ZRank(2)), SortedSetResponse::Rank(Some(1)));
///
/// // Member 2 drops below member 1.
/// let op = SortedSetWrite::ZIncrBy { member: 2, delta: -15 };
/// assert_eq!(zset.dispatch_mut(op), SortedSetResponse::IncrBy(Ok(5)));
/// assert_eq!(zset.dispatch(SortedSetRead::ZRank(2)), SortedSetResponse::Rank(Some(0)));
/// assert_eq!(zset.member_at(1), Some((1, 10)));
/// ```
#[derive(Clone)]
pub struct SortedSet {
    scores: HashMap<u64, i64>,
    list: RankedSkipList,
}

impl SortedSet {
    /// An empty set.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::SortedSet::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty set with room for `capacity` members before its tables grow.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::SortedSet::with_capacity(100).len(), 0);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            scores: HashMap::with_capacity(capacity),
            list: RankedSkipList::with_capacity(capacity),
        }
    }

    /// A set of members `0..n`, member `m` with score `m`: the benchmarks' prefill (the paper
    /// uses 10,000 members).
    ///
    /// # Examples
    ///
    /// ```
    /// let zset = seqds::SortedSet::with_items(10_000);
    /// assert_eq!(zset.zrank(9_999), Some(9_999));
    /// ```
    pub fn with_items(n: usize) -> Self {
        let mut zset = Self::with_capacity(n);
        zset.extend((0..n as u64).map(|m| (m, m as i64)));
        zset
    }

    /// The number of members (`ZCARD`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(seqds::SortedSet::with_items(3).len(), 3);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether the set is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(seqds::SortedSet::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// `ZRANK`: the 0-based rank of `member` in (score, member) order.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut zset = seqds::SortedSet::new();
    /// zset.zadd(5, 0);
    /// zset.zadd(3, 0); // same score: ordered by member
    /// assert_eq!(zset.zrank(3), Some(0));
    /// assert_eq!(zset.zrank(5), Some(1));
    /// assert_eq!(zset.zrank(4), None);
    /// ```
    #[inline]
    pub fn zrank(&self, member: u64) -> Option<usize> {
        let &score = self.scores.get(&member)?;
        self.list.rank(Entry { score, member })
    }

    /// `ZSCORE`: the score of `member`.
    ///
    /// # Examples
    ///
    /// ```
    /// let zset = seqds::SortedSet::with_items(3);
    /// assert_eq!(zset.zscore(2), Some(2));
    /// ```
    #[inline]
    pub fn zscore(&self, member: u64) -> Option<i64> {
        self.scores.get(&member).copied()
    }

    /// `ZINCRBY`: adds `delta` to the score of `member` (adding `member` with score `delta` if
    /// absent) and returns the new score.
    ///
    /// # Errors
    ///
    /// [`ScoreOverflow`] if the new score does not fit an `i64`; the set is unchanged.
    ///
    /// # Panics
    ///
    /// Past about 2^32 members (the skip list's arenas use `u32` indices).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut zset = seqds::SortedSet::new();
    /// assert_eq!(zset.zincrby(1, 4), Ok(4));
    /// assert_eq!(zset.zincrby(1, -6), Ok(-2));
    /// ```
    #[inline]
    pub fn zincrby(&mut self, member: u64, delta: i64) -> Result<i64, ScoreOverflow> {
        match self.scores.get_mut(&member) {
            Some(score) => {
                let new = score.checked_add(delta).ok_or(ScoreOverflow)?;
                if new != *score {
                    self.list.remove(Entry {
                        score: *score,
                        member,
                    });
                    self.list.insert(Entry { score: new, member });
                    *score = new;
                }
                Ok(new)
            }
            None => {
                self.scores.insert(member, delta);
                self.list.insert(Entry {
                    score: delta,
                    member,
                });
                Ok(delta)
            }
        }
    }

    /// `ZADD`: sets the score of `member`; returns whether it was added (not just updated).
    ///
    /// # Panics
    ///
    /// Past about 2^32 members (the skip list's arenas use `u32` indices).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut zset = seqds::SortedSet::new();
    /// assert!(zset.zadd(1, 10));
    /// assert!(!zset.zadd(1, 20));
    /// assert_eq!(zset.zscore(1), Some(20));
    /// ```
    #[inline]
    pub fn zadd(&mut self, member: u64, score: i64) -> bool {
        match self.scores.insert(member, score) {
            Some(old) => {
                if old != score {
                    self.list.remove(Entry { score: old, member });
                    self.list.insert(Entry { score, member });
                }
                false
            }
            None => {
                self.list.insert(Entry { score, member });
                true
            }
        }
    }

    /// `ZREM`: removes `member`; returns whether it was present.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut zset = seqds::SortedSet::with_items(2);
    /// assert!(zset.zrem(1));
    /// assert!(!zset.zrem(1));
    /// ```
    #[inline]
    pub fn zrem(&mut self, member: u64) -> bool {
        match self.scores.remove(&member) {
            Some(score) => {
                self.list.remove(Entry { score, member });
                true
            }
            None => false,
        }
    }

    /// The `(member, score)` of 0-based rank `rank` (`ZRANGE key rank rank WITHSCORES`),
    /// O(log n) expected.
    ///
    /// # Examples
    ///
    /// ```
    /// let zset: seqds::SortedSet = [(7, 1), (8, -1)].into_iter().collect();
    /// assert_eq!(zset.member_at(0), Some((8, -1)));
    /// assert_eq!(zset.member_at(2), None);
    /// ```
    pub fn member_at(&self, rank: usize) -> Option<(u64, i64)> {
        self.list.by_rank(rank).map(|e| (e.member, e.score))
    }

    /// The `(member, score)` pairs in rank order (O(n); for tests and inspection).
    ///
    /// # Examples
    ///
    /// ```
    /// let zset: seqds::SortedSet = [(7, 1), (8, -1)].into_iter().collect();
    /// assert_eq!(zset.iter().collect::<Vec<_>>(), [(8, -1), (7, 1)]);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (u64, i64)> + '_ {
        self.list.iter().map(|e| (e.member, e.score))
    }

    /// Checks the skip list (order, levels, every span, length, free lists) and that it holds
    /// exactly the hash table's `(score, member)` pairs. O(n · 24); for tests.
    ///
    /// # Errors
    ///
    /// [`InvariantError`] naming the first broken invariant (a bug in this crate).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut zset = seqds::SortedSet::with_items(50);
    /// zset.zincrby(3, 100).unwrap();
    /// assert!(zset.check_invariants().is_ok());
    /// ```
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        const NAME: &str = "SortedSet";
        self.list.check(NAME)?;
        ensure!(
            NAME,
            self.list.len() == self.scores.len(),
            "skip list has {} entries, hash table {}",
            self.list.len(),
            self.scores.len()
        );
        for e in self.list.iter() {
            ensure!(
                NAME,
                self.scores.get(&e.member) == Some(&e.score),
                "skip list has {e:?}, hash table has score {:?}",
                self.scores.get(&e.member)
            );
        }
        Ok(())
    }
}

impl Default for SortedSet {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SortedSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SortedSet")
            .field("len", &self.len())
            .field("levels", &self.list.levels())
            .finish_non_exhaustive()
    }
}

/// `(member, score)` pairs, applied as `ZADD`s.
impl Extend<(u64, i64)> for SortedSet {
    fn extend<I: IntoIterator<Item = (u64, i64)>>(&mut self, pairs: I) {
        for (member, score) in pairs {
            self.zadd(member, score);
        }
    }
}

/// `(member, score)` pairs, applied as `ZADD`s.
impl FromIterator<(u64, i64)> for SortedSet {
    fn from_iter<I: IntoIterator<Item = (u64, i64)>>(pairs: I) -> Self {
        let mut zset = Self::new();
        zset.extend(pairs);
        zset
    }
}

impl Dispatch for SortedSet {
    type ReadOperation<'a> = SortedSetRead;
    type WriteOperation = SortedSetWrite;
    type Response = SortedSetResponse;

    #[inline]
    fn dispatch(&self, op: SortedSetRead) -> SortedSetResponse {
        match op {
            SortedSetRead::ZRank(m) => SortedSetResponse::Rank(self.zrank(m)),
            SortedSetRead::ZScore(m) => SortedSetResponse::Score(self.zscore(m)),
            SortedSetRead::ZCard => SortedSetResponse::Card(self.len()),
        }
    }

    #[inline]
    fn dispatch_mut(&mut self, op: SortedSetWrite) -> SortedSetResponse {
        match op {
            SortedSetWrite::ZIncrBy { member, delta } => {
                SortedSetResponse::IncrBy(self.zincrby(member, delta))
            }
            SortedSetWrite::ZAdd { member, score } => {
                SortedSetResponse::Added(self.zadd(member, score))
            }
            SortedSetWrite::ZRem(m) => SortedSetResponse::Removed(self.zrem(m)),
        }
    }
}
