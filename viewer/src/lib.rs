//! The window-free core of the `memcity` command: the session model fed by live agents and
//! recordings, the headless commands, and (in later milestones) the city model the viewer draws.

pub mod attach;
pub mod client;
pub mod controls;
pub mod live;
pub mod record;
pub mod report;
pub use memcity_city::units;
