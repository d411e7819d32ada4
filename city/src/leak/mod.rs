//! The leak analysis, window-free, in the stages MAT's leak suspects report separates: find the
//! suspects, find each one's accumulation point, report them. Each stage is a module that reads
//! only the stages before it.
//!
//! 1. What the agent sent: the GC roots, their kind, thread, class, field and frame kept apart
//!    as the protocol sends them (`roots.rs`), and the paths its search found from them to
//!    sampled objects (`paths.rs`).
//! 2. Find the suspects: every type's trend over the window (`trends.rs`), and of those the
//!    types growing by a leak's worth beyond the estimates' doubt (`growers.rs`).
//! 3. The accumulation point: for the growing types, the object their sampled paths share, with
//!    a collection's insides folded into the collection (`holders.rs`), and how sure the paths
//!    make it (`evidence.rs`).
//! 4. The report: each holder with its trace, what it keeps alive and its evidence, as a
//!    `Suspect`, ranked (`suspects.rs`), named across runs by its signature (`signature.rs`).
//!
//! A suspect's data is defined here, apart from the code that finds it, so the details panel
//! (`details.rs`) and the report read it without depending on that code.

pub mod evidence;
pub mod growers;
pub mod holders;
pub mod paths;
pub mod roots;
pub mod signature;
pub mod suspects;
#[cfg(test)]
mod testing;
pub mod trends;

use crate::leak::evidence::{Confidence, Evidence};
use crate::leak::roots::RootRef;
use crate::leak::signature::Signature;

/// One step of a leak trace, from the root down.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub type_name: String,
    /// The field of the step above that references this one (`[]` for elements); for the first
    /// step, empty (the root references it).
    pub field: String,
    /// Live objects of the type at the window's end, and their growth over it.
    pub objects: u64,
    pub growth: i64,
    /// A collection's internals (folded into the collection above in a short trace).
    pub content: bool,
    /// This step is reached through the suspect reference.
    pub suspect: bool,
    /// The largest array length or fan-out seen through `field` (0 when unknown).
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Suspect {
    /// The GC root the trace starts at, as the wire gave it (its kind and parts; the report
    /// names it, `root_kind_label` its kind); `None` when no root was found.
    pub root: Option<RootRef>,
    pub steps: Vec<Step>,
    /// The accumulation point: the collection (or object) whose content grows.
    pub holder: String,
    /// `Holder.field -> Type`: where the growth enters.
    pub suspect_reference: String,
    /// The growing types this trace explains, the strongest first.
    pub leaking: Vec<String>,
    /// Objects gained by the first of `leaking` over the window (the fitted rise).
    pub growth: i64,
    /// Of that, what the numbers back: at the window's end or at the last walk, whichever backs
    /// more (`CityModel::significant_growth`: less the estimate's error and what may be garbage
    /// no old-generation marking has met).
    pub backed_growth: i64,
    /// Whether `backed_growth` is a leak's worth. An unconfirmed suspect rose in the estimates
    /// since the last walk and old marking only: objects promoted to the old generation and
    /// dead there rise the same way until a marking frees them. It is named, after the
    /// confirmed ones, and says so.
    pub confirmed: bool,
    pub confidence: Confidence,
    /// Other threads that hold a container of the holder's type as the same kind of
    /// thread-local value, with content of the root's order: a pool's threads each hold one of
    /// the growing lists (empty otherwise).
    pub co_holders: Vec<String>,
    /// Other roots that hold the holder or an object on its chain themselves (a frame's local
    /// holding the static list), named as roots are: the path came from `root`, which holds it
    /// longest (`RootOrder`); these hold it too, for as long as they last.
    pub also_reached_from: Vec<String>,
    /// Stable across snapshots and runs: the root, the holder's type and where it sits, with a
    /// thread named by its family (`thread "pool-#-thread-#"`), since which of a pool's threads
    /// holds most varies; or the growing type whose holder was not named.
    pub signature: Signature,
    /// The walk the trace comes from, and how much older it is than the window's end.
    pub walk_seq: u64,
    pub walk_age_ms: u64,
    /// Where the first of `leaking` is allocated, most live objects first (with a `site` level
    /// in the grouping; estimated from allocation samples).
    pub sites: Vec<(String, u64)>,
    /// What the holder rests on: object-level paths (`None`: per-type edges only, from a
    /// recording without paths, which never names a holder with more than *ambiguous*).
    pub evidence: Option<Evidence>,
    /// What the holder keeps alive of the growth, per type of `leaking`, most bytes first: the
    /// leak is one accumulation point and everything its growing entries drag along (a
    /// session and the dozen types each one holds), ranked by their sum, not by one type.
    pub holds: Vec<Held>,
}

/// Of one growing type, what a suspect's holder keeps alive: the type's fitted rise over the
/// window, in objects and bytes, times the share of its sampled paths through the holder (a
/// type on the trace that no sample ended at counts whole).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Held {
    pub type_name: String,
    pub objects: i64,
    pub bytes: i64,
    /// The estimates' 95 % error on that rise (at the window's start and end, the same share):
    /// 0 between exact snapshots.
    pub objects_error: i64,
    pub bytes_error: i64,
    /// Of the window's end, what may be garbage no old-generation marking has met yet, at the
    /// same share: a rise that rests on it (a resizing map's discarded tables, promoted and not
    /// yet freed) holds nothing for sure.
    pub objects_unconfirmed: i64,
    pub bytes_unconfirmed: i64,
}

impl Suspect {
    /// The readable name of the root the trace starts at, empty when no root was found.
    pub fn root_name(&self) -> &str {
        self.root.as_ref().map_or("", |r| r.name.as_str())
    }

    /// Whether LEAK SUSPECTS lists it: a rise the numbers back (`confirmed`: beyond the
    /// estimates' error and what may be garbage), or a holder the paths named that surely
    /// keeps some growth alive (beyond the error of what it holds). The rest rose only
    /// within that doubt and no search explained it: shown apart, as rising and not yet
    /// explained, never counted as a leak (a short-lived type's few samples, promoted garbage
    /// no marking has freed).
    pub fn is_backed(&self) -> bool {
        // A holder named for a rise within its own error (a steady catalog that 11 of 12
        // paths pass through while the estimate at the window's start was low) is no leak.
        self.confirmed || (!self.holder.is_empty() && self.surely_held().0 > 0)
    }

    /// The objects and bytes of growth the holder keeps alive (`holds`, summed).
    pub fn held(&self) -> (i64, i64) {
        self.holds
            .iter()
            .fold((0, 0), |(o, b), h| (o + h.objects, b + h.bytes))
    }

    /// What the holder keeps alive beyond the estimates' doubt: the summed rise less what may
    /// be garbage and the error of that sum (the types' errors are of separate samples, so they add in
    /// quadrature), at least 0. What leaks rank by, so that a steady catalog whose estimate
    /// wanders within its error (a few samples of 16,384 objects each) does not outrank a leak
    /// that rose ten times its error, while a leak of a dozen small types, each near its own
    /// error, still counts their sum.
    pub fn surely_held(&self) -> (i64, i64) {
        let (objects, bytes) = self.held();
        let quadrature = |error: fn(&Held) -> i64| {
            self.holds
                .iter()
                .map(|h| (error(h) as f64).powi(2))
                .sum::<f64>()
                .sqrt()
                .round() as i64
        };
        // What may be garbage is no random error: it may all be garbage at once, so it is
        // taken out whole.
        let (unconfirmed_objects, unconfirmed_bytes) =
            self.holds.iter().fold((0, 0), |(o, b), h| {
                (o + h.objects_unconfirmed, b + h.bytes_unconfirmed)
            });
        (
            (objects - quadrature(|h| h.objects_error) - unconfirmed_objects).max(0),
            (bytes - quadrature(|h| h.bytes_error) - unconfirmed_bytes).max(0),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_of_growth_within_its_error_is_not_a_backed_suspect() {
        let held = |objects, objects_error| Held {
            type_name: "T".into(),
            objects,
            bytes: objects * 32,
            objects_error,
            bytes_error: objects_error * 32,
            ..Held::default()
        };
        let steady = Suspect {
            holder: "java.util.concurrent.ConcurrentHashMap".into(),
            holds: vec![held(14_154, 101_671)],
            ..Suspect::default()
        };
        assert!(!steady.is_backed());
        let leak = Suspect {
            holds: vec![held(1_210_526, 74_638)],
            ..steady.clone()
        };
        assert!(leak.is_backed());
        let confirmed = Suspect {
            holder: String::new(),
            confirmed: true,
            ..Suspect::default()
        };
        assert!(confirmed.is_backed());
    }

    /// A holder named for a rise that the estimates say may be garbage (a map's discarded
    /// tables, promoted and not yet marked) is no leak, however small the rise's error.
    #[test]
    fn a_rise_that_may_be_garbage_is_not_surely_held() {
        let tables = Held {
            type_name: "java.util.concurrent.ConcurrentHashMap$Node[]".into(),
            objects: 40,
            bytes: 3_000_000,
            objects_error: 4,
            bytes_error: 300_000,
            objects_unconfirmed: 38,
            bytes_unconfirmed: 2_900_000,
        };
        let suspect = Suspect {
            holder: "java.util.concurrent.ConcurrentHashMap".into(),
            holds: vec![tables.clone()],
            ..Suspect::default()
        };
        assert_eq!(suspect.surely_held(), (0, 0));
        assert!(!suspect.is_backed());
        let confirmed = Suspect {
            holds: vec![Held {
                objects_unconfirmed: 0,
                bytes_unconfirmed: 0,
                ..tables
            }],
            ..suspect
        };
        assert_eq!(confirmed.surely_held(), (36, 2_700_000));
        assert!(confirmed.is_backed());
    }

    #[test]
    fn what_is_surely_held_leaves_each_types_error_out() {
        let held = |objects, bytes, objects_error, bytes_error| Held {
            type_name: "T".into(),
            objects,
            bytes,
            objects_error,
            bytes_error,
            ..Held::default()
        };
        let catalog = Suspect {
            holds: vec![
                held(98_000, 4_000_000, 96_000, 4_100_000),
                held(131_000, 5_000_000, 140_000, 4_000_000),
            ],
            ..Suspect::default()
        };
        let sessions = Suspect {
            holds: vec![held(614_000, 17_000_000, 60_000, 1_900_000)],
            ..Suspect::default()
        };
        assert_eq!(catalog.held(), (229_000, 9_000_000));
        // Errors of 96,000 and 140,000 objects are 169,753 together, not 236,000.
        assert_eq!(
            catalog.surely_held(),
            (229_000 - 169_753, 9_000_000 - 5_728_001)
        );
        assert_eq!(sessions.surely_held(), (554_000, 15_100_000));
        assert!(sessions.surely_held() > catalog.surely_held());
        // A dozen small types, each within its own error, still hold their sum's worth.
        let small = Suspect {
            holds: (0..12)
                .map(|_| held(9_000, 500_000, 7_800, 430_000))
                .collect(),
            ..Suspect::default()
        };
        let (objects, bytes) = small.surely_held();
        assert_eq!(objects, 108_000 - 27_020);
        assert_eq!(bytes, 6_000_000 - 1_489_564);
        let fewer = Suspect {
            holds: vec![held(27_000, 1_000_000, 3_000, 100_000)],
            ..Suspect::default()
        };
        assert!(small.surely_held() > fewer.surely_held());
        assert_eq!(Suspect::default().surely_held(), (0, 0));
    }
}
