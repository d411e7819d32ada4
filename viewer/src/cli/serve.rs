//! `memcity serve`: the city as a web page, of a recording, an export or a live agent.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use memcity_viewer::serve::{self, ServeOptions, Session};

use super::agent::Agent;

/// Serve's positional is more than an agent's address: a recording or an export folder too.
#[derive(clap::Args)]
#[command(mut_arg("addr", |arg| arg.value_name("SOURCE").help(
    "A recording (.mcrec), a Memory Cities export folder, or the agent's address HOST:PORT \
     (default: the one agent of this user on this machine)"
)))]
pub struct ServeArgs {
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
    #[command(flatten)]
    dumps: super::dumps::DumpArgs,
}

pub fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    serve::serve(ServeOptions {
        session: served(args.source, &args.dumps)?,
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
fn served(source: Agent, dumps: &super::dumps::DumpArgs) -> anyhow::Result<Session> {
    if let Some(given) = &source.addr {
        let path = Path::new(given);
        if let Some(dumps) = Session::dumps(path, dumps.group_by.as_ref().map(|c| c.0.as_slice()))?
        {
            return Ok(dumps);
        }
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

#[cfg(test)]
mod tests {
    use crate::Cli;
    use clap::CommandFactory;

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
}
