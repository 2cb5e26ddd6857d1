//! The steering hash spreads the many source ports of one client over the whole CPU set, for
//! every set size the tool supports (the 20-CPU GB10 included): 200 flows per CPU, each CPU
//! within 30 % of its fair share. With 400 flows over 20 CPUs (20 each, sd about 4.4) a 30 %
//! bound fails by chance; 200 per CPU puts it more than 4 sd away.
use rxsteer_common::{
    frames::{Ip, Spec},
    parse::{flow_hash, pick, walk},
};

#[test]
fn many_source_ports_spread_over_every_set_size() {
    for cpus in [2u32, 4, 8, 20, 64] {
        let flows = 200 * cpus;
        let mut per_cpu = vec![0u32; cpus as usize];
        for i in 0..flows {
            let f = Spec::tcp(Ip::V4, 10000 + i as u16, 8080).build();
            let h = walk(f.as_bytes()).unwrap();
            per_cpu[pick(flow_hash(f.as_bytes(), &h).unwrap(), cpus) as usize] += 1;
        }
        let fair = flows / cpus;
        for (cpu, got) in per_cpu.iter().enumerate() {
            assert!(
                *got > fair * 7 / 10,
                "{cpus} CPUs: CPU {cpu} got {got} of {flows} flows: {per_cpu:?}"
            );
        }
    }
}
