//! Reading the option string: each `key=value` checked against the documented table and set
//! by its concern (sampling and estimates, walks, the ports, what is kept), then the options
//! that need another checked together.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::values::{
    non_empty_path, parse_bytes, parse_count, parse_duration, parse_max_size, parse_percent,
    parse_port_or_off, parse_share_or_off, parse_switch,
};
use super::{
    parse_classifiers, Level, Only, Options, PushUrl, KEYS, MAX_METRICS_TOP, MAX_SITE_FRAMES,
};

/// What went wrong, with the key it concerns; rendered with the table of valid keys.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionsError {
    pub message: String,
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "invalid agent options: {}", self.message)?;
        write!(
            f,
            "usage: -agentpath:/path/to/libmemcity.so[=key=value,...] or memcity attach PID [key=value,...]; valid keys:"
        )?;
        for (key, example, meaning) in KEYS {
            write!(f, "\n  {key:<13} {example:<13} {meaning}")?;
        }
        Ok(())
    }
}

/// Parses the option string. Returns the options and warnings (unknown keys) to log.
pub fn parse(text: Option<&str>) -> Result<(Options, Vec<String>), OptionsError> {
    let mut options = Options::default();
    let mut warnings = Vec::new();
    let mut tls = TlsFiles::default();
    let text = text.unwrap_or("").trim();
    if text.is_empty() {
        return Ok((options, warnings));
    }
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some((key, value)) = item.split_once('=') else {
            return Err(err(format!("'{item}' has no value (expected key=value)")));
        };
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim();
        // The printed table is the list of keys: one that is not in it is unknown, so a key
        // cannot be parsed without being documented.
        if !KEYS.iter().any(|(k, _, _)| *k == key) {
            warnings.push(format!(
                "unknown option '{key}' ignored (valid: {})",
                KEYS.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
            ));
            continue;
        }
        let set = set(&mut options, &mut tls, &key, value)
            .map_err(|why| err(format!("{key}={value}: {why}")))?;
        if !set {
            warnings.push(format!("option '{key}' is listed but not handled; ignored"));
        }
    }
    check_together(&options)?;
    options.tls = match (tls.cert, tls.key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => {
            return Err(err(
                "tls_cert and tls_key go together: give both PEM files, or neither".into(),
            ))
        }
    };
    Ok((options, warnings))
}

/// The certificate and key given so far, which only count together.
#[derive(Default)]
struct TlsFiles {
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
}

/// Sets `key`, one of the table's, to `value`; false when no concern handles it. The error
/// says what is wrong with the value.
fn set(options: &mut Options, tls: &mut TlsFiles, key: &str, value: &str) -> Result<bool, String> {
    Ok(set_sampling(options, key, value)?
        || set_walks(options, key, value)?
        || set_ports(options, tls, key, value)?
        || set_kept(options, key, value)?)
}

/// What is sampled and estimated: the grouping, the sampling and its cost, the tracker, the
/// estimates, GC counts, the wait at an OutOfMemoryError, the path search and the lifetimes.
fn set_sampling(options: &mut Options, key: &str, value: &str) -> Result<bool, String> {
    match key {
        "classifiers" => options.classifiers = parse_classifiers(value)?,
        "sampling" => {
            options.sampling = if value.eq_ignore_ascii_case("off") {
                None
            } else {
                let bytes = parse_bytes(value)?;
                if bytes > i32::MAX as u64 {
                    return Err("the JVM takes at most 2147483647 bytes".into());
                }
                // An explicit interval is what the user wants at least: never sample finer.
                options.sampling_floor = bytes;
                Some(bytes)
            }
        }
        "sampling_cost" => options.sampling_cost = parse_share_or_off(value)?,
        "tracked" => {
            let count = parse_count(value)?;
            if count == 0 || count > u64::from(u32::MAX) {
                return Err("expected a number of samples from 1 to 4g (such as 256k)".into());
            }
            options.tracked = count as u32;
        }
        "gc_counts" => options.gc_counts = duration_or_off(value)?,
        "estimates" => options.estimates = duration_or_off(value)?,
        "oom_wait" => options.oom_wait = duration_or_off(value)?,
        "site_frames" => {
            let frames: usize = value
                .parse()
                .map_err(|_| "expected a whole number of frames".to_string())?;
            if !(1..=MAX_SITE_FRAMES).contains(&frames) {
                return Err(format!("expected 1 to {MAX_SITE_FRAMES}"));
            }
            options.site_frames = frames;
        }
        "paths" => options.paths = parse_share_or_off(value)?,
        "lifetimes" => options.lifetimes = parse_switch(value)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// A duration, or `off`.
fn duration_or_off(value: &str) -> Result<Option<Duration>, String> {
    if value.eq_ignore_ascii_case("off") {
        Ok(None)
    } else {
        Some(parse_duration(value)).transpose()
    }
}

/// When heap walks run: their budget, the least time between them, the longest pause, the
/// period without GCs.
fn set_walks(options: &mut Options, key: &str, value: &str) -> Result<bool, String> {
    match key {
        "budget" => {
            let percent = parse_percent(value)?;
            if !(percent > 0.0 && percent <= 100.0) {
                return Err("expected a percentage above 0 and at most 100".into());
            }
            options.budget = percent / 100.0;
        }
        "min_interval" => options.min_interval = parse_duration(value)?,
        "max_pause" => {
            let pause = parse_duration(value)?;
            if pause.is_zero() {
                return Err("a zero pause would abort every walk".into());
            }
            options.max_pause = pause;
        }
        "period" => {
            options.period = if value.eq_ignore_ascii_case("off") {
                None
            } else {
                let period = parse_duration(value)?;
                if period.is_zero() {
                    return Err("a zero period would walk continuously; use off".into());
                }
                Some(period)
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// What the agent serves and where: the gRPC port, the page, metrics, the Pyroscope push,
/// the address bound, TLS and the port file.
fn set_ports(
    options: &mut Options,
    tls: &mut TlsFiles,
    key: &str,
    value: &str,
) -> Result<bool, String> {
    match key {
        "port" => options.port = parse_port_or_off(value)?,
        "http" => options.http = parse_port_or_off(value)?,
        "web" => options.web = Some(non_empty_path(value)?),
        "metrics" => options.metrics = parse_port_or_off(value)?,
        "metrics_token" => options.metrics_token = Some(non_empty_path(value)?),
        "metrics_top" => {
            let top = parse_count(value)?;
            if !(1..=MAX_METRICS_TOP as u64).contains(&top) {
                return Err(format!("expected 1 to {MAX_METRICS_TOP} series per family"));
            }
            options.metrics_top = top as usize;
        }
        "pyroscope" => options.pyroscope = Some(PushUrl::parse(value)?),
        "pyroscope_every" => {
            let every = parse_duration(value)?;
            if every < Duration::from_secs(1) {
                return Err("push at most once a second: give 1s or more".into());
            }
            options.pyroscope_every = every;
        }
        "service" => {
            if value.is_empty() {
                return Err("expected a name, such as checkout-service".into());
            }
            options.service = Some(value.to_string());
        }
        "metrics_window" => {
            let window = parse_duration(value)?;
            if window < Duration::from_secs(10) {
                return Err("a trend needs several snapshots: give at least 10s".into());
            }
            options.metrics_window = window;
        }
        "bind" => {
            options.bind = value
                .parse()
                .map_err(|_| "expected an IP address such as 127.0.0.1 or ::1".to_string())?
        }
        "insecure" => options.insecure = parse_switch(value)?,
        "tls_cert" => tls.cert = Some(non_empty_path(value)?),
        "tls_key" => tls.key = Some(non_empty_path(value)?),
        "portfile" => options.portfile = Some(non_empty_path(value)?),
        _ => return Ok(false),
    }
    Ok(true)
}

/// What the agent keeps: the recording and its limit, the history for late viewers, its log.
fn set_kept(options: &mut Options, key: &str, value: &str) -> Result<bool, String> {
    match key {
        "record" => options.record = Some(non_empty_path(value)?),
        "record_max" => options.record_max = Some(parse_max_size(value)?),
        "history" => options.history_bytes = parse_bytes(value)?,
        "only" => options.only = Some(Only::parse(value)?),
        "log" => {
            options.log = Level::parse(value)
                .ok_or_else(|| "expected error, warn, info, debug or off".to_string())?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Options that need another: what runs beside the gRPC server needs it on; a metrics token
/// needs the metrics port.
fn check_together(options: &Options) -> Result<(), OptionsError> {
    if options.http.is_some() && options.port.is_none() {
        return Err(err(
            "http serves the page beside the gRPC server, which port=off turns off: drop port=off (or http)"
                .into(),
        ));
    }
    if options.metrics.is_some() && options.port.is_none() {
        return Err(err(
            "metrics are served beside the gRPC server, which port=off turns off: drop port=off (or metrics)"
                .into(),
        ));
    }
    if options.pyroscope.is_some() && options.port.is_none() {
        return Err(err(
            "the Pyroscope push runs beside the gRPC server, which port=off turns off: drop port=off (or pyroscope)"
                .into(),
        ));
    }
    if options.metrics_token.is_some() && options.metrics.is_none() {
        return Err(err(
            "metrics_token guards the metrics port, which is off: add metrics=PORT (or drop metrics_token)"
                .into(),
        ));
    }
    Ok(())
}

fn err(message: String) -> OptionsError {
    OptionsError { message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{Classifier, DEFAULT_METRICS_TOP, DEFAULT_OOM_WAIT};

    #[test]
    fn no_options_gives_documented_defaults() {
        let (o, w) = parse(None).unwrap();
        assert_eq!(o, Options::default());
        assert!(w.is_empty());
        assert_eq!(o.classifiers, [Classifier::Package, Classifier::Type]);
        assert_eq!(o.sampling, Some(512 * 1024));
        assert_eq!(o.sampling_floor, 32 * 1024);
        assert_eq!(o.budget, 0.02);
        // A free port: any number of JVMs on one host, found through the registry.
        assert_eq!(o.port, Some(0));
        assert_eq!(o.only, None);
        assert_eq!(o.bind.to_string(), "127.0.0.1");
        assert_eq!(o.history_bytes, 64 << 20);
        assert_eq!(parse(Some("  ")).unwrap().0, Options::default());
    }

    #[test]
    fn every_key_parses() {
        let (o, w) = parse(Some(
            "classifiers=type:site:thread,sampling=64k,sampling_cost=1%,tracked=1k,estimates=2s,gc_counts=50ms,site_frames=5,budget=5%,min_interval=250ms,\
             max_pause=3s,period=5s,port=0,bind=::1,portfile=/tmp/p,record=/tmp/r.mcrec,history=1m,log=debug,\
             lifetimes=off",
        ))
        .unwrap();
        assert!(w.is_empty());
        assert_eq!(
            o.classifiers,
            [Classifier::Type, Classifier::Site, Classifier::Thread]
        );
        assert_eq!(o.sampling, Some(65536));
        assert_eq!(o.sampling_floor, 65536, "an explicit interval is the floor");
        assert_eq!(o.sampling_cost, Some(0.01));
        assert_eq!(o.tracked, 1024);
        assert_eq!(o.estimates, Some(Duration::from_secs(2)));
        assert_eq!(o.gc_counts, Some(Duration::from_millis(50)));
        assert_eq!(o.site_frames, 5);
        assert!(!o.lifetimes);
        assert!(Options::default().lifetimes, "on by default");
        assert!((o.budget - 0.05).abs() < 1e-12);
        assert_eq!(o.min_interval, Duration::from_millis(250));
        assert_eq!(o.max_pause, Duration::from_secs(3));
        assert_eq!(o.period, Some(Duration::from_secs(5)));
        assert_eq!(o.port, Some(0));
        assert_eq!(o.bind.to_string(), "::1");
        assert_eq!(o.portfile, Some(PathBuf::from("/tmp/p")));
        assert_eq!(o.record, Some(PathBuf::from("/tmp/r.mcrec")));
        assert_eq!(o.history_bytes, 1 << 20);
        assert_eq!(o.log, Level::Debug);
    }

    #[test]
    fn off_values_and_sampling_zero() {
        let (o, _) = parse(Some(
            "sampling=off,port=off,log=off,period=off,sampling_cost=off,estimates=off,gc_counts=off",
        ))
        .unwrap();
        assert_eq!(o.sampling_cost, None);
        assert_eq!(o.estimates, None);
        assert_eq!(o.gc_counts, None);
        assert_eq!(o.period, None);
        assert_eq!(o.sampling, None);
        assert_eq!(o.port, None);
        assert_eq!(o.log, Level::Off);
        assert_eq!(parse(Some("sampling=0")).unwrap().0.sampling, Some(0));
        assert_eq!(parse(Some("paths=off")).unwrap().0.paths, None);
        assert_eq!(parse(Some("paths=20%")).unwrap().0.paths, Some(0.2));
        assert_eq!(parse(None).unwrap().0.paths, Some(0.05));
        for bad in ["paths=0", "paths=150%", "paths=fast"] {
            assert!(parse(Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(parse(Some("oom_wait=off")).unwrap().0.oom_wait, None);
        assert_eq!(
            parse(Some("oom_wait=2s")).unwrap().0.oom_wait,
            Some(Duration::from_secs(2))
        );
        assert_eq!(parse(None).unwrap().0.oom_wait, Some(DEFAULT_OOM_WAIT));
        let e = parse(Some("oom_wait=soon")).unwrap_err().to_string();
        assert!(e.contains("oom_wait=soon") && e.contains("oom_wait"), "{e}");
    }

    #[test]
    fn the_page_needs_the_grpc_server() {
        let (o, _) = parse(Some("http=8081,web=/opt/memcity/web")).unwrap();
        assert_eq!(o.http, Some(8081));
        assert_eq!(o.web, Some("/opt/memcity/web".into()));
        assert_eq!(parse(None).unwrap().0.http, None);
        assert_eq!(parse(Some("http=off")).unwrap().0.http, None);
        let e = parse(Some("port=off,http=0")).unwrap_err().to_string();
        assert!(e.contains("port=off"), "{e}");
        let e = parse(Some("http=web")).unwrap_err().to_string();
        assert!(e.contains("expected a port"), "{e}");
    }

    #[test]
    fn metrics_options() {
        let (o, _) = parse(Some(
            "metrics=9404,metrics_token=/etc/memcity/token,metrics_top=25,metrics_window=30m",
        ))
        .unwrap();
        assert_eq!(o.metrics, Some(9404));
        assert_eq!(o.metrics_token, Some("/etc/memcity/token".into()));
        assert_eq!(o.metrics_top, 25);
        assert_eq!(o.metrics_window, Duration::from_secs(1800));
        let defaults = parse(None).unwrap().0;
        assert_eq!(defaults.metrics, None);
        assert_eq!(defaults.metrics_top, DEFAULT_METRICS_TOP);
        for (given, says) in [
            ("port=off,metrics=0", "port=off"),
            ("metrics_token=/tmp/t", "add metrics=PORT"),
            ("metrics=0,metrics_top=0", "expected 1 to 1000"),
            ("metrics=0,metrics_top=5000", "expected 1 to 1000"),
            ("metrics=0,metrics_window=2s", "at least 10s"),
            ("metrics=prometheus", "expected a port"),
        ] {
            let e = parse(Some(given)).unwrap_err().to_string();
            assert!(e.contains(says), "{given}: {e}");
        }
    }

    #[test]
    fn a_certificate_needs_its_key() {
        let e = parse(Some("tls_cert=/tmp/c")).unwrap_err().to_string();
        assert!(e.contains("go together"), "{e}");
        let (o, _) = parse(Some("tls_cert=/tmp/c,tls_key=/tmp/k")).unwrap();
        assert_eq!(o.tls, Some(("/tmp/c".into(), "/tmp/k".into())));
    }

    #[test]
    fn unknown_key_warns_and_continues() {
        let (o, w) = parse(Some("colour=red,port=1234")).unwrap();
        assert_eq!(o.port, Some(1234));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("colour"));
        assert!(w[0].contains("classifiers"));
    }

    #[test]
    fn malformed_values_are_errors_that_list_the_keys() {
        for bad in [
            "port=http",
            "port=70000",
            "sampling=lots",
            "sampling=4g",
            "budget=0",
            "budget=150%",
            "classifiers=type:colour",
            "classifiers=type:type",
            "classifiers=",
            "max_pause=0",
            "period=0",
            "min_interval=soon",
            "bind=localhost:80",
            "record=",
            "record_max=64k",
            "log=chatty",
            "site_frames=0",
            "sampling_cost=0",
            "sampling_cost=many",
            "tracked=0",
            "tracked=lots",
            "estimates=soon",
            "gc_counts=lots",
            "lifetimes=sometimes",
            "justakey",
        ] {
            let e = parse(Some(bad)).unwrap_err();
            let text = e.to_string();
            assert!(text.contains("invalid agent options"), "{bad}: {text}");
            assert!(text.contains("portfile"), "{bad}: lists keys: {text}");
        }
    }
}
