//! Value parsers. Clap calls them as it reads the command line, so a bad value is refused
//! before anything starts (an attach, a window) and clap's message names the flag and the
//! value: each parser's message only says what to give instead.

use std::path::PathBuf;
use std::time::Duration;

/// `--memory`: a size of at least 1m.
pub fn memory(value: &str) -> Result<u64, String> {
    memcity_proto::options::parse_bytes_at_least(value, "to hold a session")
}

/// A window's size in pixels (`--size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub width: u32,
    pub height: u32,
}

impl Size {
    pub const DEFAULT: Size = Size {
        width: 1280,
        height: 720,
    };
    /// The sides a window may have, in pixels.
    const SIDES: std::ops::RangeInclusive<u32> = 64..=16384;
}

/// `1280x720`: each side within [`Size::SIDES`].
pub fn window_size(text: &str) -> Result<Size, String> {
    text.split_once('x')
        .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)))
        .filter(|(w, h)| Size::SIDES.contains(w) && Size::SIDES.contains(h))
        .map(|(width, height)| Size { width, height })
        .ok_or_else(|| {
            "expected WIDTHxHEIGHT with each side from 64 to 16384, such as 1280x720".to_string()
        })
}

/// Every duration flag (`--duration`, `--wait`): seconds, fractions allowed, 0 or more.
pub fn seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| "give a number of seconds, 0 or more, such as 60".to_string())
}

/// `--period`: playing steps a snapshot each time this much has passed, so 0 or less (or NaN)
/// would step without end or never.
pub fn period(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p > 0.0)
        .ok_or_else(|| "give the seconds per snapshot, more than 0, such as 0.5".to_string())
}

/// `--children`: lots per parent.
pub fn lots(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| "every parent needs at least 1 lot: give 1 or more".to_string())
}

/// `--min-gcs`: ages in GCs come in buckets, so only a bucket's least age counts exactly.
pub fn gc_age(text: &str) -> Result<u64, String> {
    use memcity_city::lifetimes::{gc_age_floor, GC_AGE_BUCKETS};
    text.parse::<u64>()
        .ok()
        .filter(|&n| (0..GC_AGE_BUCKETS).any(|b| gc_age_floor(b) == n))
        .ok_or_else(|| "ages in GCs come in buckets: give 0, 1, 2, 4, 8, 16 or 32".to_string())
}

/// `--screenshot`: memcity encodes PNG only, whatever the name says.
pub fn png(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    let png = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if png {
        Ok(path)
    } else {
        Err("memcity writes PNG images; give a file name ending in .png".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::parse;

    #[test]
    fn sizes_are_width_by_height_within_bounds() {
        assert_eq!(
            window_size("1280x720"),
            Ok(Size {
                width: 1280,
                height: 720
            })
        );
        assert_eq!(window_size("64x16384").map(|s| s.height), Ok(16384));
        for bad in [
            "0x0",
            "63x100",
            "100x16385",
            "1280",
            "1280x",
            "x720",
            "ax720",
            "-1x720",
        ] {
            assert!(window_size(bad).unwrap_err().contains("1280x720"), "{bad}");
        }
    }

    #[test]
    fn durations_are_seconds_from_0() {
        assert_eq!(seconds("0"), Ok(Duration::ZERO));
        assert_eq!(seconds("2.5"), Ok(Duration::from_millis(2500)));
        for bad in ["-1", "NaN", "inf", "1e300", "ten", ""] {
            assert!(seconds(bad).unwrap_err().contains("0 or more"), "{bad}");
        }
    }

    #[test]
    fn look_values_are_checked_by_clap() {
        assert_eq!(period("0.25"), Ok(0.25));
        for bad in ["0", "-1", "inf", "NaN", "soon"] {
            assert!(period(bad).unwrap_err().contains("more than 0"), "{bad}");
        }
        assert_eq!(lots("1"), Ok(1));
        assert!(lots("0").unwrap_err().contains("at least 1 lot"));
        assert!(png("a.PNG").is_ok());
        assert!(png("a.jpg").unwrap_err().contains("ending in .png"));
        // The flag and the value come from clap, what to do from the parser.
        let err = parse("memcity replay f.mcrec --period 0").err().unwrap();
        assert!(
            err.contains("'0' for '--period <PERIOD>'") && err.contains("more than 0"),
            "{err}"
        );
        let err = parse("memcity demo --children 0").err().unwrap();
        assert!(err.contains("at least 1 lot"), "{err}");
    }
}
