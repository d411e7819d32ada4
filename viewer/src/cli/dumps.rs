//! What the commands that open a session take for heap dumps: how to group them.

use std::path::Path;

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
        Ok(memcity_city::load::session_grouped(
            source,
            self.group_by.as_ref().map(|c| c.0.as_slice()),
        )?)
    }
}
