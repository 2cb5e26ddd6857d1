//! `rxsteer report DIR`: re-renders a stored comparison's report.md and its charts from its
//! run.json (the rendering lives in the report crate).
use anyhow::Result;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// A comparison's run directory (its run.json).
    pub dir: std::path::PathBuf,
}

pub fn run(a: &ReportArgs) -> Result<()> {
    rxsteer_report::run(&a.dir)
}
