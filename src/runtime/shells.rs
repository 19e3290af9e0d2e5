//! Shell counts of a fixed runtime's classes, kept per thread: `new` and free without a lock.
//!
//! A class of `Runtime::new()` lists its objects (the live list, under the class lock) because
//! a reload migrates them and an unload detaches them. A fixed runtime's classes (jit-opt) are
//! never reloaded or unloaded, so they list nothing: all that is kept is how many shells are
//! not freed yet, which the runtime's drop needs (a class with shells left is leaked on
//! purpose, as its shells point at it) and the leak tests read. Taking the class lock at `new`
//! and again at the free was two locked instructions per object (about 6 ns each on this
//! project's VM) and the list's writes, one of them into another object (the swap-remove).
//!
//! So each class of a fixed runtime has a [`Counter`]: a slot index, the same in every thread.
//! Each thread has a block of counts, one per slot, that only it writes (a relaxed load and
//! store: no locked instruction), registered for the process's life in [`BLOCKS`]. A shell
//! made on one thread and freed on another leaves +1 in the first block and -1 in the second;
//! the count of a class is the sum over every block ([`Counter::count`]), which the reader
//! takes after the writers' last changes are visible to it (the runtime's drop comes after
//! every handle's last release, which synchronizes with it). A block too small for a new slot
//! is replaced by a larger copy under the registry's lock, which a reader takes too, so a
//! reader sees the old block or the new one, never both or neither.
//!
//! Slots are not reused: a process that compiles many programs grows each thread's block by
//! 8 bytes per class it ever made (a thousand classes: 8 KiB per thread that made objects).

use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The next slot.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

/// One thread's counts, by slot.
struct Block {
    counts: Box<[AtomicIsize]>,
}

/// Every thread's blocks (current and replaced), for the process's life.
static BLOCKS: Mutex<Vec<Arc<Block>>> = Mutex::new(Vec::new());

thread_local! {
    /// This thread's current block (null: none yet). Registered in [`BLOCKS`], which keeps it
    /// alive, so a raw pointer is enough; a `const` cell of a type without drop, so it is
    /// usable while the thread's other locals are torn down.
    static MINE: Cell<*const Block> = const { Cell::new(std::ptr::null()) };
}

/// The shell count of one class, kept per thread (see the module docs).
#[derive(Debug)]
pub(crate) struct Counter {
    slot: usize,
}

impl Counter {
    /// A counter with a fresh slot.
    pub(crate) fn new() -> Counter {
        Counter {
            slot: NEXT_SLOT.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Count `delta` shells made (1) or freed (-1) on this thread.
    #[inline]
    pub(crate) fn add(&self, delta: isize) {
        let block = MINE.try_with(Cell::get).unwrap_or(std::ptr::null());
        // SAFETY: a non-null block is registered in `BLOCKS` for the process's life.
        if let Some(count) = unsafe { block.as_ref() }.and_then(|b| b.counts.get(self.slot)) {
            // Only this thread writes its block: no read-modify-write is needed.
            count.store(count.load(Ordering::Relaxed) + delta, Ordering::Release);
            return;
        }
        self.add_slow(delta);
    }

    #[cold]
    #[inline(never)]
    fn add_slow(&self, delta: isize) {
        let mut blocks = BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
        let old = MINE.try_with(Cell::get).unwrap_or(std::ptr::null());
        // SAFETY: as in `add`.
        let old = unsafe { old.as_ref() };
        let len = (self.slot + 1)
            .max(NEXT_SLOT.load(Ordering::Relaxed))
            .next_power_of_two()
            .max(16);
        let counts: Box<[AtomicIsize]> = (0..len).map(|_| AtomicIsize::new(0)).collect();
        if let Some(old) = old {
            for (new, old) in counts.iter().zip(old.counts.iter()) {
                new.store(old.load(Ordering::Relaxed), Ordering::Relaxed);
            }
        }
        counts[self.slot].fetch_add(delta, Ordering::Relaxed);
        let block = Arc::new(Block { counts });
        let ptr = Arc::as_ptr(&block);
        // Under the registry's lock: a reader sees the counts in the old block or the new one.
        blocks.push(block);
        if let Some(old) = old {
            for c in old.counts.iter() {
                c.store(0, Ordering::Release);
            }
        }
        if MINE.try_with(|m| m.set(ptr)).is_err() {
            // A thread being torn down keeps no block: this count stays in the one registered.
        }
    }

    /// Shells made and not freed, on every thread.
    pub(crate) fn count(&self) -> usize {
        let blocks = BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
        let sum: isize = blocks
            .iter()
            .filter_map(|b| b.counts.get(self.slot))
            .map(|c| c.load(Ordering::Acquire))
            .sum();
        sum.max(0) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_across_threads_and_growth() {
        let a = Counter::new();
        a.add(1);
        a.add(1);
        // Many new slots: this thread's block grows (copied, the old zeroed).
        let many: Vec<Counter> = (0..100).map(|_| Counter::new()).collect();
        many[99].add(1);
        assert_eq!(a.count(), 2);
        assert_eq!(many[99].count(), 1);
        // Made here, freed on another thread.
        std::thread::spawn(move || {
            a.add(-1);
            assert_eq!(a.count(), 1);
            a
        })
        .join()
        .map(|a| {
            a.add(-1);
            assert_eq!(a.count(), 0);
        })
        .unwrap();
        assert_eq!(many[0].count(), 0);
    }
}
