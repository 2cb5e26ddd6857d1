//! A flag refused for a value only the run or the system could judge (a `--p99` under the
//! unloaded p99, a `--metrics` port in use): `main` exits 2 on it, as clap does on a value it
//! can judge itself. One type, so the exit status has one place to look.

#[derive(Debug)]
pub struct FlagRefused(pub String);

impl std::fmt::Display for FlagRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FlagRefused {}
