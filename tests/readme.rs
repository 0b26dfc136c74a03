//! The README's rule table is generated from the rules' own metadata; this
//! test keeps the two from drifting apart.

#[test]
fn readme_rule_table_matches_the_registry() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for m in locklint::filter::all_metas() {
        let row = format!(
            "| {} | `{}` | {} | {} |",
            m.code,
            m.name,
            m.severity.as_str(),
            m.summary
        );
        assert!(readme.contains(&row), "README lacks the row:\n{row}");
    }
}

#[test]
fn readme_starts_with_the_two_commands() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let head: String = readme.lines().take(6).collect::<Vec<_>>().join("\n");
    assert!(
        head.contains("cargo run --release -- fixtures/"),
        "first lines must run locklint on the bundled examples"
    );
    assert!(
        head.contains("cargo test"),
        "first lines must give the test command"
    );
}
