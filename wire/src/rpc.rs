//! The rpc handler, one compute for both transports: every request field is read and folded
//! into the balance (no read is dead), every response field is written. Over HTTP the record
//! is JSON; over ZAP it is the native record (`native`).
use serde::{Deserialize, Serialize};

/// 1e18, the seed's base balance.
pub const BALANCE_BASE: u64 = 1_000_000_000_000_000_000;
pub const NONCE: u64 = 42;
pub const BLOCK_HASH: [u8; 32] = [
    0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
    0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78, 0x87, 0x96, 0xa5, 0xb4, 0xc3, 0xd2, 0xe1, 0xf0,
];

/// The seed's fold: `1e18 XOR (block ^ len(method) ^ len(account) ^ account[0])`.
pub fn balance(block: u64, method: &[u8], account: &[u8]) -> u64 {
    let first = account.first().copied().unwrap_or(0) as u64;
    BALANCE_BASE ^ (block ^ method.len() as u64 ^ account.len() as u64 ^ first)
}

/// The JSON request: `{"method":…, "account":"0x<40 hex>", "block":…, "id":…}`. Strings are
/// borrowed from the request bytes: decoding allocates nothing (escaped strings are refused,
/// which no valid record needs).
#[derive(Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct JsonRequest<'a> {
    pub method: &'a str,
    pub account: &'a str,
    pub block: u64,
    pub id: u64,
}

/// The JSON response: `{"id":…, "balance":…, "nonce":…, "blockHash":"0x<64 hex>"}`.
#[derive(Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct JsonResponse<'a> {
    pub id: u64,
    pub balance: u64,
    pub nonce: u64,
    #[serde(rename = "blockHash")]
    pub block_hash: &'a str,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RpcError {
    #[error("rpc body is not the JSON record: {0}")]
    Json(String),
    #[error("account must be 0x and 40 hex digits")]
    Account,
}

/// `0x` + hex of `bytes`, into `out` (no allocation). `out` must hold 2 + 2 * len bytes.
pub fn hex0x<'o>(bytes: &[u8], out: &'o mut [u8]) -> &'o str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out[0] = b'0';
    out[1] = b'x';
    for (i, b) in bytes.iter().enumerate() {
        out[2 + 2 * i] = DIGITS[(b >> 4) as usize];
        out[3 + 2 * i] = DIGITS[(b & 15) as usize];
    }
    std::str::from_utf8(&out[..2 + 2 * bytes.len()]).expect("hex is ASCII")
}

/// Parses `0x` + 40 hex digits into 20 bytes.
pub fn parse_account(s: &str) -> Result<[u8; 20], RpcError> {
    let hex = s
        .strip_prefix("0x")
        .filter(|h| h.len() == 40)
        .ok_or(RpcError::Account)?;
    let mut out = [0u8; 20];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let d = |c: u8| (c as char).to_digit(16).ok_or(RpcError::Account);
        out[i] = (d(pair[0])? << 4 | d(pair[1])?) as u8;
    }
    Ok(out)
}

/// The rpc route over HTTP: JSON in, JSON appended to `out`.
pub fn handle_json(body: &[u8], out: &mut Vec<u8>) -> Result<(), RpcError> {
    let req: JsonRequest =
        serde_json::from_slice(body).map_err(|e| RpcError::Json(e.to_string()))?;
    let account = parse_account(req.account)?;
    let mut hex = [0u8; 66];
    let resp = JsonResponse {
        id: req.id,
        balance: balance(req.block, req.method.as_bytes(), &account),
        nonce: NONCE,
        block_hash: hex0x(&BLOCK_HASH, &mut hex),
    };
    serde_json::to_writer(out, &resp).map_err(|e| RpcError::Json(e.to_string()))
}

/// The rpc route over ZAP: the native record in, the native record appended to `out`.
pub fn handle_native(body: &[u8], out: &mut Vec<u8>) -> Result<(), crate::zap::ZapError> {
    let req = crate::native::EthCallReq::decode(body)?;
    crate::native::EthCallResp {
        id: req.id,
        balance: balance(req.block, req.method, req.account),
        nonce: NONCE,
        block_hash: &BLOCK_HASH,
    }
    .encode(out);
    Ok(())
}
