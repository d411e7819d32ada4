//! The commands that open the window: a recording replayed, a live agent viewed, the demo.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use memcity_viewer::app;

use super::agent::Agent;
use super::look::Look;
use super::values::{png, seconds, window_size, Size};
use crate::demo;

#[derive(clap::Args)]
pub struct ReplayArgs {
    /// A recording, a heap dump (.hprof, .hprof.gz), a folder of heap dumps (a series), or a
    /// Memory Cities JSON export folder
    source: PathBuf,
    /// Heap dumps: more of them, read with SOURCE as one series
    more: Vec<PathBuf>,
    /// Snapshot to show first, counted from 1 as the status bar counts (default the last)
    #[arg(long)]
    at: Option<usize>,
    /// Timeline view: snapshots to show side by side (besides the current one), counted
    /// from 1, e.g. --pick 1,5,9
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pick: Vec<usize>,
    /// Render one frame to this PNG and exit
    #[arg(long, value_parser = png)]
    screenshot: Option<PathBuf>,
    /// Window size, WIDTHxHEIGHT
    #[arg(long, default_value = "1280x720", value_parser = window_size)]
    size: Size,
    /// The camera to start with
    #[arg(long, value_enum, default_value = "overview")]
    camera: app::CameraView,
    /// Start with this group selected (its references shown): names from the top level down,
    /// separated by '/', e.g. "java.util/java.util.LinkedList$Node"
    #[arg(long)]
    select: Option<String>,
    /// The lifetimes view: start with this allocation context in focus (its survival panel
    /// shown), a class as `memcity lifetimes FILE` names it, e.g. com.example.Cache
    #[arg(long, value_name = "CLASS")]
    context: Option<String>,
    /// Benchmark: time N still frames and N time-travel steps, print the medians, exit
    /// (scripts/bench-viewer.sh; not for users)
    #[arg(long, value_name = "N", hide = true)]
    bench_frames: Option<usize>,
    /// For --screenshot: draw the panels and bars too, as in the window
    #[arg(long)]
    hud: bool,
    #[command(flatten)]
    look: Look,
    #[command(flatten)]
    dumps: super::dumps::DumpArgs,
}

#[derive(clap::Args)]
pub struct DemoArgs {
    /// How long the app runs, seconds
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// For scripts: render one frame to this PNG (after --exit-after snapshots) and exit
    #[arg(long, value_parser = png)]
    screenshot: Option<PathBuf>,
    /// For scripts: exit once this many snapshots arrived
    #[arg(long)]
    exit_after: Option<usize>,
    /// For --screenshot: draw the panels and bars too, as in the window
    #[arg(long)]
    hud: bool,
    #[command(flatten)]
    look: Look,
}

#[derive(clap::Args)]
pub struct ViewArgs {
    #[command(flatten)]
    agent: Agent,
    /// Also write what arrives to this recording
    #[arg(long)]
    record: Option<PathBuf>,
    /// For scripts: render one frame to this PNG (after --exit-after snapshots) and exit
    #[arg(long, value_parser = png)]
    screenshot: Option<PathBuf>,
    /// For scripts: exit once this many snapshots arrived
    #[arg(long)]
    exit_after: Option<usize>,
    /// For --screenshot: give up (an error) when the snapshots have not arrived within this
    /// many seconds
    #[arg(long, default_value = "60", value_parser = seconds)]
    wait: Duration,
    /// Window size, WIDTHxHEIGHT
    #[arg(long, default_value = "1280x720", value_parser = window_size)]
    size: Size,
    /// The camera to start with
    #[arg(long, value_enum, default_value = "overview")]
    camera: app::CameraView,
    /// For --screenshot: draw the panels and bars too, as in the window
    #[arg(long)]
    hud: bool,
    #[command(flatten)]
    look: Look,
}

pub fn replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    check_hud(args.screenshot.as_deref(), args.hud)?;
    let model = args.dumps.load_all(&args.source, &args.more)?;
    app::replay_model(
        &args.source,
        model,
        app::WindowOptions {
            camera: args.camera,
            at: args.at,
            picks: args.pick,
            screenshot: args.screenshot,
            select: args.select,
            context: args.context,
            bench_frames: args.bench_frames,
            hud: args.hud,
            group_by: args.dumps.group_by.map(|c| c.0),
            ..args.look.window(args.size)
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

pub fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    check_hud(args.screenshot.as_deref(), args.hud)?;
    demo::run(
        args.seconds,
        app::WindowOptions {
            screenshot: args.screenshot,
            exit_after: args.exit_after,
            hud: args.hud,
            ..args.look.window(Size::DEFAULT)
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

pub fn view(args: ViewArgs) -> anyhow::Result<ExitCode> {
    check_hud(args.screenshot.as_deref(), args.hud)?;
    app::view(
        args.agent.address()?,
        args.record,
        app::WindowOptions {
            camera: args.camera,
            screenshot: args.screenshot,
            exit_after: args.exit_after,
            wait: args.wait,
            hud: args.hud,
            ..args.look.window(args.size)
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `--hud` only means something for a screenshot (the window always shows its panels). Checked
/// here rather than with clap's `requires`, whose message would not say why.
fn check_hud(screenshot: Option<&Path>, hud: bool) -> anyhow::Result<()> {
    if hud && screenshot.is_none() {
        anyhow::bail!(
            "--hud draws the panels into a --screenshot; without one, the window shows them anyway"
        );
    }
    Ok(())
}
