//! The heap's census at each GC: exact walks where they fit the budget (`census/walk/`, naming the
//! walk's field numbers with `fields.rs`), estimates from the tracked samples between them
//! (`census/estimate/`), told when the old generation was marked by canaries and the collectors'
//! counters (`canary.rs`, `collectors.rs`), and checked against the GC's own type counts
//! (`gc_counts.rs`); what a walk would stop the JVM for (`budget.rs`); the grouping tree a
//! snapshot carries (`tree.rs`).

pub(crate) mod budget;
pub(crate) mod canary;
pub(crate) mod collectors;
pub(crate) mod estimate;
pub(crate) mod fields;
pub(crate) mod gc_counts;
pub(crate) mod tree;
pub(crate) mod walk;
