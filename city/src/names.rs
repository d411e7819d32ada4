//! Thread names made run-independent, so a suspect's signature names the same family in every
//! run: pools number their threads and themselves (`pool-3-thread-7`), servers put their port,
//! address and object identity hashes into names (Jetty's
//! `qtp1702297201-14-acceptor-0@36ae3dd9-ServerConnector@1a2b3c{HTTP/1.1,[http/1.1]}{0.0.0.0:46741}`),
//! and all of those change from one run to the next while the family does not.

/// A thread name's family, the same in every run of the same application.
///
/// - A `host:port` pair becomes `host:#`: the port is often ephemeral, and the address is the
///   machine's (the same connector binds `0.0.0.0` here and `10.1.2.3` there). Only an IPv4
///   address, a bracketed IPv6 address, `localhost` or a lower-case dotted DNS name counts as a
///   host, so `Worker:3` stays a name with a number (`Worker:#`).
/// - An identity hash after `@` (`Object.toString`'s `Class@1a2b3c`) becomes `@#`, and so does a
///   bare hexadecimal token of five or more characters with both digits and letters (Jetty's
///   `Connector-Scheduler-7be58f16`, `%x` of `hashCode()`): turning only its digits into `#`
///   would leave the letters, which differ every run.
/// - Every other run of digits becomes one `#` (`pool-#-thread-#`).
pub fn stable_thread_name(name: &str) -> String {
    hashes_and_digits(&host_ports(name))
}

/// Shortest bare hexadecimal token taken for a hash: `%x` of a 31-bit identity hash has fewer
/// than five digits once in 2^15, while short words of hex letters and digits (`C2`, `e2e`)
/// are names.
const MIN_BARE_HASH: usize = 5;

/// Replaces each `host:port` with `host:#`.
fn host_ports(name: &str) -> String {
    let b = name.as_bytes();
    let mut out = String::with_capacity(name.len());
    // Everything before `copied` is already in `out`.
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b':' {
            if let (Some(host_start), Some(port_end)) = (host_before(b, i), port_after(b, i)) {
                if host_start >= copied {
                    // Slicing at ASCII bytes keeps `name`'s UTF-8 intact.
                    out.push_str(&name[copied..host_start]);
                    out.push_str("host:#");
                    copied = port_end;
                    i = port_end;
                    continue;
                }
            }
        }
        i += 1;
    }
    out.push_str(&name[copied..]);
    out
}

/// Where the host ending just before the `:` at `colon` starts, if what precedes it is one.
fn host_before(b: &[u8], colon: usize) -> Option<usize> {
    if colon == 0 {
        return None;
    }
    if b[colon - 1] == b']' {
        let open = b[..colon - 1].iter().rposition(|&c| c == b'[')?;
        let inside = &b[open + 1..colon - 1];
        let ipv6 = inside.contains(&b':')
            && inside
                .iter()
                .all(|&c| c.is_ascii_hexdigit() || matches!(c, b':' | b'.' | b'%'));
        return ipv6.then_some(open);
    }
    let start = b[..colon]
        .iter()
        .rposition(|&c| !(c.is_ascii_alphanumeric() || c == b'.' || c == b'-'))
        .map_or(0, |p| p + 1);
    let host = &b[start..colon];
    (is_ipv4(host) || host.eq_ignore_ascii_case(b"localhost") || is_dns_name(host)).then_some(start)
}

/// Where the port after the `:` at `colon` ends, if digits of a port follow and end the token
/// (`:0.0.0.0` is not a port; `:8080}` and `:8080/` are).
fn port_after(b: &[u8], colon: usize) -> Option<usize> {
    let start = colon + 1;
    let end = b[start..]
        .iter()
        .position(|c| !c.is_ascii_digit())
        .map_or(b.len(), |p| start + p);
    let digits = std::str::from_utf8(&b[start..end]).ok()?;
    let fits = !digits.is_empty() && digits.len() <= 5 && digits.parse::<u32>().ok()? <= 65_535;
    let ends = b
        .get(end)
        .is_none_or(|&c| !(c.is_ascii_alphanumeric() || c == b'.'));
    (fits && ends).then_some(end)
}

fn is_ipv4(host: &[u8]) -> bool {
    let groups: Vec<&[u8]> = host.split(|&c| c == b'.').collect();
    groups.len() == 4
        && groups
            .iter()
            .all(|g| (1..=3).contains(&g.len()) && g.iter().all(u8::is_ascii_digit))
}

/// `example.com`, `db-1.internal.example.org`: lower case, as resolvers and configurations
/// write them, so `ForkJoinPool.commonPool` is not taken for one.
fn is_dns_name(host: &[u8]) -> bool {
    let labels: Vec<&[u8]> = host.split(|&c| c == b'.').collect();
    let Some(tld) = labels.last() else {
        return false;
    };
    labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.iter()
                    .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        })
        && tld.len() >= 2
        && tld.iter().all(u8::is_ascii_lowercase)
}

/// Replaces identity hashes with `#` and every other run of digits with `#`.
fn hashes_and_digits(name: &str) -> String {
    let b = name.as_bytes();
    let mut out = String::with_capacity(name.len());
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphanumeric() {
            // Copy a whole non-alphanumeric run (which may hold multi-byte characters) at once.
            let end = b[i..]
                .iter()
                .position(u8::is_ascii_alphanumeric)
                .map_or(b.len(), |p| i + p);
            out.push_str(&name[i..end]);
            i = end;
            continue;
        }
        let end = b[i..]
            .iter()
            .position(|c| !c.is_ascii_alphanumeric())
            .map_or(b.len(), |p| i + p);
        let token = &b[i..end];
        let after_at = i > 0 && b[i - 1] == b'@';
        let hex = token.iter().all(u8::is_ascii_hexdigit);
        let bare_hash = hex
            && token.len() >= MIN_BARE_HASH
            && token.iter().any(u8::is_ascii_digit)
            && token.iter().any(u8::is_ascii_alphabetic);
        if (after_at && hex) || bare_hash {
            out.push('#');
        } else {
            let mut in_number = false;
            for &c in token {
                if c.is_ascii_digit() {
                    if !in_number {
                        out.push('#');
                    }
                    in_number = true;
                } else {
                    out.push(char::from(c));
                    in_number = false;
                }
            }
        }
        i = end;
    }
    out
}

/// A thread root's name with its numbers as `#`: the threads of one pool share it.
pub fn thread_family(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_number = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::stable_thread_name;

    #[test]
    fn jetty_acceptor_loses_port_address_and_hashes() {
        assert_eq!(
            stable_thread_name(
                "qtp1702297201-14-acceptor-0@36ae3dd9-ServerConnector@1a2b3c{HTTP/1.1,[http/1.1]}{0.0.0.0:46741}"
            ),
            "qtp#-#-acceptor-#@#-ServerConnector@#{HTTP/#.#,[http/#.#]}{host:#}"
        );
        // Another run: other pool hash, thread number, identity hashes, address and port.
        assert_eq!(
            stable_thread_name(
                "qtp611437735-17-acceptor-0@7be58f16-ServerConnector@dfb2e1{HTTP/1.1,[http/1.1]}{127.0.0.1:8080}"
            ),
            "qtp#-#-acceptor-#@#-ServerConnector@#{HTTP/#.#,[http/#.#]}{host:#}"
        );
    }

    #[test]
    fn jetty_pool_selector_and_scheduler_threads() {
        assert_eq!(stable_thread_name("qtp1702297201-15"), "qtp#-#");
        // Jetty 9.2/9.3 named its selector threads after the manager.
        assert_eq!(
            stable_thread_name("qtp1702297201-15-selector-ServerConnectorManager@6d5380c2/0"),
            "qtp#-#-selector-ServerConnectorManager@#/#"
        );
        // An identity hash of letters only is still a hash after `@`.
        assert_eq!(
            stable_thread_name("qtp1-2-selector-ServerConnectorManager@abcdef/3"),
            "qtp#-#-selector-ServerConnectorManager@#/#"
        );
        // `%x` of hashCode() with no `@` in front.
        assert_eq!(
            stable_thread_name("Connector-Scheduler-7be58f16-1"),
            "Connector-Scheduler-#-#"
        );
        assert_eq!(
            stable_thread_name("Scheduler-1702297201-1"),
            "Scheduler-#-#"
        );
    }

    #[test]
    fn tomcat_and_jdk_pools() {
        assert_eq!(
            stable_thread_name("http-nio-8080-exec-1"),
            "http-nio-#-exec-#"
        );
        assert_eq!(
            stable_thread_name("http-nio-8080-Acceptor"),
            "http-nio-#-Acceptor"
        );
        assert_eq!(stable_thread_name("pool-3-thread-7"), "pool-#-thread-#");
        assert_eq!(
            stable_thread_name("ForkJoinPool.commonPool-worker-5"),
            "ForkJoinPool.commonPool-worker-#"
        );
        assert_eq!(
            stable_thread_name("ForkJoinPool-1-worker-3"),
            "ForkJoinPool-#-worker-#"
        );
    }

    #[test]
    fn plain_names_keep_their_words() {
        assert_eq!(stable_thread_name("main"), "main");
        assert_eq!(stable_thread_name("Reference Handler"), "Reference Handler");
        assert_eq!(stable_thread_name(""), "");
        // Short hex-looking words are names, not hashes.
        assert_eq!(
            stable_thread_name("C2 CompilerThread0"),
            "C# CompilerThread#"
        );
        assert_eq!(stable_thread_name("e2e-runner"), "e#e-runner");
        assert_eq!(stable_thread_name("worker-12 of 3"), "worker-# of #");
        // Not hosts: a word, a time of day, a class name before the colon.
        assert_eq!(stable_thread_name("Worker:3"), "Worker:#");
        assert_eq!(stable_thread_name("batch 12:30"), "batch #:#");
        assert_eq!(
            stable_thread_name("ForkJoinPool.commonPool:3"),
            "ForkJoinPool.commonPool:#"
        );
        assert_eq!(stable_thread_name("Gerät-7 ✓"), "Gerät-# ✓");
    }

    #[test]
    fn host_port_pairs_of_every_kind() {
        assert_eq!(
            stable_thread_name("SendThread(localhost:2181)"),
            "SendThread(host:#)"
        );
        assert_eq!(
            stable_thread_name("pg db-1.internal.example.org:5432"),
            "pg host:#"
        );
        assert_eq!(stable_thread_name("conn [fe80::1%2]:443"), "conn host:#");
        assert_eq!(stable_thread_name("conn [::]:80"), "conn host:#");
        // InetSocketAddress's `name/address:port`: the address is the host.
        assert_eq!(
            stable_thread_name("reader localhost/127.0.0.1:9092"),
            "reader localhost/host:#"
        );
        // `:0.0.0.0` is an address, not a port; the pair after it is.
        assert_eq!(
            stable_thread_name("NIOServerCxn.Factory:0.0.0.0/0.0.0.0:2181"),
            "NIOServerCxn.Factory:#.#.#.#/host:#"
        );
        // Not a port: too large, or followed by more of the token.
        assert_eq!(stable_thread_name("at 10.0.0.1:99999"), "at #.#.#.#:#");
        assert_eq!(stable_thread_name("at 10.0.0.1:80ab"), "at #.#.#.#:#ab");
    }
}
