//! `memcity`: watch a Java application's heap as a memory city.
//!
//! The command line is data: each subcommand is a struct clap fills and checks (values through
//! the parsers of `cli/values.rs`), and one function per subcommand runs it, in `cli/` by what
//! the subcommands do; `run` here hands each to its function.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod cli;
mod demo;
mod jvms;

use cli::agent::{self, ClassifiersArgs, SnapshotArgs};
use cli::export::{self, ExportArgs};
use cli::lifetimes::{self, LifetimesArgs};
use cli::local::{self, AttachArgs};
use cli::record::{self, RecordArgs};
use cli::report::{self, ReportArgs};
use cli::serve::{self, ServeArgs};
use cli::values::memory;
use cli::window::{self, DemoArgs, ReplayArgs, ViewArgs};
use memcity_viewer::client;

#[derive(Parser)]
#[command(
    name = "memcity",
    version,
    about = "Watch a Java application's heap as a memory city",
    long_about = "Watch a Java application's heap as a memory city.\n\n\
Start the JVM with the agent:   java -agentpath:/path/to/libmemcity.so -jar app.jar\n\
then record and report:         memcity record -o app.mcrec --duration 60 && memcity report app.mcrec",
    after_help = "ADDR is the agent's HOST:PORT (a bare port means 127.0.0.1; default: the one agent of this user on this machine, as `memcity list` shows it, or --pid PID). Agents want a token: memcity reads a local agent's from its run directory, $TMPDIR/memcity-<uid>; give a remote one's with --token or MEMCITY_TOKEN."
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

/// The command line, with the version, the commit and the protocol under `--version`.
fn cli() -> Cli {
    let command = Cli::command().version(memcity_proto::version_line(env!("CARGO_PKG_VERSION")));
    Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit())
}

// Heap dumps larger than memory keep their big arrays in files while they are read
// (memcity_dump::spill); every other allocation goes to the system allocator as before.
#[global_allocator]
static ALLOCATOR: memcity_dump::spill::Spill = memcity_dump::spill::Spill;

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
        Command::Record(args) => record::record(args),
        Command::Report(args) => report::report(args),
        Command::Lifetimes(args) => lifetimes::lifetimes(args),
        Command::Export(args) => export::export(args),
        Command::Replay(args) => window::replay(args),
        Command::Demo(args) => window::demo(args),
        Command::Serve(args) => serve::serve(args),
        Command::View(args) => window::view(args),
        Command::Snapshot(args) => agent::snapshot(args),
        Command::List => local::list(),
        Command::Attach(args) => local::attach(args),
        Command::Detach { pid } => local::detach(pid),
        Command::Classifiers(args) => agent::classifiers(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Parses `line` (words separated by single spaces), or returns clap's message.
    pub(crate) fn parse(line: &str) -> Result<Cli, String> {
        Cli::try_parse_from(line.split(' ')).map_err(|e| e.to_string())
    }
}
