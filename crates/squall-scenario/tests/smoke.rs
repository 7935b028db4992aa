#[test]
fn example_parses() {
    let s = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/example.toml")).unwrap();
    let sc: squall_scenario::Scenario = toml::from_str(&s).unwrap();
    println!("{sc:#?}");
    println!("{}", toml::to_string(&sc).unwrap());
}
