//! Compiles `proto/memcity/v1/memcity.proto` (memcity's protocol) and
//! `proto/perftools/profiles/profile.proto` (pprof's profile format, for `memcity export
//! --pprof`) with protox, a pure-Rust protobuf compiler, so a build needs nothing but cargo (no
//! protoc on the PATH).

fn main() -> Result<(), Box<dyn std::error::Error>> {
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
