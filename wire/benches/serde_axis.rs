//! The serde axis: the rpc record as native ZAP vs JSON held to its fastest Rust libraries
//! (serde_json, simd-json, sonic-rs). Per codec: decode the request (every field read), encode
//! the response (every field written) into a reused buffer, and the round trip. Hex is not
//! charged to JSON (the account and block hash stay strings), as the seed measured it.
//! Criterion measures; a summary then gives each JSON codec's ratio to native ZAP from this same
//! run, allocations per operation (counting allocator) and wire bytes. With
//! RXSTEER_BENCH_JSON=FILE the summary is also written as JSON.
use criterion::Criterion;
use rxsteer_wire::{
    native::{EthCallReq, EthCallResp},
    rpc::{JsonRequest, JsonResponse, BLOCK_HASH},
};
use std::hint::black_box;
use std::path::PathBuf;

#[global_allocator]
static GLOBAL: rxsteer_alloc::Counting = rxsteer_alloc::Counting;

const ACCOUNT: [u8; 20] = [
    0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
    0xcc, 0xdd, 0xee, 0xff,
];
const ACCOUNT_HEX: &str = "0xdeadbeef00112233445566778899aabbccddeeff";
const HASH_HEX: &str = "0x0123456789abcdeffedcba98765432100f1e2d3c4b5a69788796a5b4c3d2e1f0";
#[derive(Clone, Copy, PartialEq, Eq)]
enum Codec {
    Zap,
    SerdeJson,
    SimdJson,
    SonicRs,
}

impl Codec {
    fn name(self) -> &'static str {
        match self {
            Codec::Zap => "zap_native",
            Codec::SerdeJson => "serde_json",
            Codec::SimdJson => "simd_json",
            Codec::SonicRs => "sonic_rs",
        }
    }
}

const CODECS: [Codec; 4] = [
    Codec::Zap,
    Codec::SerdeJson,
    Codec::SimdJson,
    Codec::SonicRs,
];
const OPS: [&str; 3] = ["decode", "encode", "round_trip"];

fn native_req() -> Vec<u8> {
    let mut v = Vec::new();
    EthCallReq {
        id: 1,
        block: 0x10d4f,
        method: b"eth_getBalance",
        account: &ACCOUNT,
    }
    .encode(&mut v);
    v
}

fn json_req() -> Vec<u8> {
    serde_json::to_vec(&JsonRequest {
        method: "eth_getBalance",
        account: ACCOUNT_HEX,
        block: 0x10d4f,
        id: 1,
    })
    .unwrap()
}

fn json_resp() -> JsonResponse<'static> {
    JsonResponse {
        id: 1,
        balance: 0x0de0_b6b3_a765_0d8b,
        nonce: 42,
        block_hash: HASH_HEX,
    }
}

/// Decodes the request with `codec`, reading every field; returns a fold of them.
#[inline(always)]
fn decode(codec: Codec, native: &[u8], json: &[u8], scratch: &mut Vec<u8>) -> u64 {
    let fold = |id: u64, block: u64, m: usize, a: usize| id ^ block ^ m as u64 ^ a as u64;
    match codec {
        Codec::Zap => {
            let r = EthCallReq::decode(native).unwrap();
            fold(r.id, r.block, r.method.len(), r.account.len())
        }
        Codec::SerdeJson => {
            let r: JsonRequest = serde_json::from_slice(json).unwrap();
            fold(r.id, r.block, r.method.len(), r.account.len())
        }
        Codec::SimdJson => {
            // simd-json parses in place: it needs a mutable copy of the input.
            scratch.clear();
            scratch.extend_from_slice(json);
            let r: JsonRequest = simd_json::serde::from_slice(scratch).unwrap();
            fold(r.id, r.block, r.method.len(), r.account.len())
        }
        Codec::SonicRs => {
            let r: JsonRequest = sonic_rs::from_slice(json).unwrap();
            fold(r.id, r.block, r.method.len(), r.account.len())
        }
    }
}

/// Encodes the response with `codec` into `out` (cleared first).
#[inline(always)]
fn encode(codec: Codec, out: &mut Vec<u8>) {
    out.clear();
    match codec {
        Codec::Zap => EthCallResp {
            id: 1,
            balance: 0x0de0_b6b3_a765_0d8b,
            nonce: 42,
            block_hash: &BLOCK_HASH,
        }
        .encode(out),
        Codec::SerdeJson => serde_json::to_writer(out, &json_resp()).unwrap(),
        Codec::SimdJson => simd_json::serde::to_writer(out, &json_resp()).unwrap(),
        Codec::SonicRs => sonic_rs::to_writer(out, &json_resp()).unwrap(),
    }
}

fn benches(c: &mut Criterion, native: &[u8], json: &[u8]) {
    let mut scratch = Vec::with_capacity(1024);
    let mut out = Vec::with_capacity(1024);
    let mut g = c.benchmark_group("decode");
    for codec in CODECS {
        g.bench_function(codec.name(), |b| {
            b.iter(|| decode(codec, black_box(native), black_box(json), &mut scratch))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("encode");
    for codec in CODECS {
        g.bench_function(codec.name(), |b| {
            b.iter(|| encode(codec, black_box(&mut out)))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("round_trip");
    for codec in CODECS {
        g.bench_function(codec.name(), |b| {
            b.iter(|| {
                black_box(decode(
                    codec,
                    black_box(native),
                    black_box(json),
                    &mut scratch,
                ));
                encode(codec, black_box(&mut out));
            })
        });
    }
    g.finish();
}

fn criterion_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/criterion")
}

/// Criterion's estimate (ns per iteration) for one benchmark: the slope of its linear fit
/// over iteration counts where it has one, else the mean.
fn estimate_ns(op: &str, codec: Codec) -> f64 {
    let path = criterion_dir()
        .join(op)
        .join(codec.name())
        .join("new/estimates.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    v["slope"]["point_estimate"]
        .as_f64()
        .or_else(|| v["mean"]["point_estimate"].as_f64())
        .unwrap()
}

fn allocs_per_op(op: &str, codec: Codec, native: &[u8], json: &[u8]) -> (f64, f64) {
    let (mut scratch, mut out) = (Vec::with_capacity(1024), Vec::with_capacity(1024));
    const N: u64 = 10_000;
    for _ in 0..100 {
        black_box(decode(codec, native, json, &mut scratch));
        encode(codec, &mut out);
    }
    let before = rxsteer_alloc::totals();
    for _ in 0..N {
        if op != "encode" {
            black_box(decode(codec, native, json, &mut scratch));
        }
        if op != "decode" {
            encode(codec, &mut out);
        }
    }
    let used = rxsteer_alloc::totals().since(before);
    (used.allocs as f64 / N as f64, used.bytes as f64 / N as f64)
}

fn main() {
    let (native, json) = (native_req(), json_req());
    let mut c = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3))
        .output_directory(&criterion_dir())
        .configure_from_args();
    benches(&mut c, &native, &json);
    c.final_summary();

    let mut out = Vec::new();
    let mut rows = Vec::new();
    println!("\nrpc record, ns per operation (criterion's estimate), ratio = codec / zap_native in this run");
    println!(
        "{:<12} {:<11} {:>9} {:>8} {:>11} {:>12}",
        "op", "codec", "ns", "ratio", "allocs/op", "bytes/op"
    );
    for op in OPS {
        let base = estimate_ns(op, Codec::Zap);
        for codec in CODECS {
            let ns = estimate_ns(op, codec);
            let (allocs, bytes) = allocs_per_op(op, codec, &native, &json);
            let name = codec.name();
            println!(
                "{op:<12} {name:<11} {ns:>9.1} {:>8.2} {allocs:>11.2} {bytes:>12.1}",
                ns / base
            );
            rows.push(
                serde_json::json!({"op": op, "codec": name, "ns": ns, "ratio_to_zap": ns / base,
                "allocs_per_op": allocs, "bytes_per_op": bytes}),
            );
        }
    }
    println!("\nwire bytes: request / response");
    let mut wires = Vec::new();
    for codec in CODECS {
        encode(codec, &mut out);
        let req = if codec == Codec::Zap {
            native.len()
        } else {
            json.len()
        };
        let resp = out.len();
        println!("{:<11} {req:>4} / {resp:>4}", codec.name());
        wires.push(serde_json::json!({"codec": codec.name(), "request_bytes": req, "response_bytes": resp}));
    }
    if let Some(path) = std::env::var_os("RXSTEER_BENCH_JSON") {
        let doc = serde_json::json!({"bench": "serde_axis", "rows": rows, "wire": wires});
        std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }
}
