//! Real Redis clients against `terrace serve` (redis-cli, redis-benchmark, redis-py,
//! nutcracker): tests/clients/run.sh installs what it needs. Ignored by default because
//! they install packages; `.ci/run` runs the script directly.

#[test]
#[ignore = "installs redis-tools and redis-py; run with --ignored or tests/clients/run.sh"]
fn real_clients_script_passes() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let status = std::process::Command::new("bash")
        .arg(root.join("tests/clients/run.sh"))
        .env("TERRACE_BIN", env!("CARGO_BIN_EXE_terrace"))
        .status()
        .unwrap();
    assert!(status.success());
}
