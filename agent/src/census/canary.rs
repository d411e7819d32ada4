//! When the old generation was last marked, learned from canaries.
//!
//! A sample's weak reference is cleared when the GC finds its object dead. A young collection
//! only looks at young objects: a sample that was promoted and then died keeps its reference
//! until a collection or marking of the old generation (a full GC, a G1 concurrent cycle, any
//! ZGC or Shenandoah cycle). Until then the estimate counts it, and an application that promotes
//! short-lived objects sees its estimates grow with garbage (ARCHITECTURE.md 5b). The samples
//! taken since the last such marking are therefore *unconfirmed*: alive as far as any GC has
//! looked, possibly garbage in the old generation.
//!
//! The JVMTI GC events do not say which kind of GC ran, and JFR's (which do) need JDK 14 and a
//! recording. So the agent asks the heap directly, the way the samples do: after each GC it
//! makes a small object (a canary) and holds it strongly for [`HOLD_GCS`] GCs, which promotes
//! it (HotSpot's collectors tenure an object after at most 15 young collections; a G1
//! concurrent cycle adds two pauses that evacuate nothing, remark and cleanup, per young
//! collection that starts it, so 48 GC events hold at least 16 young collections). Then it lets
//! the canary go, keeping only a weak reference and the tracker generation of that moment. When
//! that reference is cleared, the old generation was marked by a marking that began after the
//! canary was let go (a snapshot-at-the-beginning marking keeps what was reachable when it
//! began): every sample born before that generation that was dead then is cleared too. The
//! newest cleared canary's generation is the confirmation point.
//!
//! One canary is made and one let go per worker wake-up after GCs, so the point is at most one
//! GC behind a marking once the first canary has aged; before that (the first 48 GCs of a
//! session) only walks and GC counts confirm. On collectors with one generation (ZGC before its
//! generational mode, Shenandoah by default) every cycle marks the whole heap, so canaries are
//! let go at once there ([`Canaries::every_gc_marks_all`]) and the first cycles confirm. Costs: at most [`HOLD_GCS`] + [`MAX_DROPPED`]
//! 16-byte objects and references. Where it cannot help: with `-XX:+NeverTenure` a canary stays
//! young and a young collection clears it, so samples promoted by a survivor overflow would be
//! confirmed too early.

use std::collections::VecDeque;

/// GC events a canary is held through before it is let go (see the module comment).
pub const HOLD_GCS: u64 = 48;
/// Canaries let go and not yet cleared, at most. With no old marking for a long time, the
/// oldest are forgotten: a marking clears every canary let go before it began, so the newest
/// ones are the ones that matter.
pub const MAX_DROPPED: usize = 64;

/// What a canary costs the JVM: a plain object (16 bytes with compressed class pointers) and
/// its reference's `OopStorage` slot.
pub const JVM_BYTES_PER_CANARY: u64 = 16 + crate::sampling::tracker::JVM_BYTES_PER_REF;

/// What the canaries need from the JVM, as opaque reference handles.
pub trait Heap {
    /// A new object held by a new global reference; `None` when the VM could not make one.
    fn make(&mut self) -> Option<usize>;
    /// A weak reference to the object of `global`; deletes `global` either way.
    fn let_go(&mut self, global: usize) -> Option<usize>;
    /// Whether the GC cleared `weak`.
    fn cleared(&mut self, weak: usize) -> bool;
    fn delete_weak(&mut self, weak: usize);
    fn delete_global(&mut self, global: usize);
}

pub struct Canaries {
    /// GC events a canary is held through: [`HOLD_GCS`], or 0 where every GC marks the whole
    /// heap (see [`Canaries::every_gc_marks_all`]).
    hold: u64,
    /// Held canaries' global references and the GC count when each was made, oldest first.
    held: VecDeque<(usize, u64)>,
    /// Let-go canaries' weak references and the tracker generation then, oldest first.
    dropped: VecDeque<(usize, u32)>,
    /// The GC count of the last `after_gcs`.
    gcs: u64,
    /// Samples born before this generation have been met by a marking of the whole heap.
    confirmed: u32,
}

impl Default for Canaries {
    fn default() -> Self {
        Self {
            hold: HOLD_GCS,
            held: VecDeque::new(),
            dropped: VecDeque::new(),
            gcs: 0,
            confirmed: 0,
        }
    }
}

impl Canaries {
    /// For collectors with one generation (ZGC before its generational mode, Shenandoah in its
    /// default mode) every cycle marks the whole heap: a canary need not age, so it is let go
    /// at the first GC after it was made, and the first cycle after that confirms.
    pub fn every_gc_marks_all(&mut self) {
        self.hold = 1;
    }

    /// GCs have finished (`gcs` in all since the agent started; `generation` is the tracker's
    /// now): lets go the canaries held long enough and makes one for this wake-up.
    pub fn after_gcs(&mut self, heap: &mut impl Heap, gcs: u64, generation: u32) {
        if gcs == self.gcs {
            return;
        }
        self.gcs = gcs;
        while let Some(&(global, made)) = self.held.front() {
            if gcs.saturating_sub(made) < self.hold {
                break;
            }
            self.held.pop_front();
            if let Some(weak) = heap.let_go(global) {
                self.dropped.push_back((weak, generation));
            }
        }
        while self.dropped.len() > MAX_DROPPED {
            if let Some((weak, _)) = self.dropped.pop_front() {
                heap.delete_weak(weak);
            }
        }
        if let Some(global) = heap.make() {
            self.held.push_back((global, gcs));
        }
    }

    /// Asks the let-go canaries whether a marking freed them, and returns the confirmation
    /// point: samples born before this tracker generation have been met by a marking of the
    /// whole heap since (0: none yet). Poll before the samples' references: a
    /// marking that ends between the two polls then clears samples already counted as
    /// confirmed by an older point, never the other way round.
    pub fn poll(&mut self, heap: &mut impl Heap) -> u32 {
        // A marking that freed one canary freed every canary let go before it began, so the
        // newest cleared one is the point, and all older ones can go.
        if let Some(newest) = self
            .dropped
            .iter()
            .rposition(|&(weak, _)| heap.cleared(weak))
        {
            self.confirmed = self.confirmed.max(self.dropped[newest].1);
            for (weak, _) in self.dropped.drain(..=newest) {
                heap.delete_weak(weak);
            }
        }
        self.confirmed
    }

    /// Deletes every reference (a detach).
    pub fn release(&mut self, heap: &mut impl Heap) {
        for (global, _) in self.held.drain(..) {
            heap.delete_global(global);
        }
        for (weak, _) in self.dropped.drain(..) {
            heap.delete_weak(weak);
        }
    }

    /// References held now (strong, weak).
    pub fn held(&self) -> (usize, usize) {
        (self.held.len(), self.dropped.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// A heap of numbered objects: globals and weaks are handles, `freed` the objects a
    /// marking has collected.
    #[derive(Default)]
    struct FakeHeap {
        next: usize,
        globals: HashSet<usize>,
        weaks: HashSet<usize>,
        /// Weak handle -> object.
        weak_object: std::collections::HashMap<usize, usize>,
        /// Objects with no strong reference left.
        unreachable: HashSet<usize>,
        freed: HashSet<usize>,
    }

    impl FakeHeap {
        /// An old-generation marking: frees everything unreachable when it began.
        fn mark_old(&mut self) {
            self.freed.extend(self.unreachable.iter().copied());
        }
    }

    impl Heap for FakeHeap {
        fn make(&mut self) -> Option<usize> {
            self.next += 1;
            self.globals.insert(self.next);
            Some(self.next)
        }
        fn let_go(&mut self, global: usize) -> Option<usize> {
            assert!(self.globals.remove(&global), "a live global");
            self.unreachable.insert(global);
            let weak = global + 1_000_000;
            self.weaks.insert(weak);
            self.weak_object.insert(weak, global);
            Some(weak)
        }
        fn cleared(&mut self, weak: usize) -> bool {
            assert!(self.weaks.contains(&weak), "a live weak");
            self.freed.contains(&self.weak_object[&weak])
        }
        fn delete_weak(&mut self, weak: usize) {
            assert!(self.weaks.remove(&weak), "deleted once");
        }
        fn delete_global(&mut self, global: usize) {
            assert!(self.globals.remove(&global), "deleted once");
        }
    }

    #[test]
    fn nothing_is_confirmed_before_a_canary_has_aged_and_a_marking_freed_it() {
        let mut heap = FakeHeap::default();
        let mut canaries = Canaries::default();
        for gc in 1..HOLD_GCS {
            canaries.after_gcs(&mut heap, gc, gc as u32 * 2);
            heap.mark_old();
            assert_eq!(canaries.poll(&mut heap), 0, "held canaries are never freed");
        }
        assert_eq!(canaries.held(), (HOLD_GCS as usize - 1, 0));
        // The first canary ages out at GC HOLD_GCS + 1 and is let go at that generation.
        canaries.after_gcs(&mut heap, HOLD_GCS + 1, 500);
        assert_eq!(canaries.held().1, 1);
        assert_eq!(canaries.poll(&mut heap), 0, "let go, but no marking since");
        heap.mark_old();
        assert_eq!(canaries.poll(&mut heap), 500);
        assert_eq!(
            canaries.held().1,
            0,
            "a cleared canary's reference is deleted"
        );
    }

    #[test]
    fn the_newest_cleared_canary_is_the_point_and_a_later_one_waits() {
        let mut heap = FakeHeap::default();
        let mut canaries = Canaries::default();
        for gc in 1..=HOLD_GCS + 3 {
            canaries.after_gcs(&mut heap, gc, gc as u32 * 10);
        }
        // Three let go, at generations 490, 500 and 510; then a marking.
        assert_eq!(canaries.held().1, 3);
        heap.mark_old();
        // One more let go after the marking began: it survives it.
        canaries.after_gcs(&mut heap, HOLD_GCS + 4, 520);
        assert_eq!(canaries.poll(&mut heap), 510);
        assert_eq!(canaries.held().1, 1);
        // The point never goes back, even when polled again with nothing new.
        assert_eq!(canaries.poll(&mut heap), 510);
        heap.mark_old();
        assert_eq!(canaries.poll(&mut heap), 520);
    }

    #[test]
    fn with_one_generation_a_canary_is_let_go_at_the_next_gc() {
        let mut heap = FakeHeap::default();
        let mut canaries = Canaries::default();
        canaries.every_gc_marks_all();
        canaries.after_gcs(&mut heap, 1, 10);
        assert_eq!(canaries.held(), (1, 0));
        canaries.after_gcs(&mut heap, 2, 20);
        assert_eq!(canaries.held(), (1, 1), "let go at generation 20");
        heap.mark_old();
        assert_eq!(canaries.poll(&mut heap), 20);
    }

    #[test]
    fn several_gcs_in_one_wake_up_age_canaries_by_gc_count_and_memory_is_bounded() {
        let mut heap = FakeHeap::default();
        let mut canaries = Canaries::default();
        canaries.after_gcs(&mut heap, 1, 2);
        canaries.after_gcs(&mut heap, 1, 2); // no new GC: nothing made
        assert_eq!(canaries.held(), (1, 0));
        canaries.after_gcs(&mut heap, 1 + HOLD_GCS, 4); // many GCs at once
        assert_eq!(canaries.held(), (1, 1));
        for gc in 0..10 * MAX_DROPPED as u64 {
            canaries.after_gcs(&mut heap, 2 + HOLD_GCS + gc, 6 + gc as u32);
        }
        let (held, dropped) = canaries.held();
        assert!(held <= HOLD_GCS as usize && dropped <= MAX_DROPPED);
        assert_eq!(heap.globals.len(), held);
        assert_eq!(
            heap.weaks.len(),
            dropped,
            "forgotten canaries' references are deleted"
        );
        heap.mark_old();
        let point = canaries.poll(&mut heap);
        assert_eq!(point, 6 + 10 * MAX_DROPPED as u32 - 1, "the newest let go");
        canaries.release(&mut heap);
        assert!(heap.globals.is_empty() && heap.weaks.is_empty());
    }
}
