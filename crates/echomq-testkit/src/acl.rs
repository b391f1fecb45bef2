//! ACL users for the tests of tenants and least privilege.

/// `ACL SETUSER name reset on >pw <rules…>`: user `name`, password `pw`,
/// with exactly `rules` (split on whitespace), whatever it had before.
pub fn setuser(name: &str, rules: &str) -> redis::Cmd {
    let mut setuser = redis::cmd("ACL");
    setuser
        .arg("SETUSER")
        .arg(name)
        .arg("reset")
        .arg("on")
        .arg(">pw");
    for rule in rules.split_whitespace() {
        setuser.arg(rule);
    }
    setuser
}
