//! The `memcity` command's library: the session model fed by live agents and recordings, the
//! headless commands, the viewer's window-free state and views, and the window that draws them.
//! The window also runs in the browser: built for `wasm32-unknown-unknown`, this library keeps
//! the viewer (state, views, drawing) and leaves out what needs the network stack, files or
//! processes (the agent client, recording, attaching).

pub mod app;
#[cfg(not(target_arch = "wasm32"))]
pub mod as_user;
#[cfg(not(target_arch = "wasm32"))]
pub mod attach;
pub mod caches;
#[cfg(not(target_arch = "wasm32"))]
pub mod client;
pub mod controls;
pub mod hive_view;
pub mod hud;
pub mod keys;
pub mod lifetimes;
pub mod live;
pub mod names;
pub mod page_look;
pub mod plan;
pub mod pointer;
#[cfg(not(target_arch = "wasm32"))]
pub mod record;
pub mod render;
pub mod report;
#[cfg(not(target_arch = "wasm32"))]
pub mod serve;
pub mod state;
pub mod status_bar;
#[cfg(test)]
mod testing;
pub mod tree_view;
pub mod views;
pub use memcity_city::units;
