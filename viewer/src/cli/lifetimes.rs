//! `memcity lifetimes`: where a recording's sampled objects were born and where they died.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::values::gc_age;

#[derive(clap::Args)]
pub struct LifetimesArgs {
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

pub fn lifetimes(args: LifetimesArgs) -> anyhow::Result<ExitCode> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::parse;
    use crate::Command;

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
