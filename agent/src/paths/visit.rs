//! How the search tells objects it has met apart without a tag on each: a key from the
//! identity hash, the class and a second hash of the content, and with it the root and depth it
//! was met at, so that a shorter path from the same root enters it again.

/// A key that tells objects apart (see the module's head): identity hash, class, and a second
/// hash of the object's content.
pub(super) fn visit_key(identity: u32, class: u32, second: u32) -> u64 {
    let mut h = u64::from(identity) | (u64::from(class) << 32);
    h ^= u64::from(second).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h.wrapping_mul(0xff51_afd7_ed55_8ccd) ^ (h >> 29)
}

/// A visited object: the high bits of its key (`visit_key`), and in the low `Visit::META` bits
/// how it was met: the root's index (modulo `Visit::EPOCHS`) and its depth (frames above it,
/// at most `Visit::MAX_DEPTH`).
///
/// Why the depth: a depth-first search meets an object first by whatever path comes first in
/// field order, not by the shortest (MAT's and LeakCanary's answer). A Jetty session is held by
/// the session cache's map and also, through its inactivity timer's `this$0`, by the
/// scheduler's queue; met first through the queue, every session was credited to the
/// scheduler. Met again from the same root at a smaller depth, an object is entered again
/// (`Search::reach`), and the targets below it move to the shorter path: a label-correcting
/// search that converges to the shortest paths of each root, bounded by `Search::revisits`.
///
/// Two keys that differ only in their low bits are the same object (`Eq` and `Hash` ignore
/// them). The epoch wraps, so a later root may now and then enter again what an earlier one
/// met; it costs time only: a target moves only within its own root (`Target::root`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Visit(u64);

impl Visit {
    const META: u32 = 14;
    const DEPTH_BITS: u32 = 6;
    const MAX_DEPTH: u64 = (1 << Self::DEPTH_BITS) - 1;
    const EPOCHS: u64 = 1 << (Self::META - Self::DEPTH_BITS);

    pub(super) fn new(key: u64, root: u32, depth: usize) -> Visit {
        let epoch = u64::from(root) % Self::EPOCHS;
        let depth = (depth as u64).min(Self::MAX_DEPTH);
        Visit((key >> Self::META) << Self::META | epoch << Self::DEPTH_BITS | depth)
    }

    /// Whether `self` reaches the object `seen` stands for by a shorter path from the same root.
    pub(super) fn shortens(self, seen: Visit) -> bool {
        let meta = |v: Visit| v.0 & ((1 << Self::META) - 1);
        meta(self) >> Self::DEPTH_BITS == meta(seen) >> Self::DEPTH_BITS
            && meta(self) & Self::MAX_DEPTH < meta(seen) & Self::MAX_DEPTH
    }
}

impl PartialEq for Visit {
    fn eq(&self, other: &Visit) -> bool {
        self.0 >> Self::META == other.0 >> Self::META
    }
}

impl Eq for Visit {}

impl std::hash::Hash for Visit {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.0 >> Self::META);
    }
}

/// What `Search::visit` made of an object met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Met {
    New,
    /// Met before, now by a shorter path from the same root: entered again.
    Shorter,
    Seen,
}
