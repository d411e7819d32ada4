//! Compiles `proto/memcity/v1/memcity.proto` (memcity's protocol) and
//! `proto/perftools/profiles/profile.proto` (pprof's profile format, for `memcity export
//! --pprof`) with protox, a pure-Rust protobuf compiler, so a build needs nothing but cargo (no
//! protoc on the PATH).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rustc-env=MEMCITY_COMMIT={}", commit());
    let protos = [
        "proto/memcity/v1/memcity.proto",
        "proto/perftools/profiles/profile.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let fds = protox::compile(protos, ["proto"])?;
    // The services only with the `grpc` feature: without it the messages need prost alone.
    // (profile.proto has no service, so it is messages either way.)
    let grpc = std::env::var_os("CARGO_FEATURE_GRPC").is_some();
    tonic_prost_build::configure()
        .build_client(grpc)
        .build_server(grpc)
        .compile_fds(fds)?;
    Ok(())
}

/// The commit the sources are at, for `memcity --version` and the agent's first line:
/// `MEMCITY_COMMIT` when set (a build from an archive, which has no repository), else git's
/// short hash, else "unknown". Rebuilt when HEAD moves.
fn commit() -> String {
    println!("cargo:rerun-if-env-changed=MEMCITY_COMMIT");
    if let Ok(commit) = std::env::var("MEMCITY_COMMIT") {
        return commit;
    }
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_string())
    };
    // HEAD, the branch it names, and the packed refs, wherever this checkout keeps them; only
    // files that exist (cargo reruns the script at every build for one that does not).
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for path in watched {
        if let Some(file) = git(&["rev-parse", "--git-path", &path]) {
            if std::path::Path::new(&file).exists() {
                println!("cargo:rerun-if-changed={file}");
            }
        }
    }
    git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into())
}
