//! What each request is, pre-encoded once, and how its response is validated: a broken server
//! cannot score.
use anyhow::{bail, Result};
use rxsteer_wire::{
    native::{EthCallReq, EthCallResp},
    rpc::{self, JsonResponse},
};

use crate::target::{Proto, Target};

pub use rxsteer_records::Scenario;

/// The body size when --body-size is not given: 64 KiB for an upload, 16 bytes otherwise.
pub fn default_body_size(s: Scenario) -> usize {
    match s {
        Scenario::Upload => 65536,
        _ => 16,
    }
}

/// The seed paper's workloads by name, or a byte count.
pub fn body_size(s: &str) -> Result<usize, String> {
    match s {
        "tiny" => Ok(16),
        "small" => Ok(256),
        "chat" => Ok(CHAT.len()),
        "medium" => Ok(4096),
        "large" => Ok(65536),
        n => n.parse::<usize>().ok().filter(|&n| n <= 64 << 20).ok_or_else(|| {
            format!("--body-size {n:?}: a byte count (up to 64 MiB) or tiny, small, chat, medium, large")
        }),
    }
}

/// About 800 bytes of chat-completion request JSON (the "chat" workload).
pub const CHAT: &str = r#"{"model":"zen-chat-7b","temperature":0.2,"max_tokens":256,"stream":false,"messages":[{"role":"system","content":"You are a concise assistant for an infrastructure team. Answer with exact commands and numbers, cite the man page when you use a flag, and say plainly when you do not know."},{"role":"user","content":"Our 2.5 GbE NIC has one RX queue and the server tops out at one core of softirq. Compare RPS, RFS and an XDP cpumap redirect for a small request/response HTTP service: what moves where, what it costs on the receiving CPU, and how would you measure it per core? Keep it to a table and three commands I can paste."}],"metadata":{"request_id":"req-000042","tenant":"acme-corp","session":"s-7f3a9c21","client":"rxload/0.1"},"stop":["\n\n###"],"top_p":0.95}"#;

const ACCOUNT: [u8; 20] = [
    0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
    0xcc, 0xdd, 0xee, 0xff,
];
const RPC_ID: u64 = 7;
const RPC_BLOCK: u64 = 0x10d4f;
const RPC_METHOD: &str = "eth_getBalance";

/// One request, encoded once, and what its response must be.
#[derive(Clone, Debug)]
pub struct Request {
    pub proto: Proto,
    pub bytes: Vec<u8>,
    pub check: Check,
}

#[derive(Clone, Debug)]
pub enum Check {
    /// Status 200 and exactly this body.
    Body(Vec<u8>),
    /// Status 200 and the rpc record for the request sent, in JSON.
    RpcJson,
    /// Status 200 and the native rpc record.
    RpcNative,
    /// Any 2xx status (explicit method/body requests).
    Status2xx,
}

pub struct Custom<'a> {
    pub method: Option<&'a str>,
    pub headers: &'a [(String, String)],
    pub body: Option<Vec<u8>>,
}

pub fn build(
    target: &Target,
    scenario: Scenario,
    body_size: usize,
    custom: &Custom,
) -> Result<Request> {
    let default_path = match scenario {
        Scenario::Health => "/health",
        Scenario::Rpc => "/rpc",
        Scenario::Echo => "/echo",
        Scenario::Upload => "/upload",
    };
    let path = target.path.as_deref().unwrap_or(default_path);
    let (method, ct, body, check) = what_to_send(target, scenario, body_size, custom)?;
    for (k, _) in custom.headers {
        if k.eq_ignore_ascii_case("content-length") || k.eq_ignore_ascii_case("host") {
            bail!("-H {k}: rxload sets that header itself");
        }
    }
    Ok(Request {
        proto: target.proto,
        bytes: crate::protocol::encode_request(target, method, path, ct, custom.headers, &body),
        check,
    })
}

/// The method, content type, body and answer check of a request: what `--method` and
/// `--body` give, else the scenario's.
fn what_to_send<'a>(
    target: &Target,
    scenario: Scenario,
    body_size: usize,
    custom: &Custom<'a>,
) -> Result<(&'a str, Option<&'static str>, Vec<u8>, Check)> {
    let explicit = custom.method.is_some() || custom.body.is_some();
    Ok(if explicit {
        let body = custom.body.clone().unwrap_or_default();
        (
            custom
                .method
                .unwrap_or(if body.is_empty() { "GET" } else { "POST" }),
            None,
            body,
            Check::Status2xx,
        )
    } else {
        match scenario {
            Scenario::Health => ("GET", None, Vec::new(), Check::Body(b"ok".to_vec())),
            Scenario::Echo => {
                let body = filler(body_size);
                (
                    "POST",
                    Some("application/octet-stream"),
                    body.clone(),
                    Check::Body(body),
                )
            }
            // The server answers the number of body bytes it received.
            Scenario::Upload => (
                "POST",
                Some("application/octet-stream"),
                filler(body_size),
                Check::Body(body_size.to_string().into_bytes()),
            ),
            Scenario::Rpc if target.proto == Proto::Zap => {
                let mut b = Vec::new();
                EthCallReq {
                    id: RPC_ID,
                    block: RPC_BLOCK,
                    method: RPC_METHOD.as_bytes(),
                    account: &ACCOUNT,
                }
                .encode(&mut b);
                ("POST", Some("application/zap"), b, Check::RpcNative)
            }
            Scenario::Rpc => {
                let mut hex = [0u8; 42];
                let json = rpc::JsonRequest {
                    method: RPC_METHOD,
                    account: rpc::hex0x(&ACCOUNT, &mut hex),
                    block: RPC_BLOCK,
                    id: RPC_ID,
                };
                (
                    "POST",
                    Some("application/json"),
                    serde_json::to_vec(&json)?,
                    Check::RpcJson,
                )
            }
        }
    })
}

/// A body of `n` bytes: the chat JSON at its size, else a-z repeated.
fn filler(n: usize) -> Vec<u8> {
    if n == CHAT.len() {
        CHAT.as_bytes().to_vec()
    } else {
        (0..n).map(|i| b'a' + (i % 26) as u8).collect()
    }
}

/// Why a response was not what the request should get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid {
    Status,
    Body,
}

/// Checks a response's status and body. Allocation-free on the success path.
pub fn validate(check: &Check, status: u16, body: &[u8]) -> Result<(), Invalid> {
    match check {
        Check::Status2xx => (200..300)
            .contains(&status)
            .then_some(())
            .ok_or(Invalid::Status),
        _ if status != 200 => Err(Invalid::Status),
        Check::Body(b) => (body == b.as_slice()).then_some(()).ok_or(Invalid::Body),
        Check::RpcJson => {
            let r: JsonResponse = serde_json::from_slice(body).map_err(|_| Invalid::Body)?;
            let mut hex = [0u8; 66];
            let ok = r.id == RPC_ID
                && r.balance == rpc::balance(RPC_BLOCK, RPC_METHOD.as_bytes(), &ACCOUNT)
                && r.nonce == rpc::NONCE
                && r.block_hash == rpc::hex0x(&rpc::BLOCK_HASH, &mut hex);
            ok.then_some(()).ok_or(Invalid::Body)
        }
        Check::RpcNative => {
            let r = EthCallResp::decode(body).map_err(|_| Invalid::Body)?;
            let ok = r.id == RPC_ID
                && r.balance == rpc::balance(RPC_BLOCK, RPC_METHOD.as_bytes(), &ACCOUNT)
                && r.nonce == rpc::NONCE
                && r.block_hash == rpc::BLOCK_HASH;
            ok.then_some(()).ok_or(Invalid::Body)
        }
    }
}
