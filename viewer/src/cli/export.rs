//! `memcity export`: a session for other tools, as a Memory Cities JSON folder or a pprof
//! profile.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use memcity_city::model::CityModel;
use memcity_viewer::report::{self, At};
use memcity_viewer::units;

#[derive(clap::Args)]
#[command(group(
    clap::ArgGroup::new("outputs")
        .args(["memory_cities", "pprof"])
        .required(true)
        .multiple(true)
))]
pub struct ExportArgs {
    /// A recording, a heap dump (.hprof, .hprof.gz), a folder of heap dumps (a series), or a
    /// Memory Cities JSON export folder
    source: PathBuf,
    /// Heap dumps: more of them, read with SOURCE as one series
    more: Vec<PathBuf>,
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
    #[command(flatten)]
    dumps: super::dumps::DumpArgs,
}

pub fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let session = args.dumps.load_all(&args.source, &args.more)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::parse;
    use crate::Command;

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
}
