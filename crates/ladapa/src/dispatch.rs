//! `Dispatch` operations on a key's value: [`DispatchValue`], and the `put_value`,
//! `read_with` and `update` operations of [`Store`] and [`NodeHandle`].
//!
//! # Why a codec, not `Dispatch` alone
//!
//! A ladapa value is a block of exactly [`Store::value_size`] bytes in a node's pool, copied
//! byte for byte by the replicators into other nodes' pools and written by [`Store::put`] from
//! any bytes at all. A `Dispatch` type is an in-memory structure (it may own heap memory,
//! which a byte copy to another node would share, not copy), so the store cannot keep one in
//! a block as it is. [`DispatchValue`] adds the two conversions the store needs: `decode`
//! (which checks the bytes, so that bytes written by `put`, or by another type, are an error
//! and never undefined behaviour) and `encode` (which may refuse a state that does not fit).
//! A `Pod` bound instead would forbid every type with a pointer and every validation.
//!
//! # Guarantees
//!
//! - `read_with` is a read: it decodes the block a [`Store::get`] of the same key would copy
//!   (the node's replica only at the key's current version), so it is never stale, and it is
//!   linearized where `get` is.
//! - `update` is a write: it runs `decode`, [`Dispatch::dispatch_mut`] and `encode` under the
//!   key's first-level set write lock, on the key's current value, and publishes the result
//!   as a new block with a new version, in the updating node's pool, exactly as a `put`
//!   (linearized under the same lock, so concurrent updates of a key never lose one another).
//!   The operation runs while the lock is held: it blocks the other writers of the keys of the
//!   set (up to [`WAYS`](crate::WAYS) hot keys), so keep it short, and it must not use the
//!   store (an operation on a key of the same set would wait for that lock forever). A panic
//!   in it leaves the key as it was and the store usable.

use nr_core::Dispatch;

use crate::error::{CodecError, StoreError};
use crate::store::{NodeHandle, Store};

/// A [`Dispatch`] type that a store's value bytes encode, so that [`Store::update`] and
/// [`Store::read_with`] can run its operations on the value of a key (see the module docs
/// for why a codec is needed).
///
/// # Examples
///
/// A counter in the first 8 bytes of each value, whose other bytes must be zero:
///
/// ```
/// use ladapa::{CodecError, DispatchValue, Store};
/// use nr_core::Dispatch;
///
/// struct Counter(u64);
///
/// impl Dispatch for Counter {
///     type ReadOperation<'a> = ();
///     type WriteOperation = u64; // add, returning the previous value
///     type Response = u64;
///     fn dispatch(&self, (): ()) -> u64 {
///         self.0
///     }
///     fn dispatch_mut(&mut self, add: u64) -> u64 {
///         let previous = self.0;
///         self.0 = previous.wrapping_add(add);
///         previous
///     }
/// }
///
/// impl DispatchValue for Counter {
///     fn decode(bytes: &[u8]) -> Result<Self, CodecError> {
///         let (head, rest) = bytes.split_at(8);
///         if rest.iter().any(|&b| b != 0) {
///             return Err(CodecError::Invalid { reason: "padding is not zero" });
///         }
///         Ok(Counter(u64::from_le_bytes(head.try_into().expect("8 bytes"))))
///     }
///     fn encode(&self, bytes: &mut [u8]) -> Result<(), CodecError> {
///         bytes[..8].copy_from_slice(&self.0.to_le_bytes());
///         Ok(())
///     }
/// }
///
/// let store = Store::builder().value_size(16).build()?;
/// store.put_value(1, &Counter(40))?;
/// assert_eq!(store.update::<Counter>(1, 2)?, Some(40));
/// assert_eq!(store.read_with::<Counter>(1, ())?, Some(42));
/// assert_eq!(store.update::<Counter>(2, 1)?, None, "absent: nothing written");
/// store.put(3, &[1; 16])?;
/// assert!(store.read_with::<Counter>(3, ()).is_err(), "not a Counter's bytes");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait DispatchValue: Dispatch + Sized {
    /// The state that `bytes` (exactly [`Store::value_size`] bytes) encode.
    ///
    /// # Errors
    ///
    /// [`CodecError::Invalid`] when the bytes are not an encoding of this type.
    fn decode(bytes: &[u8]) -> Result<Self, CodecError>;

    /// Writes the state into `bytes` (exactly [`Store::value_size`] bytes, zeroed before the
    /// call, so an encoding that leaves bytes alone leaves them zero).
    ///
    /// # Errors
    ///
    /// [`CodecError::TooLarge`] when the state does not fit (the key keeps its value).
    fn encode(&self, bytes: &mut [u8]) -> Result<(), CodecError>;
}

/// Wraps `D`'s codec error for `key`.
fn codec<D>(key: u64) -> impl FnOnce(CodecError) -> StoreError {
    move |source| StoreError::Codec {
        key,
        type_name: std::any::type_name::<D>(),
        source,
    }
}

/// Zeroes `bytes`, then encodes `value` into them.
fn encode_into<D: DispatchValue>(key: u64, value: &D, bytes: &mut [u8]) -> Result<(), StoreError> {
    bytes.fill(0);
    value.encode(bytes).map_err(codec::<D>(key))
}

impl NodeHandle<'_> {
    /// [`Store::put_value`] as this node: the value goes into this node's pool.
    ///
    /// # Errors
    ///
    /// As [`Store::put_value`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use ladapa::{CodecError, DispatchValue, Store};
    /// # struct Flag(bool);
    /// # impl nr_core::Dispatch for Flag {
    /// #     type ReadOperation<'a> = ();
    /// #     type WriteOperation = bool;
    /// #     type Response = bool;
    /// #     fn dispatch(&self, (): ()) -> bool { self.0 }
    /// #     fn dispatch_mut(&mut self, v: bool) -> bool { std::mem::replace(&mut self.0, v) }
    /// # }
    /// # impl DispatchValue for Flag {
    /// #     fn decode(b: &[u8]) -> Result<Self, CodecError> { Ok(Flag(b[0] != 0)) }
    /// #     fn encode(&self, b: &mut [u8]) -> Result<(), CodecError> { b[0] = self.0 as u8; Ok(()) }
    /// # }
    /// let store = Store::builder().value_size(8).build()?;
    /// store.node(0)?.put_value(1, &Flag(true))?;
    /// assert_eq!(store.get_guard(1).as_deref(), Some(&[1, 0, 0, 0, 0, 0, 0, 0][..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_value<D: DispatchValue>(&self, key: u64, value: &D) -> Result<(), StoreError> {
        self.store.check_poison()?;
        let mut block = self.fresh_block()?;
        encode_into(key, value, block.bytes_mut())?;
        self.write_version(key, block, |_, _| Ok(Some(())))?;
        Ok(())
    }

    /// [`Store::read_with`] as this node (its replica when current).
    ///
    /// # Errors
    ///
    /// As [`Store::read_with`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use ladapa::{CodecError, DispatchValue, Store};
    /// # struct Flag(bool);
    /// # impl nr_core::Dispatch for Flag {
    /// #     type ReadOperation<'a> = ();
    /// #     type WriteOperation = bool;
    /// #     type Response = bool;
    /// #     fn dispatch(&self, (): ()) -> bool { self.0 }
    /// #     fn dispatch_mut(&mut self, v: bool) -> bool { std::mem::replace(&mut self.0, v) }
    /// # }
    /// # impl DispatchValue for Flag {
    /// #     fn decode(b: &[u8]) -> Result<Self, CodecError> { Ok(Flag(b[0] != 0)) }
    /// #     fn encode(&self, b: &mut [u8]) -> Result<(), CodecError> { b[0] = self.0 as u8; Ok(()) }
    /// # }
    /// let store = Store::builder().value_size(8).build()?;
    /// store.put_value(1, &Flag(true))?;
    /// assert_eq!(store.node(0)?.read_with::<Flag>(1, ())?, Some(true));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_with<D: DispatchValue>(
        &self,
        key: u64,
        op: D::ReadOperation<'_>,
    ) -> Result<Option<D::Response>, StoreError> {
        let Some(bytes) = self.get_guard(key) else {
            return Ok(None);
        };
        let value = D::decode(&bytes).map_err(codec::<D>(key))?;
        drop(bytes);
        Ok(Some(value.dispatch(op)))
    }

    /// [`Store::update`] as this node: the new value goes into this node's pool.
    ///
    /// # Errors
    ///
    /// As [`Store::update`].
    ///
    /// # Panics
    ///
    /// As [`Store::update`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use ladapa::{CodecError, DispatchValue, Store};
    /// # struct Flag(bool);
    /// # impl nr_core::Dispatch for Flag {
    /// #     type ReadOperation<'a> = ();
    /// #     type WriteOperation = bool;
    /// #     type Response = bool;
    /// #     fn dispatch(&self, (): ()) -> bool { self.0 }
    /// #     fn dispatch_mut(&mut self, v: bool) -> bool { std::mem::replace(&mut self.0, v) }
    /// # }
    /// # impl DispatchValue for Flag {
    /// #     fn decode(b: &[u8]) -> Result<Self, CodecError> { Ok(Flag(b[0] != 0)) }
    /// #     fn encode(&self, b: &mut [u8]) -> Result<(), CodecError> { b[0] = self.0 as u8; Ok(()) }
    /// # }
    /// let store = Store::builder().value_size(8).build()?;
    /// store.put_value(1, &Flag(false))?;
    /// assert_eq!(store.node(0)?.update::<Flag>(1, true)?, Some(false));
    /// assert_eq!(store.read_with::<Flag>(1, ())?, Some(true));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn update<D: DispatchValue>(
        &self,
        key: u64,
        op: D::WriteOperation,
    ) -> Result<Option<D::Response>, StoreError> {
        self.store.check_poison()?;
        // Allocated before pinning (see `put`); freed again if the key is absent.
        let block = self.fresh_block()?;
        self.write_version(key, block, |current, bytes| {
            let Some(current) = current else {
                return Ok(None);
            };
            let mut value = D::decode(current).map_err(codec::<D>(key))?;
            let response = value.dispatch_mut(op);
            encode_into(key, &value, bytes)?;
            Ok(Some(response))
        })
    }
}

impl Store {
    /// Stores `value`, encoded by [`DispatchValue::encode`], under `key` (insert or
    /// overwrite), as [`Store::put`] does with bytes.
    ///
    /// # Errors
    ///
    /// [`StoreError::Codec`] if the value does not encode (the key keeps its value), and
    /// those of [`Store::put`] but [`StoreError::WrongValueSize`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use ladapa::{CodecError, DispatchValue, Store};
    /// # struct Flag(bool);
    /// # impl nr_core::Dispatch for Flag {
    /// #     type ReadOperation<'a> = ();
    /// #     type WriteOperation = bool;
    /// #     type Response = bool;
    /// #     fn dispatch(&self, (): ()) -> bool { self.0 }
    /// #     fn dispatch_mut(&mut self, v: bool) -> bool { std::mem::replace(&mut self.0, v) }
    /// # }
    /// # impl DispatchValue for Flag {
    /// #     fn decode(b: &[u8]) -> Result<Self, CodecError> { Ok(Flag(b[0] != 0)) }
    /// #     fn encode(&self, b: &mut [u8]) -> Result<(), CodecError> { b[0] = self.0 as u8; Ok(()) }
    /// # }
    /// let store = Store::builder().value_size(8).build()?;
    /// store.put_value(1, &Flag(true))?;
    /// assert!(store.contains(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_value<D: DispatchValue>(&self, key: u64, value: &D) -> Result<(), StoreError> {
        self.here().put_value(key, value)
    }

    /// Runs the read operation `op` on the value of `key`, decoded as `D`; `Ok(None)` if the
    /// key is absent. Never stale, like [`Store::get`]: it reads the same block.
    ///
    /// # Errors
    ///
    /// [`StoreError::Codec`] if the value's bytes are not a `D`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use ladapa::{CodecError, DispatchValue, Store};
    /// # struct Flag(bool);
    /// # impl nr_core::Dispatch for Flag {
    /// #     type ReadOperation<'a> = ();
    /// #     type WriteOperation = bool;
    /// #     type Response = bool;
    /// #     fn dispatch(&self, (): ()) -> bool { self.0 }
    /// #     fn dispatch_mut(&mut self, v: bool) -> bool { std::mem::replace(&mut self.0, v) }
    /// # }
    /// # impl DispatchValue for Flag {
    /// #     fn decode(b: &[u8]) -> Result<Self, CodecError> { Ok(Flag(b[0] != 0)) }
    /// #     fn encode(&self, b: &mut [u8]) -> Result<(), CodecError> { b[0] = self.0 as u8; Ok(()) }
    /// # }
    /// let store = Store::builder().value_size(8).build()?;
    /// assert_eq!(store.read_with::<Flag>(1, ())?, None);
    /// store.put_value(1, &Flag(true))?;
    /// assert_eq!(store.read_with::<Flag>(1, ())?, Some(true));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_with<D: DispatchValue>(
        &self,
        key: u64,
        op: D::ReadOperation<'_>,
    ) -> Result<Option<D::Response>, StoreError> {
        self.here().read_with::<D>(key, op)
    }

    /// Runs the write operation `op` on the value of `key`: decodes the current value as `D`,
    /// applies [`Dispatch::dispatch_mut`], and stores the encoded result as the key's next
    /// version, all under the key's lock (so concurrent updates never lose one another; see
    /// the module docs). `Ok(None)`, with nothing written, if the key is absent: create it
    /// with [`Store::put_value`]. `decode`, the operation and `encode` run under that lock:
    /// they must not use the store (a key of the same set would wait for the lock forever).
    ///
    /// # Errors
    ///
    /// [`StoreError::Codec`] if the value's bytes are not a `D` or the new state does not
    /// encode (either way the key keeps its value); [`StoreError::OutOfBlocks`],
    /// [`StoreError::BackgroundPanicked`] as for [`Store::put`].
    ///
    /// # Panics
    ///
    /// When `D`'s `decode`, `dispatch_mut` or `encode` panics: the panic reaches the caller,
    /// the key keeps its value, and the store stays usable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use ladapa::{CodecError, DispatchValue, Store};
    /// # struct Flag(bool);
    /// # impl nr_core::Dispatch for Flag {
    /// #     type ReadOperation<'a> = ();
    /// #     type WriteOperation = bool;
    /// #     type Response = bool;
    /// #     fn dispatch(&self, (): ()) -> bool { self.0 }
    /// #     fn dispatch_mut(&mut self, v: bool) -> bool { std::mem::replace(&mut self.0, v) }
    /// # }
    /// # impl DispatchValue for Flag {
    /// #     fn decode(b: &[u8]) -> Result<Self, CodecError> { Ok(Flag(b[0] != 0)) }
    /// #     fn encode(&self, b: &mut [u8]) -> Result<(), CodecError> { b[0] = self.0 as u8; Ok(()) }
    /// # }
    /// let store = Store::builder().value_size(8).build()?;
    /// assert_eq!(store.update::<Flag>(1, true)?, None);
    /// store.put_value(1, &Flag(false))?;
    /// assert_eq!(store.update::<Flag>(1, true)?, Some(false));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn update<D: DispatchValue>(
        &self,
        key: u64,
        op: D::WriteOperation,
    ) -> Result<Option<D::Response>, StoreError> {
        self.here().update::<D>(key, op)
    }
}
