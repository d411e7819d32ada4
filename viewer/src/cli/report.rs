//! `memcity report`: a recording's leak suspects and growth, over a window of it or from one
//! recording to another.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use memcity_city::model::CityModel;
use memcity_viewer::report::{self, At};

#[derive(clap::Args)]
pub struct ReportArgs {
    /// A recording, a heap dump (.hprof, .hprof.gz), a folder of heap dumps (a series), or a
    /// Memory Cities JSON export folder
    file: PathBuf,
    /// A second recording of the same application: report what grew from FILE's snapshot
    /// (`--from`, default its last) to this one's (`--to`, default its last). Heap dumps: more
    /// of them, read with FILE as one series
    against: Vec<PathBuf>,
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
    #[command(flatten)]
    dumps: super::dumps::DumpArgs,
}

pub fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let mut all = vec![args.file.clone()];
    all.extend(args.against.iter().cloned());
    let series = args.against.is_empty() || memcity_city::load::dump_files(&all).is_some();
    let (session, source) = match args.against.as_slice() {
        [other] if !series => compare(&args.dumps.load(&args.file)?, &args, other)?,
        _ if series => {
            let session = args.dumps.load_all(&args.file, &args.against)?;
            let name = all
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" ");
            (windowed(session, args.from, args.to)?, name)
        }
        _ => anyhow::bail!(
            "FILE AGAINST compares two recordings; more files than two are read as a series of heap dumps, and not all of these are"
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::parse;
    use crate::Command;

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
}
