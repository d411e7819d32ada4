//! The window-free core of the `memcity` command: the session model fed by live agents and
//! recordings, the headless commands, and the window-free viewer state and views the window draws.

pub mod attach;
pub mod client;
pub mod controls;
pub mod live;
pub mod record;
pub mod report;
pub mod state;
pub mod views;
pub use memcity_city::units;
