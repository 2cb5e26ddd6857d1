//! nginx for the benchmarks: started from a config written here (one worker pinned to a CPU,
//! `GET /health` -> 200 "ok"), stopped with SIGTERM so its worker exits with it.
use std::{process::Command, time::Duration};

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Nginx(std::process::Child, std::path::PathBuf);

impl Nginx {
    // Only the nginx bench reads its worker's CPU time.
    #[allow(dead_code)]
    pub fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM is nginx's fast shutdown: the master stops its workers. (SIGKILL would leave
        // the workers running.)
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

pub fn nginx(port: u16, cpu: u32) -> Nginx {
    let dir = std::env::temp_dir().join(format!("rxsteer-nginx-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let mask = format!("{:b}", 1u64 << cpu);
    let conf = format!(
        "worker_processes 1;\nworker_cpu_affinity {mask};\ndaemon off;\npid {dir}/nginx.pid;\nerror_log {dir}/logs/error.log;\n\
         events {{ worker_connections 4096; }}\n\
         http {{ access_log off; keepalive_requests 1000000;\n client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy;\n\
         fastcgi_temp_path {dir}/fastcgi; uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;\n\
         server {{ listen 127.0.0.1:{port}; location = /health {{ default_type text/plain; return 200 \"ok\"; }} }} }}\n",
        dir = dir.display()
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    // No inherited pipes: a worker must never hold the caller's output open.
    let child = Command::new("nginx")
        .args(["-p", &dir.display().to_string(), "-c", "nginx.conf"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("nginx on PATH");
    // The guard owns it from here: every path (including the panic below) stops it.
    let guard = Nginx(child, dir);
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return guard;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nginx did not start on port {port}");
}
