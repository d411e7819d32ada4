//! What the object-path searches say of a type: the newest paths at a snapshot (all of them, or
//! those of a search through every root), and whether a type's rise is of dead objects because
//! a complete search reached too few of its samples or counted too few of its objects.

use std::sync::Arc;

use super::CityModel;
use crate::leak::paths::Paths;

/// Sampled objects of a type a complete search looked for, at least this many, for the share
/// it reached to judge the type's rise (`CityModel::dead_rise_at`).
pub const MIN_JUDGED_SHARE: u64 = 20;

/// Why a type's rise is of dead objects (`CityModel::dead_rise_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadRise {
    /// A complete search looked for `looked_for` of the type's sampled objects and reached too
    /// few to make the rise (none, or `looked_for - unreached`).
    Unreached { unreached: u64, looked_for: u64 },
    /// A complete search carried at snapshot `at` counted `objects` of the type reachable from
    /// any root where the estimates said `estimated`: a quarter of their rise at most.
    Counted {
        objects: u64,
        estimated: u64,
        at: usize,
    },
}

impl CityModel {
    /// The newest paths carried at or before snapshot `index`, with the index that carried them.
    pub fn paths_at(&self, index: usize) -> Option<(usize, &Arc<Paths>)> {
        self.newest_paths(index, |_| true)
    }

    /// The newest paths at or before `index` from a search of every root (not a focused one,
    /// which goes through the roots that held the last finds alone).
    pub fn full_paths_at(&self, index: usize) -> Option<&Arc<Paths>> {
        self.newest_paths(index, |p| !p.focused).map(|(_, p)| p)
    }

    /// `(unreached, looked for)` of `type_name`'s samples when the newest full search at or
    /// before `index` reached none of them (`Paths::all_unreachable`) and no focused search
    /// since reached any: a focused search, which leaves roots unsearched, judges no sample
    /// dead, but one it reached is alive.
    pub fn all_unreachable_at(&self, index: usize, type_name: &str) -> Option<(u64, u64)> {
        let end = index.min(self.frames.len().checked_sub(1)?);
        for frame in self.frames[..=end].iter().rev() {
            let Some(paths) = frame.paths.as_ref() else {
                continue;
            };
            if !paths.focused {
                return paths.all_unreachable(type_name);
            }
            if paths.reached_any(type_name) {
                return None;
            }
        }
        None
    }

    /// Why `type_name`'s rise over snapshots `start..=end` is of dead objects, if a complete
    /// search says so; `objects` gives its estimated count at a snapshot. The rest is garbage
    /// awaiting a marking (generational ZGC keeps what a sample's weak reference holds through
    /// its young collections; any collector between old markings), whatever the estimates
    /// count.
    ///
    /// The newest complete search's own count first: it went through every root and counted
    /// the type's objects one by one. After most of the rise the estimates show, and holding a
    /// quarter of what they had risen by then at most, the rise is dead. Else the newest full
    /// search's samples: objects alive at the share it reached, `last` of them at most, would
    /// be no more than the `first` there were (all of them unreached is the same verdict,
    /// `all_unreachable_at`).
    pub fn dead_rise_at(
        &self,
        start: usize,
        end: usize,
        type_name: &str,
        objects: impl Fn(usize) -> u64,
    ) -> Option<DeadRise> {
        let (first, last) = (objects(start), objects(end));
        if let Some((unreached, looked_for)) = self.all_unreachable_at(end, type_name) {
            return Some(DeadRise::Unreached {
                unreached,
                looked_for,
            });
        }
        if last <= first {
            return None;
        }
        // The newest count, from a search that went through every root: the newest full
        // one may have stopped early or had no listing, where an older one counted.
        if let Some((at, counted)) = self
            .newest_paths(end, |p| !p.focused && p.complete())
            .and_then(|(at, p)| Some((at, p.counted_of(type_name)?)))
        {
            // Counted after half the rise or more (a rise made later, a leak begun since the
            // search, waits for the next full search's count), and of the rise estimated then
            // a quarter at most was there: a leak's estimates follow its count.
            let estimated = objects(at);
            let risen = estimated.saturating_sub(first);
            // Saturating: a crafted recording's counts may be anything.
            if at > start
                && risen.saturating_mul(2) >= last - first
                && counted <= first.saturating_add(risen / 4)
            {
                return Some(DeadRise::Counted {
                    objects: counted,
                    estimated,
                    at,
                });
            }
        }
        let paths = self.full_paths_at(end)?;
        let (unreached, looked_for) = paths.unreachable(type_name)?;
        if looked_for < MIN_JUDGED_SHARE {
            return None;
        }
        // The samples reached, or with their weights the objects they stand for as so many
        // samples: a type sampled by bytes has its big objects over-represented, and the
        // share of its objects alive is what a rise is made of.
        let reached = paths
            .reached_weight_share(type_name)
            .map_or(looked_for.saturating_sub(unreached) as f64, |share| {
                share * looked_for as f64
            });
        // The share reached at the top of its likely range (a binomial's two standard
        // deviations, roughly), so that a few samples' chance does not make a rise dead.
        let reached = reached + 1.0;
        let share = ((reached + 2.0 * reached.sqrt()) / looked_for as f64).min(1.0);
        (share * last as f64 <= first as f64).then_some(DeadRise::Unreached {
            unreached,
            looked_for,
        })
    }

    fn newest_paths(
        &self,
        index: usize,
        wanted: impl Fn(&Paths) -> bool,
    ) -> Option<(usize, &Arc<Paths>)> {
        let end = index.min(self.frames.len().checked_sub(1)?);
        (0..=end).rev().find_map(|i| {
            self.frames[i]
                .paths
                .as_ref()
                .filter(|p| wanted(p))
                .map(|p| (i, p))
        })
    }
}
