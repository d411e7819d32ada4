//! How long each phase of reading a dump took, on stderr when `MEMCITY_DUMP_PHASES` is set:
//! what `scripts/bench-dump.sh` breaks its times down by. Silent otherwise.

use std::time::Instant;

pub struct Phases {
    last: Instant,
    on: bool,
}

impl Phases {
    pub fn start() -> Self {
        Phases {
            last: Instant::now(),
            on: std::env::var_os("MEMCITY_DUMP_PHASES").is_some(),
        }
    }

    /// Ends the phase `name`.
    pub fn done(&mut self, name: &str) {
        if self.on {
            eprintln!(
                "memcity-dump: {name} {:.0} ms",
                self.last.elapsed().as_secs_f64() * 1000.0
            );
        }
        self.last = Instant::now();
    }
}
