//! Releases, as `CHANGELOG.md` records them: this build is the newest release (its version,
//! what `ferrocrawl --version` prints), speaks the protocol versions of the newest release
//! and the one before, and every release (this one too) has its frozen data-directory
//! fixture, which the upgrade tests open.

use std::path::Path;

use crate::common::process::run;

/// The rows of CHANGELOG's table of releases: release, protocol (its first number), stored
/// format; newest first.
fn releases() -> Vec<(String, Option<u32>, u32)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let changelog = std::fs::read_to_string(root.join("CHANGELOG.md")).expect("CHANGELOG.md");
    let number = |cell: &str| cell.split(|c: char| !c.is_ascii_digit()).find(|n| !n.is_empty())?.parse().ok();
    changelog
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let release = cells.get(1)?;
            if cells.len() < 6 || !release.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            Some(((*release).to_owned(), number(cells[4]), number(cells[5])?))
        })
        .collect()
}

#[test]
fn this_build_is_the_newest_release_and_speaks_the_one_before() {
    let releases = releases();
    assert!(releases.len() >= 3, "the releases were read: {releases:?}");
    let (newest, protocol, _) = &releases[0];
    assert_eq!(newest, env!("CARGO_PKG_VERSION"), "Cargo's version is the newest release");
    assert_eq!(*protocol, Some(ferrocrawl::remote::compat::PROTOCOL));
    assert_eq!(releases[1].1, Some(ferrocrawl::remote::compat::PREVIOUS), "it speaks the previous release's");
    let out = run(&["--version"], &[]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("ferrocrawl {newest}"));
}

#[test]
fn every_release_has_a_frozen_data_directory() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/datadir");
    for (release, _, format) in &releases() {
        let facts = fixtures.join(format!("{release}.json"));
        assert!(fixtures.join(format!("{release}.tar.gz")).is_file(), "no fixture of release {release}");
        let facts: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&facts).expect("facts")).expect("json");
        let written = facts.get("stored_format").or_else(|| facts.get("schema_version"));
        assert_eq!(written.and_then(serde_json::Value::as_u64), Some(u64::from(*format)), "{release}");
    }
}
