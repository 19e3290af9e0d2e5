//! The lock of each class's live-object list: a test-and-test-and-set spin lock when the
//! `thread-safe` feature is on (the seed's `HOT_THREAD_SAFE=ON`), nothing at all when it is off.
//!
//! Without the feature, [`ClassLock`] holds its data in an `UnsafeCell` with no guard, and is
//! `!Sync` (through a raw-pointer marker), so the type system refuses to share a class (and so
//! its objects) across threads: the cost of the lock is gone and so is the possibility of a race.
//!
//! Callers never take the lock twice (the runtime drops objects only after releasing it), which
//! the unguarded variant relies on to never hand out two `&mut` at once.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};

#[cfg(feature = "thread-safe")]
use std::sync::atomic::{AtomicBool, Ordering};

/// A lock around `T`: spinning with the `thread-safe` feature, absent without it.
pub struct ClassLock<T> {
    #[cfg(feature = "thread-safe")]
    locked: AtomicBool,
    #[cfg(not(feature = "thread-safe"))]
    _not_sync: std::marker::PhantomData<*const ()>,
    data: UnsafeCell<T>,
}

// SAFETY: with the feature on, `data` is only reached through a guard, and the guard exists only
// while `locked` is held by one thread; `T: Send` is what moving the data between threads needs.
#[cfg(feature = "thread-safe")]
unsafe impl<T: Send> Sync for ClassLock<T> {}
// SAFETY: as above: owning the lock owns the data.
#[cfg(feature = "thread-safe")]
unsafe impl<T: Send> Send for ClassLock<T> {}

/// Exclusive access to the data of a [`ClassLock`]; released on drop.
pub struct ClassGuard<'a, T> {
    lock: &'a ClassLock<T>,
}

impl<T> ClassLock<T> {
    /// A new, unlocked lock.
    pub fn new(data: T) -> ClassLock<T> {
        ClassLock {
            #[cfg(feature = "thread-safe")]
            locked: AtomicBool::new(false),
            #[cfg(not(feature = "thread-safe"))]
            _not_sync: std::marker::PhantomData,
            data: UnsafeCell::new(data),
        }
    }

    /// Take the lock. One atomic swap when uncontended (the cost the seed measured); under
    /// contention, spin on a plain load so waiting threads do not bounce the cache line.
    #[inline(always)]
    pub fn lock(&self) -> ClassGuard<'_, T> {
        #[cfg(feature = "thread-safe")]
        while self.locked.swap(true, Ordering::Acquire) {
            while self.locked.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        }
        ClassGuard { lock: self }
    }
}

impl<T> Deref for ClassGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while this thread holds the lock (or, unguarded, on the
        // one thread that can reach a `!Sync` lock, which never locks twice: see the module doc).
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for ClassGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for ClassGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(feature = "thread-safe")]
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_the_data() {
        let lock = ClassLock::new(vec![1]);
        lock.lock().push(2);
        assert_eq!(*lock.lock(), vec![1, 2]);
    }

    #[cfg(feature = "thread-safe")]
    #[test]
    fn two_threads_count_without_losing_updates() {
        let lock = std::sync::Arc::new(ClassLock::new(0u64));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        *lock.lock() += 1;
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*lock.lock(), 20_000);
    }
}
