//! Which agent a command talks to, and the commands that only ask it something: a snapshot
//! now, another classifier chain.

use std::process::ExitCode;
use std::time::Duration;

use memcity_proto::v1::{SetClassifiersRequest, SnapshotRequest};
use memcity_viewer::client;

use super::runtime;
use crate::jvms;

/// Which agent a command talks to, the same way in every command: its address, or the pid of
/// its JVM (found, or attached to, by `jvms::address_of`).
#[derive(clap::Args)]
pub struct Agent {
    /// Agent address, HOST:PORT (default: this user's one local agent, from the registry)
    pub addr: Option<String>,
    /// Use the JVM with this pid instead, attaching memcity first if it is not running
    #[arg(long, conflicts_with = "addr")]
    pid: Option<u32>,
}

impl Agent {
    /// The address to connect to: the one given; for `--pid`, the address of the agent in that
    /// JVM, loaded there first if needed; with neither, this user's one local agent.
    pub fn address(self) -> anyhow::Result<Option<String>> {
        match (self.pid, self.addr) {
            (Some(pid), _) => jvms::address_of(pid).map(Some),
            (None, Some(addr)) => Ok(Some(addr)),
            (None, None) => jvms::default_address().map(Some),
        }
    }
}

#[derive(clap::Args)]
pub struct SnapshotArgs {
    #[command(flatten)]
    agent: Agent,
    /// Walk even when the predicted stop is past max_pause or the budget
    #[arg(long)]
    force: bool,
}

#[derive(clap::Args)]
pub struct ClassifiersArgs {
    /// Chain of package, type, site, thread, separated by ':'
    chain: String,
    #[command(flatten)]
    agent: Agent,
    /// The same as ADDR (the older spelling)
    #[arg(long = "addr", value_name = "ADDR", hide = true, conflicts_with_all = ["addr", "pid"])]
    addr_flag: Option<String>,
}

pub fn snapshot(args: SnapshotArgs) -> anyhow::Result<ExitCode> {
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

pub fn classifiers(args: ClassifiersArgs) -> anyhow::Result<ExitCode> {
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

#[cfg(test)]
mod tests {
    use crate::tests::parse;
    use crate::Command;

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
}
