//! The memory city, without a window: everything that decides what the city looks like, as
//! plain data and pure functions, so it is tested with `cargo test`. The viewer only draws it.
//! The papers in shared/papers are the specification; sections are cited where numbers come from.

pub mod camera;
pub mod details;
pub mod export;
#[doc(hidden)]
pub mod fuzzing;
pub mod hive;
pub mod layout;
pub mod leak;
pub mod lifetimes;
pub mod load;
pub mod mapping;
pub mod model;
pub mod names;
pub mod pprof;
pub mod scene;
pub mod timeline;
pub mod timetravel;
pub mod tree2d;
pub mod treemap;
pub mod units;
