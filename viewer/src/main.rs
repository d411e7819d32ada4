//! `memcity`: watch a Java application's heap as a memory city.
//!
//! The command line is data: each subcommand is a struct clap fills and checks (values through
//! the parsers at the end of this file), and one function per subcommand runs it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod demo;
mod jvms;

use memcity_city::model::CityModel;
use memcity_proto::v1::{SetClassifiersRequest, SnapshotRequest};
use memcity_viewer::app;
use memcity_viewer::controls::Settings;
use memcity_viewer::record::{self, Ended, RecordOptions};
use memcity_viewer::report::At;
use memcity_viewer::serve::{self, ServeOptions, Session};
use memcity_viewer::{client, report, units};

#[derive(Parser)]
#[command(
    name = "memcity",
    version,
    about = "Watch a Java application's heap as a memory city",
    long_about = "Watch a Java application's heap as a memory city.\n\n\
Start the JVM with the agent:   java -agentpath:/path/to/libmemcity.so -jar app.jar\n\
then record and report:         memcity record -o app.mcrec --duration 60 && memcity report app.mcrec",
    after_help = "ADDR is the agent's HOST:PORT (default 127.0.0.1:7788; a bare port means 127.0.0.1). Agents want a token: memcity reads a local agent's from its run directory, $TMPDIR/memcity-<uid>; give a remote one's with --token or MEMCITY_TOKEN."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The agent's access token, for an agent on another machine or of another user (a local
    /// agent's is found in its run directory; also MEMCITY_TOKEN)
    #[arg(long, global = true, value_name = "TOKEN")]
    token: Option<String>,
    /// For an https:// agent (tls_cert=): the CA certificate (PEM) that signed the agent's
    /// certificate (also MEMCITY_CA)
    #[arg(long, global = true, value_name = "FILE")]
    ca: Option<std::path::PathBuf>,
    /// Memory a session's snapshots may take before its older history is thinned to an even
    /// step in time (default 384m; the first and the newest snapshots and a window's ends stay
    /// whole)
    #[arg(long, global = true, value_name = "SIZE", value_parser = memory)]
    memory: Option<u64>,
}

/// `--memory`: a size of at least 1m.
fn memory(value: &str) -> Result<u64, String> {
    memcity_proto::options::parse_bytes_at_least(value, "to hold a session")
}

/// Which agent a command talks to, the same way in every command: its address, or the pid of
/// its JVM (found, or attached to, by `jvms::address_of`).
#[derive(clap::Args)]
struct Agent {
    /// Agent address, HOST:PORT (default 127.0.0.1:7788)
    addr: Option<String>,
    /// Use the JVM with this pid instead, attaching memcity first if it is not running
    #[arg(long, conflicts_with = "addr")]
    pid: Option<u32>,
}

impl Agent {
    /// The address to connect to (`None`: the default one); for `--pid`, the address of the
    /// agent in that JVM, loaded there first if needed.
    fn address(self) -> anyhow::Result<Option<String>> {
        match self.pid {
            Some(pid) => jvms::address_of(pid).map(Some),
            None => Ok(self.addr),
        }
    }
}

/// How the city is drawn; the settings panel (Tab) changes the same things in the window.
#[derive(clap::Args, Clone)]
struct Look {
    /// Size buildings by live objects or by bytes
    #[arg(long, value_enum, default_value = "objects")]
    metric: MetricArg,
    /// How a size maps to an area
    #[arg(long, value_enum, default_value = "sqrt")]
    scaling: ScalingArg,
    /// How lots are cut (treemap tiling)
    #[arg(long, value_enum, default_value = "squarify")]
    tiling: TilingArg,
    /// Lots per parent: the N largest children get one (Memory Cities' pruning)
    #[arg(long, default_value_t = 20, value_parser = lots)]
    children: usize,
    /// The N strongest growers stay solid, the rest fade (0: every building solid)
    #[arg(long, default_value_t = memcity_city::mapping::DEFAULT_OPAQUE)]
    solid: usize,
    /// Seconds per snapshot when playing
    #[arg(long, default_value_t = memcity_city::timetravel::DEFAULT_PERIOD, value_parser = period)]
    period: f64,
    /// Open with the settings panel shown
    #[arg(long)]
    settings: bool,
    /// What the window shows: the 3D city, the grouping tree as an icicle or a sunburst, or the
    /// timeline of small trees (key V switches)
    #[arg(long, value_enum, default_value = "city")]
    view: app::ViewKind,
    /// Icicle and sunburst: start drilled down into this group (names from the top level down,
    /// separated by '/')
    #[arg(long, value_name = "GROUP")]
    drill: Option<String>,
    /// Icicle and sunburst: the order of siblings, fixed over the session (most grown over the
    /// window first, or largest at its start or end)
    #[arg(long, value_enum, default_value = "growth")]
    order: OrderArg,
    /// Icicle and sunburst: scale each snapshot's tree by its heap against the largest, so
    /// growth shows as length (key H)
    #[arg(long)]
    heap_scaled: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum OrderArg {
    Growth,
    Start,
    End,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum MetricArg {
    Objects,
    Bytes,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ScalingArg {
    Sqrt,
    Linear,
    Quadratic,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum TilingArg {
    Squarify,
    Binary,
    Slice,
    Dice,
    SliceDice,
}

impl Look {
    /// Window options with these settings, a window of `size` and every script option off;
    /// commands set the ones they have.
    fn window(&self, size: Size) -> app::WindowOptions {
        app::WindowOptions {
            camera: app::CameraView::Overview,
            view: self.view,
            drill: self.drill.clone(),
            scaled: self.heap_scaled,
            picks: Vec::new(),
            at: None,
            screenshot: None,
            exit_after: None,
            wait: Duration::from_secs(60),
            select: None,
            context: None,
            bench_frames: None,
            settings: self.settings(),
            settings_open: self.settings,
            hud: false,
            width: size.width,
            height: size.height,
        }
    }

    fn settings(&self) -> Settings {
        use memcity_city::layout::Scaling;
        use memcity_city::model::Metric;
        use memcity_city::treemap::Tiling;
        let mut settings = Settings {
            metric: match self.metric {
                MetricArg::Objects => Metric::Objects,
                MetricArg::Bytes => Metric::Bytes,
            },
            scaling: match self.scaling {
                ScalingArg::Sqrt => Scaling::Sqrt,
                ScalingArg::Linear => Scaling::Linear,
                ScalingArg::Quadratic => Scaling::Quadratic,
            },
            tiling: match self.tiling {
                TilingArg::Squarify => Tiling::Squarify,
                TilingArg::Binary => Tiling::Binary,
                TilingArg::Slice => Tiling::Slice,
                TilingArg::Dice => Tiling::Dice,
                TilingArg::SliceDice => Tiling::SliceDice,
            },
            children: self.children,
            period: self.period,
            order: match self.order {
                OrderArg::Growth => memcity_city::tree2d::SortBy::Growth,
                OrderArg::Start => memcity_city::tree2d::SortBy::Start,
                OrderArg::End => memcity_city::tree2d::SortBy::End,
            },
            ..Default::default()
        };
        settings.opacity.enabled = self.solid > 0;
        settings.opacity.opaque = self.solid.max(1);
        settings
    }
}

#[derive(Subcommand)]
enum Command {
    /// Connect to a live agent and write its session to a recording file
    Record(RecordArgs),
    /// Name the leak suspects of a recording and rank its groups by growth over a window
    Report(ReportArgs),
    /// Where a recording's sampled objects were born and where they died
    ///
    /// Prints allocation -> death context pairs with their ages, and the allocation sites whose
    /// objects escape the nursery and then die. The death context is the class a heap walk last saw holding the object: a stock JVM
    /// cannot tell the method that dropped an object's last reference.
    Lifetimes(LifetimesArgs),
    /// Write a session for other tools: the Memory Cities JSON format, or a snapshot's live heap
    /// as a pprof profile (go tool pprof, Pyroscope)
    Export(ExportArgs),
    /// Open a recording (or a Memory Cities JSON export folder) as a 3D memory city
    Replay(ReplayArgs),
    /// Start a bundled leaking Java app with the agent and watch it live
    Demo(DemoArgs),
    /// Serve the city as a web page for a browser: a recording, a Memory Cities export, or a
    /// live agent
    ///
    /// Nothing to install where the browser runs; a server's JVM is reached through an SSH
    /// tunnel (ssh -L 8080:127.0.0.1:8080 HOST, then memcity serve --pid PID there).
    Serve(ServeArgs),
    /// Watch a live agent's heap grow as a 3D memory city
    View(ViewArgs),
    /// Ask a live agent for an exact snapshot (a heap walk) now, outside its GC schedule
    ///
    /// A walk predicted to stop the application past the agent's max_pause, or past what its
    /// pause budget has earned, is refused (exit code 3) with the predicted stop.
    Snapshot(SnapshotArgs),
    /// List the local JVMs: pid, JDK, user, whether memcity runs there, main class or jar
    List,
    /// Load the agent into a running JVM
    ///
    /// OPTIONS are the agent's key=value options, as after -agentpath:libmemcity.so= (a free
    /// port unless port= is given). As root, memcity attaches to any user's JVM, and copies the
    /// library into the JVM's /tmp when the JVM cannot read it or has its own /tmp.
    Attach(AttachArgs),
    /// Stop the agent in a running JVM: its session ends (the recording is finalized), the port
    /// closes, and the application runs on as before; it can be attached again
    Detach {
        /// The JVM's process id
        pid: u32,
    },
    /// Change a live agent's classifier chain, e.g. `type:site`
    Classifiers(ClassifiersArgs),
}

#[derive(clap::Args)]
struct RecordArgs {
    #[command(flatten)]
    agent: Agent,
    /// Recording file to write (conventionally *.mcrec)
    #[arg(short, long)]
    output: PathBuf,
    /// Stop after this many snapshots (a late join counts the history it receives)
    #[arg(long)]
    snapshots: Option<u64>,
    /// Stop after this many seconds
    #[arg(long, value_parser = seconds)]
    duration: Option<Duration>,
    /// Keep trying to connect for this many seconds (the JVM may still be starting)
    #[arg(long, default_value = "10", value_parser = seconds)]
    wait: Duration,
    /// Keep the file under this size (`512m`, `2g`; at least 1m), to record for days: past
    /// it, about half of the older snapshots go, evenly in time (walks and snapshots with
    /// object paths first); the first snapshot and the newest stay, and the report says how
    /// many went
    #[arg(long, value_parser = memcity_proto::options::parse_max_size)]
    max_size: Option<u64>,
}

#[derive(clap::Args)]
struct ReportArgs {
    /// A recording, or a Memory Cities JSON export folder
    file: PathBuf,
    /// A second recording of the same application: report what grew from FILE's snapshot
    /// (`--from`, default its last) to this one's (`--to`, default its last)
    against: Option<PathBuf>,
    /// Show the K strongest growers (0 or a large K shows every group)
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Print JSON for scripts instead of a table
    #[arg(long)]
    json: bool,
    /// References of the last snapshot to list in the table
    #[arg(long, default_value_t = 10)]
    references: usize,
    /// Start of the growth window: a snapshot number (1 is the first, as the viewer counts)
    /// or seconds since the session started (`12s`). Default: the first snapshot after the
    /// VM-start one
    #[arg(long)]
    from: Option<At>,
    /// End of the growth window, as `--from`. Default: the last snapshot
    #[arg(long)]
    to: Option<At>,
}

#[derive(clap::Args)]
struct LifetimesArgs {
    /// A recording (a Memory Cities export holds no lifetimes)
    file: PathBuf,
    /// Show the K largest pairs and the K sites escaping most (0 shows all)
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Count only deaths at least this many GCs old in the pairs: 0, 1, 2, 4, 8, 16 or 32 (the
    /// agent's age buckets)
    #[arg(long, default_value_t = 0, value_parser = gc_age)]
    min_gcs: u64,
    /// Print JSON for scripts instead of tables
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
#[command(group(
    clap::ArgGroup::new("outputs")
        .args(["memory_cities", "pprof"])
        .required(true)
        .multiple(true)
))]
struct ExportArgs {
    /// A recording, or a Memory Cities JSON export folder
    source: PathBuf,
    /// Write the whole session as a Memory Cities JSON folder (created; its classifier folder
    /// is replaced file by file)
    #[arg(long, value_name = "DIR")]
    memory_cities: Option<PathBuf>,
    /// Write one snapshot's live heap as a gzipped pprof profile: objects (inuse_objects) and
    /// bytes (inuse_space) by allocation stack, the allocated type as the leaf frame. Needs
    /// allocation sites: a `site` level (classifiers=package:type:site) or the agent's lifetimes
    #[arg(long, value_name = "FILE")]
    pprof: Option<PathBuf>,
    /// The profile's snapshot: a number counted from 1 as the viewer's status bar counts, or
    /// seconds since the session started (`12s`). Default: the last
    #[arg(long, requires = "pprof")]
    at: Option<At>,
    /// Profile the growth since this snapshot (given as --at) instead: each stack's values at
    /// --at less those here, negative where it shrank
    #[arg(long, requires = "pprof")]
    since: Option<At>,
}

#[derive(clap::Args)]
struct ReplayArgs {
    /// Recording file, or Memory Cities JSON export folder
    source: PathBuf,
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
}

#[derive(clap::Args)]
struct DemoArgs {
    /// How long the app runs, seconds
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// For scripts: render one frame to this PNG (after --exit-after snapshots) and exit
    #[arg(long, value_parser = png)]
    screenshot: Option<PathBuf>,
    /// For scripts: exit once this many snapshots arrived
    #[arg(long)]
    exit_after: Option<usize>,
    #[command(flatten)]
    look: Look,
}

/// Serve's positional is more than an agent's address: a recording or an export folder too.
#[derive(clap::Args)]
#[command(mut_arg("addr", |arg| arg.value_name("SOURCE").help(
    "A recording (.mcrec), a Memory Cities export folder, or the agent's address HOST:PORT \
     (default: the agent at 127.0.0.1:7788)"
)))]
struct ServeArgs {
    #[command(flatten)]
    source: Agent,
    /// The port to serve on (0: a free one, printed)
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// The address to listen on; beyond loopback it needs --tls-cert and --tls-key
    #[arg(long, default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// Serve HTTPS with this PEM certificate (chain)
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve a --bind beyond loopback without TLS (the page and its token in clear)
    #[arg(long)]
    insecure: bool,
}

#[derive(clap::Args)]
struct ViewArgs {
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

#[derive(clap::Args)]
struct SnapshotArgs {
    #[command(flatten)]
    agent: Agent,
    /// Walk even when the predicted stop is past max_pause or the budget
    #[arg(long)]
    force: bool,
}

#[derive(clap::Args)]
struct AttachArgs {
    /// The JVM's process id (memcity list)
    pid: u32,
    /// Agent options, e.g. `classifiers=type:site,record=/tmp/app.mcrec`
    options: Option<String>,
    /// The agent library to load (default: the libmemcity.so beside this binary)
    #[arg(long)]
    lib: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ClassifiersArgs {
    /// Chain of package, type, site, thread, separated by ':'
    chain: String,
    #[command(flatten)]
    agent: Agent,
    /// The same as ADDR (the older spelling)
    #[arg(long = "addr", value_name = "ADDR", hide = true, conflicts_with_all = ["addr", "pid"])]
    addr_flag: Option<String>,
}

/// The command line, with the version, the commit and the protocol under `--version`.
fn cli() -> Cli {
    let command = Cli::command().version(memcity_proto::version_line(env!("CARGO_PKG_VERSION")));
    Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit())
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = cli();
    if let Some(token) = cli.token.clone() {
        client::set_token(token);
    }
    if let Some(ca) = cli.ca.clone() {
        client::set_ca(ca);
    }
    if let Some(bytes) = cli.memory {
        memcity_city::model::set_detail_budget_for_new_models(
            usize::try_from(bytes).unwrap_or(usize::MAX),
        );
    }
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("memcity: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Printing into a closed pipe (`memcity report --json F | head -1`) ends the process quietly,
/// as it ends `cat` or `grep`: by SIGPIPE. Not by leaving SIGPIPE at its default action for the
/// whole process, which Rust ignores for a reason: a write to a socket the peer closed (an
/// agent that went, or closed the connection) would then kill memcity without a word instead
/// of failing with a message. `print!` panics on a closed stdout; this hook turns that one
/// panic into the signal, and leaves every other panic to the default hook.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("os error 32") {
            // SAFETY: restoring the default action and raising the signal ends the process, as
            // a write into a closed pipe would have without Rust's SIG_IGN.
            unsafe {
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                libc::raise(libc::SIGPIPE);
            }
        }
        default(info);
    }));
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Record(args) => record(args),
        Command::Report(args) => report(args),
        Command::Lifetimes(args) => lifetimes(args),
        Command::Export(args) => export(args),
        Command::Replay(args) => replay(args),
        Command::Demo(args) => demo(args),
        Command::Serve(args) => serve(args),
        Command::View(args) => view(args),
        Command::Snapshot(args) => snapshot(args),
        Command::List => list(),
        Command::Attach(args) => attach(args),
        Command::Detach { pid } => detach(pid),
        Command::Classifiers(args) => classifiers(args),
    }
}

fn record(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let options = RecordOptions {
        addr: args.agent.address()?,
        output: args.output.clone(),
        snapshots: args.snapshots,
        duration: args.duration,
        connect_wait: args.wait,
        progress: true,
        max_size: args.max_size,
    };
    let summary = runtime()?.block_on(record::record(options))?;
    eprintln!(
        "memcity: wrote {} snapshots ({}) to {}: {}",
        summary.snapshots,
        units::bytes(summary.bytes),
        args.output.display(),
        why_ended(&summary.ended)
    );
    if summary.thinned > 0 {
        eprintln!(
            "memcity: {} older snapshots of them were thinned out to stay under --max-size ({}); the first and the newest are whole",
            summary.thinned,
            units::bytes(args.max_size.unwrap_or_default())
        );
    }
    if summary.snapshots == 0 {
        anyhow::bail!("no snapshot was received, so the recording holds only its header");
    }
    Ok(ExitCode::SUCCESS)
}

/// Why a recording stopped, as the summary line says it.
fn why_ended(ended: &Ended) -> String {
    match ended {
        Ended::Count => "snapshot count reached".to_string(),
        Ended::Duration => "duration reached".to_string(),
        Ended::SessionEnd(reason) => format!("the session ended ({reason})"),
        Ended::Disconnected(why) => format!("the agent went away ({why}); the JVM probably exited"),
        Ended::Interrupted => "interrupted".to_string(),
    }
}

fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let session = memcity_city::load::session(&args.source)?;
    for warning in &session.warnings {
        eprintln!("memcity: warning: {warning}");
    }
    if session.is_empty() {
        anyhow::bail!("{} holds no snapshot to export", args.source.display());
    }
    if let Some(file) = &args.pprof {
        export_pprof(&session, file, args.at, args.since)?;
    }
    if let Some(folder) = &args.memory_cities {
        let written = memcity_city::export::memory_cities_json(&session, folder)
            .with_context(|| format!("cannot write {}", folder.display()))?;
        println!(
            "memcity: wrote {} snapshots to {} (open it with `memcity replay` or the original Memory Cities tool)",
            written.snapshots,
            written.folder.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `export --pprof FILE [--at N] [--since N]`.
fn export_pprof(
    session: &CityModel,
    file: &Path,
    at: Option<At>,
    since: Option<At>,
) -> anyhow::Result<()> {
    use memcity_city::pprof::{self, SiteSource};
    let at = match at {
        Some(at) => report::snapshot_at(session, at)?,
        None => session.len() - 1,
    };
    let since = since.map(|s| report::snapshot_at(session, s)).transpose()?;
    if let Some(since) = since.filter(|&s| s >= at) {
        anyhow::bail!(
            "--since (snapshot {}) must come before --at (snapshot {}): the growth runs from the earlier to the later{}",
            since + 1,
            at + 1,
            if at + 1 == session.len() {
                " (--at defaults to the last snapshot)"
            } else {
                ""
            }
        );
    }
    let built = pprof::heap_profile(session, at, since)?;
    let bytes = pprof::encode_gzipped(&built.profile);
    memcity_proto::files::replace(file, &bytes)
        .with_context(|| format!("cannot write {}", file.display()))?;
    let what = match since {
        None => format!("the live heap at snapshot {} of {}", at + 1, session.len()),
        Some(since) => format!(
            "the growth from snapshot {} to {} of {}",
            since + 1,
            at + 1,
            session.len()
        ),
    };
    println!(
        "memcity: wrote {}: {what} as a pprof profile, {} samples, {} stacks, {} gzipped (go tool pprof -top {})",
        file.display(),
        built.profile.sample.len(),
        built.stacks,
        units::bytes(bytes.len() as u64),
        file.display()
    );
    if built.sites == SiteSource::Survivors {
        println!(
            "memcity: this session has no site level, so the sites come from the lifetimes' survivors (one sample in {} records its site): coarser numbers, as the profile's comment says; record with classifiers=package:type:site for the full sample",
            pprof::LIFETIME_SITES_EVERY
        );
    }
    Ok(())
}

fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let session = memcity_city::load::session(&args.file)?;
    let (session, source) = match &args.against {
        Some(other) => compare(&session, &args, other)?,
        None => (
            windowed(session, args.from, args.to)?,
            args.file.display().to_string(),
        ),
    };
    let top = if args.top == 0 { usize::MAX } else { args.top };
    let report = report::build(&session, top)
        .with_context(|| format!("cannot report on {}", args.file.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report::render_text(&report, &source, args.references));
    }
    for warning in &report.warnings {
        eprintln!("memcity: warning: {warning}");
    }
    Ok(ExitCode::SUCCESS)
}

fn lifetimes(args: LifetimesArgs) -> anyhow::Result<ExitCode> {
    if args.file.is_dir() {
        anyhow::bail!(
            "{} is a Memory Cities export, which has no place for lifetimes: give a memcity recording",
            args.file.display()
        );
    }
    let session = memcity_city::load::session(&args.file)?;
    for warning in &session.warnings {
        eprintln!("memcity: warning: {warning}");
    }
    let top = if args.top == 0 { usize::MAX } else { args.top };
    let report = memcity_viewer::lifetimes::build(&session, args.min_gcs, top)
        .with_context(|| format!("no lifetimes in {}", args.file.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!(
            "{}",
            memcity_viewer::lifetimes::render_text(&report, &args.file.display().to_string())
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `report FILE AGAINST`: one session holding the growth from FILE's `--from` snapshot to
/// AGAINST's `--to` one (each by default its last), and the line that names the two.
fn compare(
    first: &CityModel,
    args: &ReportArgs,
    other: &Path,
) -> anyhow::Result<(CityModel, String)> {
    let second = memcity_city::load::session(other)?;
    let a = compared_snapshot(first, &args.file, args.from)?;
    let b = compared_snapshot(&second, other, args.to)?;
    let source = format!(
        "{} snapshot {} against {} snapshot {}",
        args.file.display(),
        a + 1,
        other.display(),
        b + 1
    );
    let session = CityModel::comparison(first, a, &second, b).map_err(|why| {
        anyhow::anyhow!(
            "cannot compare {} with {}: {why}",
            args.file.display(),
            other.display()
        )
    })?;
    Ok((session, source))
}

/// The snapshot of one side of a comparison, as an index. A damaged recording compares as far
/// as it is whole, and says so.
fn compared_snapshot(model: &CityModel, path: &Path, at: Option<At>) -> anyhow::Result<usize> {
    if model.is_empty() {
        let why = if model.warnings.is_empty() {
            String::new()
        } else {
            format!(" ({})", model.warnings.join("; "))
        };
        anyhow::bail!("{} holds no whole snapshot to compare{why}", path.display());
    }
    for warning in &model.warnings {
        eprintln!("memcity: warning: {warning}");
    }
    match at {
        Some(at) => {
            report::snapshot_at(model, at).with_context(|| format!("in {}", path.display()))
        }
        None => Ok(model.len() - 1),
    }
}

/// The session with its growth window set from `--from` and `--to`; unchanged without either.
fn windowed(mut session: CityModel, from: Option<At>, to: Option<At>) -> anyhow::Result<CityModel> {
    if from.is_none() && to.is_none() {
        return Ok(session);
    }
    let default = session.window();
    let start = match from {
        Some(at) => report::snapshot_at(&session, at)?,
        None => default.start,
    };
    let end = match to {
        Some(at) => report::snapshot_at(&session, at)?,
        None => default.end,
    };
    if end < start {
        anyhow::bail!(
            "--to (snapshot {}) is before --from (snapshot {}): the window would be empty",
            end + 1,
            start + 1
        );
    }
    session.set_window(Some(memcity_city::model::Window { start, end }));
    Ok(session)
}

fn replay(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    check_hud(args.screenshot.as_deref(), args.hud)?;
    app::replay(
        &args.source,
        app::WindowOptions {
            camera: args.camera,
            at: args.at,
            picks: args.pick,
            screenshot: args.screenshot,
            select: args.select,
            context: args.context,
            bench_frames: args.bench_frames,
            hud: args.hud,
            ..args.look.window(args.size)
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

fn demo(args: DemoArgs) -> anyhow::Result<ExitCode> {
    demo::run(
        args.seconds,
        app::WindowOptions {
            screenshot: args.screenshot,
            exit_after: args.exit_after,
            ..args.look.window(Size::DEFAULT)
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    serve::serve(ServeOptions {
        session: served(args.source)?,
        bind: args.bind,
        port: args.port,
        tls: args.tls_cert.zip(args.tls_key),
        insecure: args.insecure,
        web_dir: None,
    })?;
    Ok(ExitCode::SUCCESS)
}

/// What `serve` serves: a folder or file SOURCE names, else the agent it names (or `--pid`'s).
/// A missing `.mcrec` is a typo, not an address.
fn served(source: Agent) -> anyhow::Result<Session> {
    if let Some(given) = &source.addr {
        let path = Path::new(given);
        if path.is_dir() {
            return Ok(Session::Folder(path.to_path_buf()));
        }
        if path.is_file() {
            return Ok(Session::Recording(path.to_path_buf()));
        }
        if given.ends_with(memcity_proto::recording::EXTENSION) {
            anyhow::bail!("{given}: no such recording");
        }
    }
    Ok(Session::Live(source.address()?))
}

fn view(args: ViewArgs) -> anyhow::Result<ExitCode> {
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

fn snapshot(args: SnapshotArgs) -> anyhow::Result<ExitCode> {
    let addr = args.agent.address()?;
    runtime()?.block_on(take_snapshot(addr, args.force))
}

/// Exit code 3 when the agent refuses the walk (its predicted stop is too long): scripts can
/// tell "not now" from "cannot".
async fn take_snapshot(addr: Option<String>, force: bool) -> anyhow::Result<ExitCode> {
    let mut client = client::connect(addr.as_deref(), Duration::from_secs(5))
        .await
        .map_err(anyhow::Error::msg)?;
    let reply = match client.request_snapshot(SnapshotRequest { force }).await {
        Ok(reply) => reply.into_inner(),
        Err(status) if status.code() == tonic::Code::FailedPrecondition => {
            eprintln!("memcity: no exact snapshot: {}", status.message());
            return Ok(ExitCode::from(3));
        }
        Err(status) => {
            anyhow::bail!(
                "the agent could not take a snapshot: {}",
                client::failure(&status)
            )
        }
    };
    println!(
        "snapshot {} taken; the JVM was stopped {:.1} ms (predicted {:.1} ms)",
        // Counted from 1, as the viewer's status bar and `report --at` count the session's
        // snapshots (the agent's sequence starts at 0).
        reply.seq + 1,
        reply.pause_ns as f64 / 1e6,
        reply.predicted_pause_ns as f64 / 1e6
    );
    Ok(ExitCode::SUCCESS)
}

fn list() -> anyhow::Result<ExitCode> {
    jvms::print_list();
    Ok(ExitCode::SUCCESS)
}

fn attach(args: AttachArgs) -> anyhow::Result<ExitCode> {
    let registered = jvms::attach(args.pid, args.options.as_deref(), args.lib.as_deref())?;
    jvms::print_attached(args.pid, &registered, args.options.as_deref());
    Ok(ExitCode::SUCCESS)
}

fn detach(pid: u32) -> anyhow::Result<ExitCode> {
    jvms::detach(pid)?;
    eprintln!("memcity: detached from {pid}; the application runs on without memcity");
    Ok(ExitCode::SUCCESS)
}

fn classifiers(args: ClassifiersArgs) -> anyhow::Result<ExitCode> {
    let mut agent = args.agent;
    agent.addr = agent.addr.or(args.addr_flag);
    let addr = agent.address()?;
    runtime()?.block_on(set_classifiers(addr, &args.chain))
}

async fn set_classifiers(addr: Option<String>, chain: &str) -> anyhow::Result<ExitCode> {
    let mut client = client::connect(addr.as_deref(), Duration::from_secs(5))
        .await
        .map_err(anyhow::Error::msg)?;
    let reply = client
        .set_classifiers(SetClassifiersRequest {
            classifiers: chain.split(':').map(str::to_string).collect(),
        })
        .await
        .map_err(|s| match s.code() {
            // The connection closed under the request: a full port, or a JVM exiting.
            tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled => {
                anyhow::anyhow!(client::failure(&s))
            }
            _ => anyhow::anyhow!("the agent refused the chain: {}", s.message()),
        })?
        .into_inner();
    println!("classifiers now {}", reply.classifiers.join(":"));
    Ok(ExitCode::SUCCESS)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
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

// Value parsers. Clap calls them as it reads the command line, so a bad value is refused before
// anything starts (an attach, a window) and clap's message names the flag and the value: each
// parser's message only says what to give instead.

/// A window's size in pixels (`--size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Size {
    width: u32,
    height: u32,
}

impl Size {
    const DEFAULT: Size = Size {
        width: 1280,
        height: 720,
    };
    /// The sides a window may have, in pixels.
    const SIDES: std::ops::RangeInclusive<u32> = 64..=16384;
}

/// `1280x720`: each side within [`Size::SIDES`].
fn window_size(text: &str) -> Result<Size, String> {
    text.split_once('x')
        .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)))
        .filter(|(w, h)| Size::SIDES.contains(w) && Size::SIDES.contains(h))
        .map(|(width, height)| Size { width, height })
        .ok_or_else(|| {
            "expected WIDTHxHEIGHT with each side from 64 to 16384, such as 1280x720".to_string()
        })
}

/// Every duration flag (`--duration`, `--wait`): seconds, fractions allowed, 0 or more.
fn seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| "give a number of seconds, 0 or more, such as 60".to_string())
}

/// `--period`: playing steps a snapshot each time this much has passed, so 0 or less (or NaN)
/// would step without end or never.
fn period(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p > 0.0)
        .ok_or_else(|| "give the seconds per snapshot, more than 0, such as 0.5".to_string())
}

/// `--children`: lots per parent.
fn lots(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| "every parent needs at least 1 lot: give 1 or more".to_string())
}

/// `--min-gcs`: ages in GCs come in buckets, so only a bucket's least age counts exactly.
fn gc_age(text: &str) -> Result<u64, String> {
    use memcity_city::lifetimes::{gc_age_floor, GC_AGE_BUCKETS};
    text.parse::<u64>()
        .ok()
        .filter(|&n| (0..GC_AGE_BUCKETS).any(|b| gc_age_floor(b) == n))
        .ok_or_else(|| "ages in GCs come in buckets: give 0, 1, 2, 4, 8, 16 or 32".to_string())
}

/// `--screenshot`: memcity encodes PNG only, whatever the name says.
fn png(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    let png = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if png {
        Ok(path)
    } else {
        Err("memcity writes PNG images; give a file name ending in .png".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Parses `line` (words separated by single spaces), or returns clap's message.
    fn parse(line: &str) -> Result<Cli, String> {
        Cli::try_parse_from(line.split(' ')).map_err(|e| e.to_string())
    }

    #[test]
    fn sizes_are_width_by_height_within_bounds() {
        assert_eq!(
            window_size("1280x720"),
            Ok(Size {
                width: 1280,
                height: 720
            })
        );
        assert_eq!(window_size("64x16384").map(|s| s.height), Ok(16384));
        for bad in [
            "0x0",
            "63x100",
            "100x16385",
            "1280",
            "1280x",
            "x720",
            "ax720",
            "-1x720",
        ] {
            assert!(window_size(bad).unwrap_err().contains("1280x720"), "{bad}");
        }
    }

    #[test]
    fn durations_are_seconds_from_0() {
        assert_eq!(seconds("0"), Ok(Duration::ZERO));
        assert_eq!(seconds("2.5"), Ok(Duration::from_millis(2500)));
        for bad in ["-1", "NaN", "inf", "1e300", "ten", ""] {
            assert!(seconds(bad).unwrap_err().contains("0 or more"), "{bad}");
        }
    }

    #[test]
    fn look_values_are_checked_by_clap() {
        assert_eq!(period("0.25"), Ok(0.25));
        for bad in ["0", "-1", "inf", "NaN", "soon"] {
            assert!(period(bad).unwrap_err().contains("more than 0"), "{bad}");
        }
        assert_eq!(lots("1"), Ok(1));
        assert!(lots("0").unwrap_err().contains("at least 1 lot"));
        assert!(png("a.PNG").is_ok());
        assert!(png("a.jpg").unwrap_err().contains("ending in .png"));
        // The flag and the value come from clap, what to do from the parser.
        let err = parse("memcity replay f.mcrec --period 0").err().unwrap();
        assert!(
            err.contains("'0' for '--period <PERIOD>'") && err.contains("more than 0"),
            "{err}"
        );
        let err = parse("memcity demo --children 0").err().unwrap();
        assert!(err.contains("at least 1 lot"), "{err}");
    }

    #[test]
    fn every_agent_command_takes_an_address_or_a_pid() {
        for command in [
            "record -o f.mcrec",
            "view",
            "snapshot",
            "classifiers type",
            "serve",
        ] {
            let by_pid = parse(&format!("memcity {command} --pid 42"));
            assert!(by_pid.is_ok(), "{command}: {}", by_pid.err().unwrap());
            let both = parse(&format!("memcity {command} 127.0.0.1:1 --pid 42"));
            assert!(
                both.err()
                    .is_some_and(|e| e.contains("cannot be used with")),
                "{command}"
            );
        }
        // The old spelling of classifiers' address, which also excludes the others.
        let Command::Classifiers(args) =
            parse("memcity classifiers type --addr 1").unwrap().command
        else {
            panic!("not classifiers");
        };
        assert_eq!(args.addr_flag.as_deref(), Some("1"));
        assert!(parse("memcity classifiers type --addr 1 --pid 42").is_err());
        assert!(parse("memcity classifiers type 2 --addr 1").is_err());
    }

    #[test]
    fn serve_takes_a_source_where_others_take_an_address() {
        let help = Cli::command()
            .find_subcommand_mut("serve")
            .unwrap()
            .render_help()
            .to_string();
        assert!(
            help.contains("[SOURCE]") && help.contains("A recording (.mcrec)"),
            "{help}"
        );
        assert!(!help.contains("[ADDR]"), "{help}");
    }

    #[test]
    fn report_windows_are_parsed_by_clap() {
        let Command::Report(args) = parse("memcity report f --from 2 --to 12s").unwrap().command
        else {
            panic!("not report");
        };
        assert_eq!(
            (args.from, args.to),
            (Some(At::Number(2)), Some(At::Seconds(12.0)))
        );
        let err = parse("memcity report f --from soon").err().unwrap();
        assert!(err.contains("not a snapshot"), "{err}");
    }

    #[test]
    fn export_writes_one_format_or_both() {
        let err = parse("memcity export f.mcrec").err().unwrap();
        assert!(
            err.contains("--memory-cities <DIR>") && err.contains("--pprof <FILE>"),
            "{err}"
        );
        let Command::Export(args) =
            parse("memcity export f.mcrec --pprof h.pb.gz --at 3 --since 1s")
                .unwrap()
                .command
        else {
            panic!("not export");
        };
        assert_eq!(
            (
                args.pprof.as_deref(),
                args.at,
                args.since,
                args.memory_cities
            ),
            (
                Some(Path::new("h.pb.gz")),
                Some(At::Number(3)),
                Some(At::Seconds(1.0)),
                None
            )
        );
        assert!(parse("memcity export f.mcrec --pprof h.pb.gz --memory-cities d").is_ok());
        // A snapshot is the profile's: a folder holds them all.
        let err = parse("memcity export f.mcrec --memory-cities d --at 2")
            .err()
            .unwrap();
        assert!(err.contains("--pprof <FILE>"), "{err}");
        let err = parse("memcity export f.mcrec --pprof h --since soon")
            .err()
            .unwrap();
        assert!(err.contains("not a snapshot"), "{err}");
    }

    #[test]
    fn lifetimes_ages_are_the_agents_buckets() {
        assert_eq!(gc_age("0"), Ok(0));
        assert_eq!(gc_age("16"), Ok(16));
        for bad in ["3", "64", "-1", "old"] {
            assert!(gc_age(bad).unwrap_err().contains("0, 1, 2, 4"), "{bad}");
        }
        let Command::Lifetimes(args) = parse("memcity lifetimes f --min-gcs 4 --json")
            .unwrap()
            .command
        else {
            panic!("not lifetimes");
        };
        assert_eq!((args.min_gcs, args.json), (4, true));
    }
}
