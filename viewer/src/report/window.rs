//! The window growth is measured over, and how `--from`, `--to` and `--at` name its ends.

use serde::Serialize;

use memcity_city::model::CityModel;

#[derive(Debug, Clone, Serialize)]
pub struct WindowJson {
    pub from: usize,
    pub to: usize,
    pub from_ms: u64,
    pub to_ms: u64,
}

/// A point of a session as `--from`/`--to` name it: a snapshot number counted from 1 as the
/// viewer's status bar counts (`3`), or seconds since the session started (`12s`). Parsed where
/// the command line is read, so a typo fails before any file is loaded; whether the snapshot
/// exists is [`snapshot_at`]'s to say, as only the session knows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum At {
    Number(usize),
    Seconds(f64),
}

impl std::str::FromStr for At {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if let Some(seconds) = text.strip_suffix('s') {
            return seconds.trim().parse().map(At::Seconds).map_err(|_| {
                "not a time: give seconds like `12s` or a snapshot number like `3`".to_string()
            });
        }
        text.trim().parse().map(At::Number).map_err(|_| {
            "not a snapshot: give a number like `3` (the first is 1) or seconds like `12s`"
                .to_string()
        })
    }
}

/// The snapshot `at` names, as an index; for seconds, the last snapshot at or before that time.
pub fn snapshot_at(session: &CityModel, at: At) -> anyhow::Result<usize> {
    let frames = session.frames();
    let last = frames.len().saturating_sub(1);
    let number = match at {
        At::Seconds(seconds) => {
            let start = frames.first().map_or(0, |f| f.time_ms);
            let ms = start + (seconds.max(0.0) * 1000.0) as u64;
            return Ok(frames
                .partition_point(|f| f.time_ms <= ms)
                .saturating_sub(1)
                .min(last));
        }
        At::Number(number) => number,
    };
    if number == 0 || number > frames.len() {
        anyhow::bail!(
            "snapshot {number} does not exist: the recording holds snapshots 1 to {} (counted from 1, as the viewer's status bar shows)",
            frames.len()
        );
    }
    Ok(number - 1)
}

#[cfg(test)]
mod tests {
    use super::super::tests::session;
    use super::*;

    #[test]
    fn windows_are_named_by_index_or_seconds() {
        let m = session();
        let last = m.len() - 1;
        let at = |text: &str| snapshot_at(&m, text.parse::<At>().unwrap());
        // Numbers count from 1, as the viewer's status bar does.
        assert_eq!(at("1").unwrap(), 0);
        assert_eq!(at(&(last + 1).to_string()).unwrap(), last);
        for past in ["0".to_string(), (last + 2).to_string()] {
            assert!(at(&past)
                .unwrap_err()
                .to_string()
                .contains("does not exist"));
        }
        // Seconds: the last snapshot at or before that time.
        assert_eq!(at("0s").unwrap(), 0);
        assert_eq!(at("9999s").unwrap(), last);
        assert!("soon".parse::<At>().unwrap_err().contains("not a snapshot"));
        assert!("xs".parse::<At>().unwrap_err().contains("not a time"));
        assert_eq!(" 3 ".parse::<At>(), Ok(At::Number(3)));
        assert_eq!("1.5s".parse::<At>(), Ok(At::Seconds(1.5)));
    }
}
