//! The values' syntax: ports or `off`, shares of a core, switches, paths, sizes, counts,
//! percentages and durations; each error says what to give instead.

use std::path::PathBuf;
use std::time::Duration;

/// A port (0: a free one) or `off`.
pub(super) fn parse_port_or_off(value: &str) -> Result<Option<u16>, String> {
    if value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    value
        .parse()
        .map(Some)
        .map_err(|_| "expected a port 0-65535 or off".into())
}

/// A share of one core as a percentage above 0 and at most 100 (`0.5%` -> 0.005), or `off`.
pub(super) fn parse_share_or_off(value: &str) -> Result<Option<f64>, String> {
    if value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let percent = parse_percent(value)?;
    if !(percent > 0.0 && percent <= 100.0) {
        return Err("expected a percentage above 0 and at most 100, or off".into());
    }
    Ok(Some(percent / 100.0))
}

/// `true`/`yes`/`on` or `false`/`no`/`off`.
pub(super) fn parse_switch(value: &str) -> Result<bool, String> {
    match value {
        "true" | "yes" | "on" => Ok(true),
        "false" | "no" | "off" => Ok(false),
        _ => Err("expected on or off (true or false)".into()),
    }
}

pub(super) fn non_empty_path(value: &str) -> Result<PathBuf, String> {
    if value.is_empty() {
        Err("expected a file path".into())
    } else {
        Ok(PathBuf::from(value))
    }
}

/// `512k`, `4m`, `1g`, `65536`, `64mb` (binary multiples).
pub fn parse_bytes(value: &str) -> Result<u64, String> {
    let lower = value.to_ascii_lowercase();
    let trimmed = lower.trim_end_matches('b').trim_end_matches('i');
    let (digits, multiplier) = match trimmed.chars().last() {
        Some('k') => (&trimmed[..trimmed.len() - 1], 1024),
        Some('m') => (&trimmed[..trimmed.len() - 1], 1024 * 1024),
        Some('g') => (&trimmed[..trimmed.len() - 1], 1024 * 1024 * 1024),
        _ => (trimmed, 1),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(|| "expected a size such as 512k, 64m or 1048576".to_string())
}

/// A recording's size limit (`record_max=`, `memcity record --max-size`): a size, and one a
/// thinning can keep to (the newest snapshots alone take a quarter of it).
pub fn parse_max_size(value: &str) -> Result<u64, String> {
    parse_bytes_at_least(value, "to hold a session's start and its newest snapshots")
}

/// A size of at least 1 MiB, for what must hold a session (`--memory`, `--max-size`); `what`
/// says what it holds when it is too small.
pub fn parse_bytes_at_least(value: &str, what: &str) -> Result<u64, String> {
    let bytes = parse_bytes(value)?;
    if bytes < 1 << 20 {
        return Err(format!("{value} is too small {what}: give at least 1m"));
    }
    Ok(bytes)
}

/// `2`, `2%`, `0.5%`.
pub(super) fn parse_percent(value: &str) -> Result<f64, String> {
    value
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| "expected a percentage such as 2 or 0.5%".to_string())
}

/// `1000`, `256k`, `1m` (decimal-free counts with binary multiples, like sizes).
pub(super) fn parse_count(value: &str) -> Result<u64, String> {
    parse_bytes(value).map_err(|_| "expected a count such as 1000 or 256k".to_string())
}

/// `250ms`, `2s`, `1m`, or plain milliseconds.
pub fn parse_duration(value: &str) -> Result<Duration, String> {
    let lower = value.to_ascii_lowercase();
    let parse = |digits: &str| digits.trim().parse::<f64>().ok().filter(|v| *v >= 0.0);
    let millis = if let Some(d) = lower.strip_suffix("ms") {
        parse(d)
    } else if let Some(d) = lower.strip_suffix('s') {
        parse(d).map(|v| v * 1000.0)
    } else if let Some(d) = lower.strip_suffix('m') {
        parse(d).map(|v| v * 60_000.0)
    } else {
        parse(&lower)
    };
    millis
        .filter(|v| v.is_finite() && *v < 1e12)
        .map(|ms| Duration::from_micros((ms * 1000.0) as u64))
        .ok_or_else(|| "expected a duration such as 500ms, 2s or 1m".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_bytes("512k"), Ok(524288));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("1g"), Ok(1 << 30));
        assert_eq!(parse_bytes("100"), Ok(100));
        assert!(parse_bytes("k").is_err());
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("20"), Ok(Duration::from_millis(20)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("-1s").is_err());
    }
}
