//! The documented table of keys: the parser knows no key that is not in it.

/// One valid key, its value syntax and its meaning; printed when options are wrong.
pub const KEYS: &[(&str, &str, &str)] = &[
    (
        "classifiers",
        "package:type",
        "grouping chain of package, type, site, thread",
    ),
    (
        "sampling",
        "512k",
        "sampling interval in bytes, fixed as the least (default: 512k, down to 32k if cheap; 0 = all; off)",
    ),
    (
        "sampling_cost",
        "0.5%",
        "most sampling time, percent of one core, before the interval grows (off = fixed)",
    ),
    (
        "tracked",
        "256k",
        "most allocation samples tracked at once (bounds the agent's memory)",
    ),
    (
        "estimates",
        "500ms",
        "least time between estimated snapshots at GCs (off = exact walks only)",
    ),
    (
        "gc_counts",
        "100ms",
        "let full GCs and G1 remarks count types (JFR) while that adds less than this (off)",
    ),
    (
        "paths",
        "5%",
        "most time, percent of one core on average, for searching paths from GC roots to live samples, which name leak holders (off)",
    ),
    (
        "lifetimes",
        "on",
        "record where sampled objects are born, how long they live and what last held them (off: no allocation sites unless classifiers has site)",
    ),
    (
        "oom_wait",
        "5s",
        "longest the thread that runs out of Java heap waits while memcity takes the last snapshot and names the holder (off)",
    ),
    (
        "site_frames",
        "1",
        "top frames naming an allocation site (1-16), plus the first app frame",
    ),
    (
        "budget",
        "2%",
        "most stopped time for heap walks, percent of wall time",
    ),
    (
        "min_interval",
        "1s",
        "least time between two GC-triggered walks",
    ),
    (
        "max_pause",
        "2s",
        "abort a single walk that stops the JVM longer than this",
    ),
    (
        "period",
        "10s",
        "snapshot after this long without a GC (off = only at GCs)",
    ),
    (
        "port",
        "0",
        "gRPC port: 0, the default, picks a free one (memcity list and --pid find it); a number fixes it; off = no server",
    ),
    ("bind", "127.0.0.1", "gRPC bind address"),
    (
        "http",
        "8081",
        "also serve the web page (the city in a browser) on this port (0 = a free one; off by default)",
    ),
    (
        "metrics",
        "9404",
        "serve Prometheus metrics (GET /metrics, OpenMetrics text) on this port (0 = a free one; off by default)",
    ),
    (
        "metrics_token",
        "PATH",
        "scrapes must send this file's token as a bearer token (needed off loopback)",
    ),
    (
        "metrics_top",
        "10",
        "most series per metric family: the largest top-level groups, the fastest-growing types (1-1000)",
    ),
    (
        "pyroscope",
        "URL",
        "push the live heap as a pprof profile to this Pyroscope server (http://host:4040) every pyroscope_every",
    ),
    ("pyroscope_every", "15s", "time between two pushes to Pyroscope"),
    (
        "service",
        "NAME",
        "the application's name in metrics and pushed profiles (default: its main class or jar)",
    ),
    (
        "metrics_window",
        "10m",
        "how far back the metrics' growth and leak suspects look",
    ),
    (
        "web",
        "PATH",
        "the page's files (default: web/ beside libmemcity.so, or one folder up)",
    ),
    (
        "tls_cert",
        "PATH",
        "serve over TLS with this PEM certificate (chain); with tls_key",
    ),
    ("tls_key", "PATH", "the PEM private key of tls_cert"),
    (
        "insecure",
        "false",
        "serve a non-loopback bind without TLS (true: anyone who can reach it and has the token reads the heap's structure)",
    ),
    (
        "portfile",
        "PATH",
        "write the gRPC port here once listening",
    ),
    ("record", "PATH", "write the session to this recording file"),
    (
        "record_max",
        "1g",
        "keep the recording under this size (at least 1m): past it, about half of its older snapshots go, evenly in time; the first and the newest stay",
    ),
    (
        "history",
        "64m",
        "memory cap of the history kept for late viewers",
    ),
    (
        "only",
        "com.acme.*|checkout*.jar",
        "stay only in JVMs whose main class or jar matches (* any text, | or; * alone: every JVM); by default every application, never the JDK's tools (jcmd, javac, java -version)",
    ),
    (
        "log",
        "info",
        "log level on stderr: error, warn, info, debug, off",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::parse;

    #[test]
    fn every_parsed_key_is_in_the_printed_table() {
        // Each key the parser accepts must be listed for users (and the README, by a docs test).
        for (key, example, _) in KEYS {
            let value = match *key {
                "portfile" | "record" | "tls_cert" | "tls_key" | "web" | "metrics_token" => {
                    "/tmp/x"
                }
                "pyroscope" => "http://localhost:4040",
                _ => example,
            };
            // The certificate and its key only come together.
            let pair = match *key {
                "tls_cert" => ",tls_key=/tmp/k",
                "tls_key" => ",tls_cert=/tmp/c",
                // A token guards a metrics port.
                "metrics_token" => ",metrics=0",
                _ => "",
            };
            let (_, warnings) = parse(Some(&format!("{key}={value}{pair}"))).unwrap();
            assert!(warnings.is_empty(), "{key}: {warnings:?}");
        }
        let text = parse(Some("port=x")).unwrap_err().to_string();
        for key in ["period", "sampling_cost", "site_frames", "estimates"] {
            assert!(text.contains(key), "{text}");
        }
    }
}
