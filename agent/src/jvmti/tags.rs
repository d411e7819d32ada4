//! The 64-bit object tags the agent sets, and what each bit means.
//!
//! ```text
//! class mirror:  1 | 0...0 | class id (32 bits)
//! object:        0 | epoch (14) | owned depth (3) | owner (14) | sample slot + 1 (32)
//! memcity's:     0 | epoch (14) | 7             | 0          | sample slot + 1 (32)
//! ```
//! Classes are tagged so the walk learns every object's class from `class_tag` for free. Sampled
//! objects carry the number of their slot in the tracker (`tracker.rs`), which holds the class,
//! allocation site, thread and sampling weight: the worker tags them just before a walk, so the
//! walk can tell which samples are alive and where. Object arrays additionally carry the epoch
//! of the last walk that counted their bytes: arrays vary in size and the walk may report one
//! array several times, so the epoch makes each count once. The objects a GC root holds directly
//! and the few below them (`census/walk/`, owners) carry the number of that root, valid in the walk
//! whose epoch they carry: that is how a walk tells which static field, thread or stack frame
//! owns the one collection that grows, where per-class counts mix it with every other. Tags are
//! only ever set on sampled objects, classes, object arrays, those few owned objects and
//! memcity's own (its JFR stream's metadata and parser, `census/walk/`), never on every object (a tag
//! costs the VM tens of bytes and slows later walks). memcity's reuse the owner bits with a
//! depth no owner reaches, so an owner number is never read from them.

pub const CLASS_BIT: i64 = i64::MIN; // bit 63

/// Bits of the sample-key packing `(site, thread)` the tree groups by.
const SITE_BITS: u32 = 22;
const THREAD_BITS: u32 = 12;
const EPOCH_SHIFT: u32 = 49;
const EPOCH_BITS: u32 = 14;
const OWNER_SHIFT: u32 = 32;

pub const MAX_SITE: u32 = (1 << SITE_BITS) - 1;
pub const MAX_THREAD: u32 = (1 << THREAD_BITS) - 1;
pub const MAX_EPOCH: u64 = (1 << EPOCH_BITS) - 1;
/// Owners one walk can tell apart (owner numbers are 1..=MAX_OWNER; 0 is none).
pub const MAX_OWNER: u32 = (1 << 14) - 1;
/// How far below its root an owned object may sit (0: the root's own referee). Roots that own
/// fewer levels start deeper (`walk::Root::start_depth`).
pub const MAX_OWNED_DEPTH: u8 = 5;
const DEPTH_BITS: u32 = 3;
const DEPTH_SHIFT: u32 = OWNER_SHIFT + 14;
const DEPTH_MASK: i64 = (1 << DEPTH_BITS) - 1;
const OWNER_MASK: i64 = ((MAX_OWNER as i64) << OWNER_SHIFT) | (DEPTH_MASK << DEPTH_SHIFT);

const SITE_MASK: i64 = MAX_SITE as i64;
const THREAD_SHIFT: u32 = SITE_BITS;
const SLOT_MASK: i64 = 0xffff_ffff;
const EPOCH_MASK: i64 = (MAX_EPOCH as i64) << EPOCH_SHIFT;

pub fn class_tag(id: u32) -> i64 {
    CLASS_BIT | id as i64
}

/// The class id of a class tag, 0 for anything else (an untagged class).
#[inline]
pub fn class_id(tag: i64) -> u32 {
    if tag & CLASS_BIT != 0 {
        tag as u32
    } else {
        0
    }
}

/// Tag of a freshly sampled object tracked in `slot`.
pub fn sample_tag(slot: u32) -> i64 {
    i64::from(slot) + 1
}

/// `tag` (an object's tag now) with the sample slot `slot` in it, keeping what walks set (epoch,
/// owner); `None` for a class mirror's tag, which must stay.
pub fn with_sample(tag: i64, slot: u32) -> Option<i64> {
    if tag & CLASS_BIT != 0 {
        return None;
    }
    Some((tag & !SLOT_MASK) | sample_tag(slot))
}

/// The tracker slot of a sampled object's tag, `None` for anything else.
#[inline]
pub fn sample_slot(tag: i64) -> Option<u32> {
    if tag & CLASS_BIT != 0 || tag & SLOT_MASK == 0 {
        None
    } else {
        Some(((tag & SLOT_MASK) - 1) as u32)
    }
}

pub fn key_site(key: u64) -> u32 {
    (key & SITE_MASK as u64) as u32
}

pub fn key_thread(key: u64) -> u32 {
    (key >> THREAD_SHIFT) as u32 & MAX_THREAD
}

#[inline]
pub fn epoch(tag: i64) -> u64 {
    ((tag & EPOCH_MASK) >> EPOCH_SHIFT) as u64
}

#[inline]
pub fn with_epoch(tag: i64, epoch: u64) -> i64 {
    (tag & !EPOCH_MASK) | (((epoch & MAX_EPOCH) as i64) << EPOCH_SHIFT)
}

/// The owner number and depth of an object's tag, if set in the walk of `epoch` (an older one
/// numbers another walk's roots).
#[inline]
pub fn owner(tag: i64, epoch: u64) -> Option<(u32, u8)> {
    let owner = ((tag >> OWNER_SHIFT) as u32) & MAX_OWNER;
    let depth = ((tag >> DEPTH_SHIFT) & DEPTH_MASK) as u8;
    (tag & CLASS_BIT == 0 && owner != 0 && self::epoch(tag) == epoch).then_some((owner, depth))
}

/// `tag` owned by `owner` at `depth` in the walk of `epoch` (the sample slot is kept).
#[inline]
pub fn with_owner(tag: i64, owner: u32, depth: u8, epoch: u64) -> i64 {
    let tag = (tag & !OWNER_MASK)
        | (i64::from(owner.min(MAX_OWNER)) << OWNER_SHIFT)
        | (i64::from(depth.min(MAX_OWNED_DEPTH)) << DEPTH_SHIFT);
    with_epoch(tag, epoch)
}

/// The owned-depth value that marks memcity's own objects (no owner reaches it).
const MEMCITY_DEPTH: i64 = DEPTH_MASK;
const _: () = assert!(MEMCITY_DEPTH > MAX_OWNED_DEPTH as i64);

/// `tag` marked as memcity's in the walk of `epoch` (the sample slot is kept).
#[inline]
pub fn with_memcity(tag: i64, epoch: u64) -> i64 {
    with_epoch((tag & !OWNER_MASK) | (MEMCITY_DEPTH << DEPTH_SHIFT), epoch)
}

/// Whether an object's tag marks it memcity's in the walk of `epoch`.
#[inline]
pub fn is_memcity(tag: i64, epoch: u64) -> bool {
    tag & CLASS_BIT == 0
        && tag & OWNER_MASK == MEMCITY_DEPTH << DEPTH_SHIFT
        && self::epoch(tag) == epoch
}

/// `tag` without its owner (for an object array counted again by a later walk).
#[inline]
pub fn without_owner(tag: i64) -> i64 {
    tag & !OWNER_MASK
}

/// The epoch after `epoch`: 1..=MAX_EPOCH, skipping 0 (the "never counted" value).
pub fn next_epoch(epoch: u64) -> u64 {
    if epoch >= MAX_EPOCH {
        1
    } else {
        epoch + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcitys_mark_is_no_owner_keeps_the_sample_and_holds_one_walk() {
        let t = with_memcity(sample_tag(41), 3);
        assert!(is_memcity(t, 3));
        assert!(!is_memcity(t, 4), "another walk's mark means nothing");
        assert_eq!(owner(t, 3), None, "no owner number is read from it");
        assert_eq!(sample_slot(t), Some(41));
        assert!(
            !is_memcity(with_owner(t, 7, 2, 3), 3),
            "an owner replaces it"
        );
        assert!(!is_memcity(with_owner(0, 1, MAX_OWNED_DEPTH, 3), 3));
        assert!(!is_memcity(class_tag(5), 3));
        assert!(!is_memcity(0, 0));
    }

    #[test]
    fn class_tags_round_trip_and_are_negative() {
        let t = class_tag(1234);
        assert!(t < 0);
        assert_eq!(class_id(t), 1234);
        assert_eq!(class_id(0), 0);
        assert_eq!(sample_slot(t), None);
    }

    #[test]
    fn a_sample_tag_joins_what_walks_set_but_never_a_class_tag() {
        let walked = epoch_bits_for_test(7) | (5 << OWNER_SHIFT);
        let t = with_sample(walked, 41).unwrap();
        assert_eq!(sample_slot(t), Some(41));
        assert_eq!(t & !SLOT_MASK, walked, "epoch and owner kept");
        assert_eq!(with_sample(sample_tag(3), 9).and_then(sample_slot), Some(9));
        assert_eq!(with_sample(class_tag(12), 41), None);
    }

    fn epoch_bits_for_test(epoch: u64) -> i64 {
        ((epoch as i64) << EPOCH_SHIFT) & EPOCH_MASK
    }

    #[test]
    fn sample_tags_carry_their_slot_through_epochs() {
        let t = sample_tag(u32::MAX - 1);
        assert!(t > 0);
        assert_eq!(class_id(t), 0);
        assert_eq!(sample_slot(t), Some(u32::MAX - 1));
        assert_eq!(sample_slot(sample_tag(0)), Some(0));
        let e = with_epoch(t, MAX_EPOCH);
        assert_eq!(epoch(e), MAX_EPOCH);
        assert_eq!(sample_slot(e), sample_slot(t));
        assert_eq!(epoch(with_epoch(e, 5)), 5);
        // An object array that was never sampled: epoch only, no slot.
        assert_eq!(sample_slot(with_epoch(0, 9)), None);
        assert_eq!(sample_slot(0), None);
        assert_eq!(next_epoch(MAX_EPOCH), 1);
        assert_eq!(next_epoch(0), 1);
    }

    #[test]
    fn owners_hold_only_in_their_walk_and_keep_the_sample() {
        let t = with_owner(sample_tag(41), 7, 2, 3);
        assert_eq!(owner(t, 3), Some((7, 2)));
        assert_eq!(
            owner(t, 4),
            None,
            "another walk's owner numbers mean nothing"
        );
        assert_eq!(sample_slot(t), Some(41));
        assert_eq!(epoch(t), 3);
        assert_eq!(owner(without_owner(t), 3), None);
        assert_eq!(sample_slot(without_owner(t)), Some(41));
        assert_eq!(owner(0, 0), None);
        assert_eq!(owner(class_tag(5), 0), None);
        assert_eq!(
            owner(
                with_owner(0, MAX_OWNER, MAX_OWNED_DEPTH, MAX_EPOCH),
                MAX_EPOCH
            ),
            Some((MAX_OWNER, MAX_OWNED_DEPTH))
        );
    }
}
