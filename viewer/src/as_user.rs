//! File work done in another user's place as that user. Root's `memcity attach` creates the
//! attach trigger in the JVM's working directory, stages the library in the JVM's `/tmp` and
//! reads the agent's registration from the JVM user's run directory: folders that user
//! controls, where a link or a planted file could otherwise turn root's writes (and reads)
//! against root. Done with the JVM user's own credentials, the worst such a user can arrange is
//! what they could do themselves; and the files memcity creates are theirs without a `chown`.
//!
//! The credentials are changed on a thread of its own with the raw system calls, which change
//! only the calling thread (glibc's `setuid` family changes every thread of the process), and
//! the thread ends with the work: the rest of memcity keeps its own. As jattach does for the
//! whole attach, in one thread.

use std::io;

/// Whose credentials: a process's effective uid and gid, and its supplementary groups (what
/// it may open through group bits, as the process itself may).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

/// `Uid:`, `Gid:` (effective: the second column) and `Groups:` of a `/proc/<pid>/status`.
pub fn parse_user(status: &str) -> Option<User> {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
    };
    let effective = |name| -> Option<u32> { field(name)?.split_whitespace().nth(1)?.parse().ok() };
    let groups = field("Groups:")
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|g| g.parse().ok())
        .collect();
    Some(User {
        uid: effective("Uid:")?,
        gid: effective("Gid:")?,
        groups,
    })
}

/// Runs `work` with `user`'s credentials: on a thread that takes them and ends with it, when
/// this process is root and `user` is someone else; as it is otherwise (this process is then
/// that user, or root working for root).
pub fn run<T: Send>(user: &User, work: impl FnOnce() -> T + Send) -> io::Result<T> {
    let me = memcity_proto::files::effective_uid();
    if me != 0 || user.uid == 0 {
        return Ok(work());
    }
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("memcity-as-user".into())
            .spawn_scoped(scope, || {
                become_user(user)?;
                Ok(work())
            })?;
        thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the work done as the JVM's user panicked")))
    })
}

/// Takes `user`'s groups, gid and uid for the calling thread only, in that order (the groups
/// and gid need root's rights, which the uid gives up). Setting all three uids drops every
/// capability of the thread, so nothing of root's stays.
fn become_user(user: &User) -> io::Result<()> {
    let failed = |what: &str| {
        let e = io::Error::last_os_error();
        io::Error::new(
            e.kind(),
            format!("cannot take the JVM user's {what} (uid {}): {e}", user.uid),
        )
    };
    // SAFETY: setgroups reads `len` gids from a live slice; the raw call affects this thread.
    if unsafe { libc::syscall(libc::SYS_setgroups, user.groups.len(), user.groups.as_ptr()) } != 0 {
        return Err(failed("groups"));
    }
    // SAFETY: plain integer arguments; the raw call affects this thread only.
    if unsafe { libc::syscall(libc::SYS_setresgid, user.gid, user.gid, user.gid) } != 0 {
        return Err(failed("group"));
    }
    // SAFETY: as above.
    if unsafe { libc::syscall(libc::SYS_setresuid, user.uid, user.uid, user.uid) } != 0 {
        return Err(failed("user id"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_gives_the_effective_ids_and_groups() {
        let status = "Name:\tjava\nUid:\t1000\t1001\t1001\t1001\nGid:\t50\t51\t51\t51\nGroups:\t4 24 27 \nNSpid:\t7\n";
        assert_eq!(
            parse_user(status),
            Some(User {
                uid: 1001,
                gid: 51,
                groups: vec![4, 24, 27]
            })
        );
        let none = status.replace("Groups:\t4 24 27 ", "Groups:");
        assert_eq!(parse_user(&none).map(|u| u.groups), Some(vec![]));
        assert_eq!(parse_user("Name: x\n"), None);
    }

    #[test]
    fn work_runs_as_the_user_and_the_caller_keeps_its_own() {
        let me = memcity_proto::files::effective_uid();
        let uid_in = || {
            let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            parse_user(&status).unwrap().uid
        };
        if me != 0 {
            // Not root: the work runs as this user, on this thread.
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let user = parse_user(&status).unwrap();
            assert_eq!(run(&user, uid_in).unwrap(), me);
            return;
        }
        let nobody = User {
            uid: 65534,
            gid: 65534,
            groups: vec![],
        };
        assert_eq!(run(&nobody, uid_in).unwrap(), 65534);
        // What nobody may not do, the work may not do.
        let private = tempfile::tempdir().unwrap();
        let denied = run(&nobody, || std::fs::write(private.path().join("x"), "x")).unwrap();
        assert_eq!(denied.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(uid_in(), 0, "the calling thread kept root");
    }
}
