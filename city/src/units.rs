//! Numbers for people: `1,234,567`, `+42`, `3.4 MiB`, and estimates as `~n ±e`. Tooltips
//! (`scene.rs`) and the details panel (`details.rs`) write numbers alike through here, so
//! neither needs the other.

pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn signed_count(n: i64) -> String {
    let sign = if n > 0 {
        "+"
    } else if n < 0 {
        "-"
    } else {
        ""
    };
    format!("{sign}{}", count(n.unsigned_abs()))
}

pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// What a group is measured by: its objects, its bytes, or the bytes it keeps alive (its
/// retained size, which only heap dumps give).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Metric {
    #[default]
    Objects,
    Bytes,
    Retained,
}

impl Metric {
    /// Whether values in this metric are bytes.
    pub fn is_bytes(self) -> bool {
        self != Metric::Objects
    }
}

/// A size in the chosen metric: `1,234 objects` or `3.4 MiB`.
pub fn amount(n: u64, metric: Metric) -> String {
    match metric {
        Metric::Objects => format!("{} {}", count(n), if n == 1 { "object" } else { "objects" }),
        Metric::Bytes | Metric::Retained => bytes(n),
    }
}

/// A change in the chosen metric, signed: `+1,234 objects`, `-160 B`.
pub fn signed_amount(n: i64, metric: Metric) -> String {
    match metric {
        Metric::Objects => format!(
            "{} {}",
            signed_count(n),
            if n.unsigned_abs() == 1 {
                "object"
            } else {
                "objects"
            }
        ),
        Metric::Bytes | Metric::Retained => {
            let sign = if n < 0 { "-" } else { "+" };
            format!("{sign}{}", bytes(n.unsigned_abs()))
        }
    }
}

/// `objects` and `bytes` as tooltips and the details panel write them: plain when counted, and
/// when estimated `~n ±e`, `e` the 95 % error (left out when the agent gave none).
///
/// `~`, not `≈`: the window draws text in macroquad's default font (ProggyClean), which covers
/// Latin-1 only; `±` (U+00B1) is in it, `≈` (U+2248) would show as a box.
pub(crate) fn numbers(objects: u64, bytes: u64, error: Option<(u64, u64)>) -> (String, String) {
    let Some((objects_error, bytes_error)) = error else {
        return (count(objects), self::bytes(bytes));
    };
    let about = |value: String, error: u64, unit: fn(u64) -> String| {
        if error == 0 {
            format!("~{value}")
        } else {
            format!("~{value} ±{}", unit(error))
        }
    };
    (
        about(count(objects), objects_error, count),
        about(self::bytes(bytes), bytes_error, self::bytes),
    )
}

/// The line that says how much of an estimate may be garbage no old-generation marking has
/// looked at yet (`Node.objects_unconfirmed`), or `None` when nothing is in doubt.
pub fn unconfirmed_line(objects: u64, bytes: u64) -> Option<String> {
    (objects > 0 || bytes > 0).then(|| {
        format!(
            "up to {} objects, {} may be garbage (no old-gen marking since)",
            count(objects),
            self::bytes(bytes)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(signed_count(-1500), "-1,500");
        assert_eq!(signed_count(7), "+7");
        assert_eq!(signed_count(0), "0");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 * 1024 * 1024), "3.0 MiB");
        assert_eq!(amount(1234, Metric::Objects), "1,234 objects");
        assert_eq!(amount(1, Metric::Objects), "1 object");
        assert_eq!(amount(0, Metric::Objects), "0 objects");
        assert_eq!(signed_amount(-1, Metric::Objects), "-1 object");
        assert_eq!(amount(2048, Metric::Bytes), "2.0 KiB");
        assert_eq!(signed_amount(990, Metric::Objects), "+990 objects");
        assert_eq!(signed_amount(-160, Metric::Bytes), "-160 B");
    }
}

/// `to - from` as a signed growth, saturating instead of overflowing: counts come from files and
/// streams, and a damaged or crafted one may hold values past `i64::MAX`.
pub fn growth(from: u64, to: u64) -> i64 {
    if to >= from {
        i64::try_from(to - from).unwrap_or(i64::MAX)
    } else {
        i64::try_from(from - to).map_or(i64::MIN, |d| -d)
    }
}

#[cfg(test)]
mod growth_tests {
    #[test]
    fn growth_saturates_instead_of_overflowing() {
        use super::growth;
        assert_eq!(growth(10, 1000), 990);
        assert_eq!(growth(1000, 10), -990);
        assert_eq!(growth(0, u64::MAX), i64::MAX);
        assert_eq!(growth(u64::MAX, 0), i64::MIN);
        assert_eq!(growth(u64::MAX, u64::MAX - 1), -1);
    }
}
