//! Which snapshots of a long history stay when it is thinned to fit a budget: of each step of an
//! even grid in time, the one that says the most (a quarter to a half of them stay, as the step
//! is two to four times their mean spacing). Shared by the model (`CityModel::thin`) and by
//! a recording kept under a size (`capped.rs`), so a thinned file and a thinned model keep the
//! same snapshots.
//!
//! The step is a power of two of milliseconds, twice the candidates' mean spacing rounded up, counted
//! from the first candidate's time: each halving's grid then nests in the next one's, so what
//! one pass kept (the first of its step, on ties) is the first of the next pass's step, and the
//! history stays evenly spaced in time, as trends fitted over seconds want it. A stretch that
//! was thinned before halves again; a newer, denser one thins more.

/// A snapshot as the thinning sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub time_ms: u64,
    /// What it says beyond its numbers: 2 for object paths, 1 for a walk (exact, with its
    /// references), 0 for an estimate. Of a step, the highest stays.
    pub rank: u8,
    /// Kept whatever the grid says (the first snapshot, a window's end, an out-of-memory one).
    pub protected: bool,
}

/// Snapshots at the end of a history that a thinning leaves whole, however long the session:
/// at least this many, and as many more as fit a quarter of the budget.
pub const NEWEST_KEPT: usize = 16;

/// Where the newest part of a history begins that stays whole when it is thinned to `budget`
/// bytes: `entries` are `(bytes, is a snapshot)` in order (other messages ride along), and the
/// newest [`NEWEST_KEPT`] snapshots, and more within a quarter of the budget, are kept.
pub fn newest_from(entries: &[(u64, bool)], budget: u64) -> usize {
    let (mut bytes, mut snapshots, mut from) = (0, 0, entries.len());
    while from > 0 {
        let (len, snapshot) = entries[from - 1];
        if snapshot {
            if snapshots >= NEWEST_KEPT && bytes + len > budget / 4 {
                break;
            }
            snapshots += 1;
        }
        bytes += len;
        from -= 1;
    }
    from
}

/// The rank of a snapshot that carries `paths` and is a walk (`exact`) or an estimate.
pub fn rank(paths: bool, exact: bool) -> u8 {
    u8::from(paths) * 2 + u8::from(exact)
}

/// Whether each of `candidates` (in time order) stays: the protected ones, and one per step.
pub fn keep_evenly(candidates: &[Candidate]) -> Vec<bool> {
    let mut keep: Vec<bool> = candidates.iter().map(|c| c.protected).collect();
    let (Some(first), Some(last)) = (candidates.first(), candidates.last()) else {
        return keep;
    };
    if candidates.len() < 2 {
        return vec![true; candidates.len()];
    }
    let t0 = first.time_ms;
    let span = last.time_ms.saturating_sub(t0);
    let step = (span.saturating_mul(2) / candidates.len() as u64)
        .max(1)
        .next_power_of_two();
    // The best of the current step so far: (step number, index).
    let mut best: Option<(u64, usize)> = None;
    for (i, c) in candidates.iter().enumerate() {
        if c.protected {
            continue;
        }
        let cell = c.time_ms.saturating_sub(t0) / step;
        match best {
            Some((at, b)) if at == cell => {
                if c.rank > candidates[b].rank {
                    best = Some((cell, i));
                }
            }
            _ => {
                if let Some((_, b)) = best {
                    keep[b] = true;
                }
                best = Some((cell, i));
            }
        }
    }
    if let Some((_, b)) = best {
        keep[b] = true;
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_second(n: u64, rank: impl Fn(u64) -> u8) -> Vec<Candidate> {
        (0..n)
            .map(|i| Candidate {
                time_ms: i * 1000,
                rank: rank(i),
                protected: false,
            })
            .collect()
    }

    #[test]
    fn about_half_stay_evenly_and_the_best_of_each_step() {
        let candidates = every_second(1000, |i| u8::from(i % 10 == 3));
        let keep = keep_evenly(&candidates);
        let kept: Vec<u64> = (0..1000).filter(|&i| keep[i as usize]).collect();
        // Steps of 2,048 ms: two or three snapshots each, the walk where there is one.
        assert!((480..=500).contains(&kept.len()), "{kept:?}");
        assert!(kept
            .iter()
            .all(|i| candidates[*i as usize].rank == 1 || i % 10 != 3));
        assert!(kept.contains(&3) && kept.contains(&13) && !kept.contains(&2));
    }

    #[test]
    fn a_halved_history_halves_again_on_the_same_grid() {
        let once = every_second(4096, |_| 0);
        let keep = keep_evenly(&once);
        let twice: Vec<Candidate> = once
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(c, _)| *c)
            .collect();
        let keep = keep_evenly(&twice);
        let times: Vec<u64> = twice
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(c, _)| c.time_ms)
            .collect();
        let gaps: std::collections::BTreeSet<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        // Steps of 4,096 ms over snapshots a second apart.
        assert_eq!(
            gaps.into_iter().collect::<Vec<_>>(),
            [4000, 5000],
            "evenly spaced"
        );
    }

    #[test]
    fn protected_ones_stay_and_small_histories_are_whole() {
        let mut candidates = every_second(100, |_| 0);
        candidates[51].protected = true;
        assert!(keep_evenly(&candidates)[51]);
        assert_eq!(keep_evenly(&candidates[..1]), [true]);
        assert!(keep_evenly(&[]).is_empty());
    }
}
