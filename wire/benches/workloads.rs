//! The seed's second paper's workload table: for tiny 16 B, small 256 B, chat (about 800 B of
//! chat-completion JSON), medium 4 KiB and large 64 KiB bodies, one echo round trip (client
//! encodes, server decodes and echoes, server encodes, client decodes) over HTTP/1.1,
//! ZAP-HTTP, native ZAP (the zap-proto/bench native arm) and a floor arm (the same
//! length-prefixed framing carrying the raw bytes, echoed unread: a lower bound, not a
//! protocol). Reports wire bytes, allocations and bytes allocated per round trip (counting
//! allocator, reused buffers, after warm-up) and ns per round trip (median of repetitions).
//! RXSTEER_BENCH_JSON=FILE writes every figure.
use rxsteer_wire::{
    http1::{parse_request, parse_response, write_response, Limits},
    native_bench::{self, BenchMsg},
    zap::MAX_FRAME,
    zaphttp::{decode_request, decode_response, encode_request, encode_response, split_frame},
};
use serde_json::json;
use std::{hint::black_box, time::Instant};

#[global_allocator]
static GLOBAL: rxsteer_alloc::Counting = rxsteer_alloc::Counting;

const CT: &[u8] = b"Content-Type";
const JSON: &[u8] = b"application/json";
const HOST: &[u8] = b"127.0.0.1:8391";

/// About 800 bytes of chat-completion request JSON.
fn chat_body() -> Vec<u8> {
    let sys = "You are a concise assistant for an infrastructure team. Answer with exact commands and numbers, cite the man page when you use a flag, and say plainly when you do not know.";
    let user = "Our 2.5 GbE NIC has one RX queue and the server tops out at one core of softirq. Compare RPS, RFS and an XDP cpumap redirect for a small request/response HTTP service: what moves where, what it costs on the receiving CPU, and how would you measure it per core? Keep it to a table and three commands I can paste.";
    let v = json!({"model": "zen-chat-7b", "temperature": 0.2, "max_tokens": 256, "stream": false,
        "messages": [{"role": "system", "content": sys}, {"role": "user", "content": user}],
        "metadata": {"request_id": "req-000042", "tenant": "acme-corp", "session": "s-7f3a9c21", "client": "rxload/0.1"},
        "stop": ["\n\n###"], "top_p": 0.95, "presence_penalty": 0.0, "frequency_penalty": 0.1});
    serde_json::to_vec(&v).unwrap()
}

#[derive(Clone, Copy)]
enum Arm {
    Http,
    ZapHttp,
    Native,
    Floor,
}

const ARMS: [(Arm, &str); 4] = [
    (Arm::Http, "http"),
    (Arm::ZapHttp, "zap_http"),
    (Arm::Native, "native_zap"),
    (Arm::Floor, "floor"),
];

struct Bufs {
    req: Vec<u8>,
    resp: Vec<u8>,
}

/// One round trip; returns (request bytes, response bytes).
#[inline(never)]
fn round_trip(arm: Arm, body: &[u8], b: &mut Bufs) -> (usize, usize) {
    b.req.clear();
    b.resp.clear();
    match arm {
        Arm::Http => {
            let mut n = itoa::Buffer::new();
            b.req.extend_from_slice(b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1:8391\r\nContent-Type: application/json\r\nContent-Length: ");
            b.req.extend_from_slice(n.format(body.len()).as_bytes());
            b.req.extend_from_slice(b"\r\n\r\n");
            b.req.extend_from_slice(body);
            let r = parse_request(&b.req, &Limits::default()).unwrap().unwrap();
            write_response(&mut b.resp, 200, JSON, r.body, false);
            black_box(parse_response(&b.resp).unwrap().unwrap().body);
        }
        Arm::ZapHttp => {
            encode_request(
                &mut b.req,
                b"POST",
                b"/echo",
                &[(b"Host", HOST), (CT, JSON)],
                body,
            );
            let (frame, _) = split_frame(&b.req, MAX_FRAME).unwrap().unwrap();
            let r = decode_request(frame).unwrap();
            encode_response(&mut b.resp, 200, b"", &[(CT, JSON)], r.body, &[]);
            let (frame, _) = split_frame(&b.resp, MAX_FRAME).unwrap().unwrap();
            black_box(decode_response(frame).unwrap().body);
        }
        Arm::Native => {
            b.req.extend_from_slice(&[0; 4]);
            native_bench::encode(&mut b.req, body, &[CT, JSON], 0);
            let len = (b.req.len() - 4) as u32;
            b.req[..4].copy_from_slice(&len.to_be_bytes());
            let (frame, _) = split_frame(&b.req, MAX_FRAME).unwrap().unwrap();
            let r = BenchMsg::decode(frame).unwrap();
            b.resp.extend_from_slice(&[0; 4]);
            native_bench::encode(&mut b.resp, r.body, &[CT, JSON], 200);
            let len = (b.resp.len() - 4) as u32;
            b.resp[..4].copy_from_slice(&len.to_be_bytes());
            let (frame, _) = split_frame(&b.resp, MAX_FRAME).unwrap().unwrap();
            black_box(BenchMsg::decode(frame).unwrap().body);
        }
        Arm::Floor => {
            b.req.extend_from_slice(&(body.len() as u32).to_be_bytes());
            b.req.extend_from_slice(body);
            let (frame, _) = split_frame(&b.req, MAX_FRAME).unwrap().unwrap();
            b.resp
                .extend_from_slice(&(frame.len() as u32).to_be_bytes());
            b.resp.extend_from_slice(frame);
            black_box(split_frame(&b.resp, MAX_FRAME).unwrap().unwrap().0);
        }
    }
    (b.req.len(), b.resp.len())
}

fn main() {
    let chat = chat_body();
    let workloads: Vec<(&str, Vec<u8>)> = vec![
        ("tiny 16 B", vec![b'x'; 16]),
        ("small 256 B", vec![b'x'; 256]),
        (
            if chat.len() > 700 && chat.len() < 900 {
                "chat ~800 B"
            } else {
                "chat"
            },
            chat.clone(),
        ),
        ("medium 4 KiB", vec![b'x'; 4096]),
        ("large 64 KiB", vec![b'x'; 65536]),
    ];
    let mut b = Bufs {
        req: Vec::with_capacity(1 << 17),
        resp: Vec::with_capacity(1 << 17),
    };
    let mut rows = Vec::new();
    println!(
        "echo round trip per workload and arm (chat body is {} B)",
        chat.len()
    );
    println!(
        "{:<14} {:<11} {:>9} {:>9} {:>10} {:>12} {:>10}",
        "workload", "arm", "req B", "resp B", "allocs/rt", "bytes/rt", "ns/rt"
    );
    for (name, body) in &workloads {
        for (arm, arm_name) in ARMS {
            for _ in 0..1000 {
                round_trip(arm, body, &mut b);
            }
            const N: u64 = 20_000;
            let before = rxsteer_alloc::totals();
            let mut wire = (0, 0);
            for _ in 0..N {
                wire = round_trip(arm, body, &mut b);
            }
            let used = rxsteer_alloc::totals().since(before);
            let (allocs, bytes) = (used.allocs as f64 / N as f64, used.bytes as f64 / N as f64);
            let iters = (2_000_000 / body.len().max(64)).clamp(200, 50_000);
            let mut times: Vec<f64> = (0..15)
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..iters {
                        round_trip(arm, body, &mut b);
                    }
                    t.elapsed().as_nanos() as f64 / iters as f64
                })
                .collect();
            times.sort_by(f64::total_cmp);
            let ns = times[times.len() / 2];
            println!(
                "{name:<14} {arm_name:<11} {:>9} {:>9} {allocs:>10.2} {bytes:>12.1} {ns:>10.1}",
                wire.0, wire.1
            );
            rows.push(json!({"workload": name, "body_bytes": body.len(), "arm": arm_name, "request_bytes": wire.0,
                "response_bytes": wire.1, "allocs_per_round_trip": allocs, "bytes_per_round_trip": bytes, "ns_per_round_trip": ns}));
        }
    }
    if let Some(path) = std::env::var_os("RXSTEER_BENCH_JSON") {
        let doc = json!({"bench": "workloads", "rows": rows});
        std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }
}
