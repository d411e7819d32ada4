//! The subcommands, each a struct clap fills and the function that runs it, a file by what
//! they do: a live agent asked something (`agent.rs`), recorded (`record.rs`), served
//! (`serve.rs`) or watched in the window with a recording or the demo (`window.rs`, drawn as
//! `look.rs` says); a recording read (`report.rs`, `lifetimes.rs`, `export.rs`); the local JVMs
//! (`local.rs`). Values they take are checked by the parsers in `values.rs`.

use anyhow::Context;

pub mod agent;
pub mod dumps;
pub mod export;
pub mod lifetimes;
pub mod local;
pub mod look;
pub mod record;
pub mod report;
pub mod serve;
pub mod values;
pub mod window;

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
