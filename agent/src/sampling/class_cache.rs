//! Class ids by class mirror, for the sampling callback: a lock-free table probed by the
//! mirror's identity hash and confirmed with `IsSameObject` on a weak reference, so a sample's
//! class costs no tag lookup.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use super::*;

/// Class ids by the identity hash of the class's mirror, so a sample finds its class without the
/// VM's tag map (a lock, and after every GC a rehash; about 450 ns per sample in `CatalogLeak`
/// on JDK 17, against about 60 ns for the hash and one `IsSameObject`). Open addressing over a
/// fixed table, read without a lock: an entry's reference and id are written before its key is
/// published, and entries are never removed. The reference is weak so that the cache never keeps
/// a class from being unloaded; an unloaded class's entry then matches nothing. Hashes collide
/// (31 bits), so a hit is confirmed with `IsSameObject`. When the table is full, classes beyond
/// it take the tag path.
pub(super) struct ClassCache {
    /// [`CLASS_CACHE`] entries, or null once a detach gave them back (`release_memory`): the
    /// sampler outlives its session (`Agent`), and 256 KiB a session added up over attaches.
    entries: AtomicPtr<ClassEntry>,
}

#[derive(Default)]
struct ClassEntry {
    /// The mirror's identity hash; 0 for an empty entry (HotSpot never hands out 0).
    hash: AtomicU32,
    id: AtomicU32,
    reference: AtomicUsize,
}

impl Drop for ClassCache {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: nothing else uses the cache.
        unsafe { self.release_memory() }
    }
}

/// Entries in the class cache (and the most classes it holds): more than the classes most
/// applications allocate from.
const CLASS_CACHE: usize = 1 << 14;
/// Entries probed before a lookup gives up.
const CLASS_PROBES: usize = 16;

impl ClassCache {
    /// Hands every mirror's weak reference to `delete`, emptying the table.
    pub(super) fn release_references(&self, delete: &mut impl FnMut(usize)) {
        for entry in self.entries() {
            let reference = entry.reference.swap(0, Ordering::AcqRel);
            entry.hash.store(0, Ordering::Release);
            if reference != 0 {
                delete(reference);
            }
        }
    }

    pub(super) fn new() -> Self {
        let entries: Box<[ClassEntry]> = (0..CLASS_CACHE).map(|_| ClassEntry::default()).collect();
        Self {
            entries: AtomicPtr::new(Box::into_raw(entries).cast::<ClassEntry>()),
        }
    }

    #[inline]
    fn entries(&self) -> &[ClassEntry] {
        let entries = self.entries.load(Ordering::Acquire);
        if entries.is_null() {
            return &[];
        }
        // SAFETY: a box of `CLASS_CACHE` entries from `new`, freed only by `release_memory`,
        // whose caller guarantees that nothing uses the cache any more.
        unsafe { std::slice::from_raw_parts(entries, CLASS_CACHE) }
    }

    /// Frees the entries; the cache is empty from then on.
    ///
    /// # Safety
    /// Nothing uses the cache now or later: sampling is off and its callbacks drained.
    pub(super) unsafe fn release_memory(&self) {
        let entries = self.entries.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if !entries.is_null() {
            // SAFETY: the box `new` made, taken out of the pointer once; per contract unused.
            drop(unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(entries, CLASS_CACHE))
            });
        }
    }

    #[inline]
    pub(super) fn probe(hash: i32) -> impl Iterator<Item = usize> {
        // Fibonacci hashing spreads the VM's hashes (sequential on some JDKs) over the table.
        let start = ((hash as u32).wrapping_mul(0x9E37_79B9) >> (32 - CLASS_CACHE.trailing_zeros()))
            as usize;
        (0..CLASS_PROBES).map(move |i| (start + i) % CLASS_CACHE)
    }

    /// The id of the class with this hash for which `same(reference)` holds.
    pub(super) fn get(&self, hash: i32, mut same: impl FnMut(usize) -> bool) -> Option<u32> {
        let entries = self.entries();
        if hash == 0 || entries.is_empty() {
            return None;
        }
        for i in Self::probe(hash) {
            let entry = &entries[i];
            match entry.hash.load(Ordering::Acquire) {
                0 => return None,
                h if h == hash as u32 && same(entry.reference.load(Ordering::Relaxed)) => {
                    return Some(entry.id.load(Ordering::Relaxed));
                }
                _ => {}
            }
        }
        None
    }

    /// Adds a class; false when its probe window is full. Callers serialize inserts.
    #[inline]
    pub(super) fn insert(&self, hash: i32, id: u32, reference: usize) -> bool {
        let entries = self.entries();
        if hash == 0 || entries.is_empty() {
            return false;
        }
        for i in Self::probe(hash) {
            let entry = &entries[i];
            if entry.hash.load(Ordering::Acquire) == 0 {
                entry.reference.store(reference, Ordering::Relaxed);
                entry.id.store(id, Ordering::Relaxed);
                // Release: whoever sees the hash sees the reference and id.
                entry.hash.store(hash as u32, Ordering::Release);
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_class_cache_confirms_hits_and_survives_collisions() {
        let cache = ClassCache::new();
        assert_eq!(cache.get(77, |_| true), None, "empty");
        assert!(cache.insert(77, 5, 0x500));
        // Another class with the same identity hash: the reference decides.
        assert!(cache.insert(77, 6, 0x600));
        assert_eq!(cache.get(77, |r| r == 0x500), Some(5));
        assert_eq!(cache.get(77, |r| r == 0x600), Some(6));
        assert_eq!(
            cache.get(77, |_| false),
            None,
            "an unloaded class matches nothing"
        );
        assert_eq!(cache.get(78, |_| true), None);
        assert!(!cache.insert(0, 1, 0x100), "0 is no hash");
        assert_eq!(cache.get(0, |_| true), None);
        // A full probe window refuses (the class takes the tag path) instead of evicting.
        for i in 0..CLASS_PROBES as u32 - 2 {
            assert!(cache.insert(77, 10 + i, 0x1000 + i as usize));
        }
        assert!(!cache.insert(77, 99, 0x9900));
        assert_eq!(cache.get(77, |r| r == 0x1000), Some(10));
    }
}
