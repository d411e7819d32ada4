//! What a holder rests on: how sure the paths make it (`Confidence`), how they split over the
//! roots (`Alternative`, `describe_split`), and the object-level `Evidence` a suspect carries
//! into the report.

use crate::leak::paths::HolderIn;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Confidence {
    /// The sampled paths agree: 80 % of the leak's weight passes through the holder (and a
    /// pool's co-holders), on enough samples or on counts that back them.
    Exact,
    /// The paths split, and the holder's branch holds most of them.
    Likely,
    /// Too few paths, or no branch holds most: the alternatives are named.
    #[default]
    Ambiguous,
}

impl Confidence {
    pub fn label(self) -> &'static str {
        match self {
            Confidence::Exact => "exact",
            Confidence::Likely => "likely",
            Confidence::Ambiguous => "ambiguous",
        }
    }
}

/// The object-level evidence behind a suspect (see `holders.rs`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evidence {
    /// Sampled objects of the leaking type the paths reached, and how many of them pass
    /// through the holder.
    pub samples: u64,
    pub through_holder: u64,
    /// Share of the type's sampled weight through the holder (co-holders included).
    pub share: f64,
    /// How the paths split over roots ("83 % through ..., 17 % through ..."), empty when one
    /// root holds them all.
    pub split: String,
    /// When the search that found the paths finished (ms since the session's start), and how
    /// much older that is than the window's end.
    pub witnessed_ms: u64,
    pub age_ms: u64,
    /// Growth of the leaking type since the paths were found; when it is more than the type
    /// had then, the holder is not known to hold the new objects (`stale`).
    pub growth_since: i64,
    pub stale: bool,
    /// Objects of the leaking types the search counted one by one, and those it reached from
    /// the holder's root (and co-holders): counts, not samples.
    pub counted: u64,
    pub counted_through: u64,
    /// Identity hash of the holder instance (tells two instances of one type apart).
    pub holder_identity: u32,
    /// Where the holder sits: the field of the object above it, or the root for a root's own
    /// object ("the `ConcurrentHashMap` in `DefaultSessionCache._sessions`").
    pub holder_in: HolderIn,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Alternative {
    pub root: String,
    pub share: f64,
    pub samples: u64,
}

/// A short, stable rendering of how a type's paths split: "83 % through static A.B, 17 %
/// through thread \"w\"".
pub fn describe_split(main_root: &str, main_share: f64, alternatives: &[Alternative]) -> String {
    let mut parts = vec![format!("{:.0} % through {main_root}", main_share * 100.0)];
    for a in alternatives.iter().take(3) {
        parts.push(format!("{:.0} % through {}", a.share * 100.0, a.root));
    }
    if alternatives.len() > 3 {
        let rest: f64 = alternatives[3..].iter().map(|a| a.share).sum();
        parts.push(format!(
            "{:.0} % through {} more roots",
            rest * 100.0,
            alternatives.len() - 3
        ));
    }
    parts.join(", ")
}
