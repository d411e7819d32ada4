//! The commands on the local JVMs: list them, load the agent into one, stop it there.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::jvms;

#[derive(clap::Args)]
pub struct AttachArgs {
    /// The JVM's process id (memcity list)
    pid: u32,
    /// Agent options, e.g. `classifiers=type:site,record=/tmp/app.mcrec`
    options: Option<String>,
    /// The agent library to load (default: the libmemcity.so beside this binary)
    #[arg(long)]
    lib: Option<PathBuf>,
}

pub fn list() -> anyhow::Result<ExitCode> {
    jvms::print_list();
    Ok(ExitCode::SUCCESS)
}

pub fn attach(args: AttachArgs) -> anyhow::Result<ExitCode> {
    let registered = jvms::attach(args.pid, args.options.as_deref(), args.lib.as_deref())?;
    jvms::print_attached(args.pid, &registered, args.options.as_deref());
    Ok(ExitCode::SUCCESS)
}

pub fn detach(pid: u32) -> anyhow::Result<ExitCode> {
    jvms::detach(pid)?;
    eprintln!("memcity: detached from {pid}; the application runs on without memcity");
    Ok(ExitCode::SUCCESS)
}
