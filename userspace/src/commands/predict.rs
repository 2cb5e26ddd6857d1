//! `rxsteer predict DIR --cpus N`: what each arm of a stored run would serve on more CPUs,
//! from its measured costs per request and stage (the model lives in the report crate).
use anyhow::Result;

#[derive(clap::Args)]
pub struct PredictArgs {
    /// A comparison's run directory (its run.json must have every CPU's time split).
    pub dir: std::path::PathBuf,
    /// The CPU count to predict for (1 to 4096).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub cpus: u32,
    /// The run's RX core (default: the lab's, from run.json).
    #[arg(long)]
    pub rx_cpu: Option<u32>,
    /// Where the load generator runs on the predicted box.
    #[arg(long, value_enum, default_value = "remote")]
    pub loader: rxsteer_records::LoaderPlace,
    /// Another stored run (e.g. an open-loop --rate run) to check the fitted costs against.
    #[arg(long)]
    pub check: Option<std::path::PathBuf>,
}

pub fn run(a: &PredictArgs) -> Result<()> {
    rxsteer_report::predict::run(&rxsteer_report::predict::Ask {
        dir: &a.dir,
        cpus: a.cpus,
        rx_cpu: a.rx_cpu,
        loader: a.loader,
        check: a.check.as_deref(),
    })
}
