//! What the commands that open a session take for heap dumps: how to group them.

use std::path::{Path, PathBuf};

use memcity_city::model::CityModel;
use memcity_dump::Level;

#[derive(clap::Args, Clone, Default)]
pub struct DumpArgs {
    /// Heap dumps: group their objects by this chain of package, type, loader (the class's
    /// loader) and thread (the thread whose root holds the object), e.g. loader:package:type
    /// (default package:type)
    #[arg(long, value_name = "CHAIN", value_parser = chain)]
    pub group_by: Option<Chain>,
}

/// A grouping chain, one value (clap would take a `Vec` for many).
#[derive(Clone, Debug)]
pub struct Chain(pub Vec<Level>);

fn chain(text: &str) -> Result<Chain, String> {
    memcity_dump::parse_levels(text).map(Chain)
}

impl DumpArgs {
    /// Loads `source` as `memcity_city::load::session` does, dumps grouped as asked.
    pub fn load(&self, source: &Path) -> anyhow::Result<CityModel> {
        Ok(memcity_city::load::session_grouped(source, self.levels())?)
    }

    fn levels(&self) -> Option<&[Level]> {
        self.group_by.as_ref().map(|c| c.0.as_slice())
    }

    /// Loads `source`, or with `more` files a series of heap dumps (every one of them a dump).
    pub fn load_all(&self, source: &Path, more: &[PathBuf]) -> anyhow::Result<CityModel> {
        if more.is_empty() {
            return self.load(source);
        }
        let mut all = vec![source.to_path_buf()];
        all.extend_from_slice(more);
        let Some(dumps) = memcity_city::load::dump_files(&all) else {
            anyhow::bail!(
                "several files are read as a series of heap dumps, and not all of these are (.hprof, .hprof.gz files): give one recording or folder"
            );
        };
        let levels = self.levels().unwrap_or(&memcity_dump::DEFAULT_LEVELS);
        Ok(memcity_city::load::heap_dumps(&dumps, levels)?)
    }
}
