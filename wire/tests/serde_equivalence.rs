//! Every codec of the serde axis reads and writes every field of the rpc record, and they
//! agree with each other: what one encodes, every other decodes to the same values.
use rxsteer_wire::{
    native::{EthCallReq, EthCallResp},
    rpc::{hex0x, parse_account, JsonRequest, JsonResponse, BLOCK_HASH},
};

const ACCOUNT: [u8; 20] = [7; 20];

fn json_encoders(r: &JsonRequest) -> Vec<(&'static str, Vec<u8>)> {
    let mut simd = Vec::new();
    simd_json::serde::to_writer(&mut simd, r).unwrap();
    let mut sonic = Vec::new();
    sonic_rs::to_writer(&mut sonic, r).unwrap();
    vec![
        ("serde_json", serde_json::to_vec(r).unwrap()),
        ("simd_json", simd),
        ("sonic_rs", sonic),
    ]
}

fn json_decoders<'a>(
    bytes: &'a [u8],
    scratch: &'a mut Vec<u8>,
) -> Vec<(&'static str, JsonRequest<'a>)> {
    scratch.clear();
    scratch.extend_from_slice(bytes);
    vec![
        ("serde_json", serde_json::from_slice(bytes).unwrap()),
        ("sonic_rs", sonic_rs::from_slice(bytes).unwrap()),
        ("simd_json", simd_json::serde::from_slice(scratch).unwrap()),
    ]
}

#[test]
fn requests_round_trip_through_every_codec_pair() {
    let mut hex = [0u8; 42];
    let account = hex0x(&ACCOUNT, &mut hex).to_string();
    for (id, block, method) in [
        (1u64, 0x10d4fu64, "eth_getBalance"),
        (u64::MAX, 0, "m"),
        (42, u64::MAX - 1, "eth_call"),
    ] {
        let want = JsonRequest {
            method,
            account: &account,
            block,
            id,
        };
        for (enc, bytes) in json_encoders(&want) {
            let mut scratch = Vec::new();
            for (dec, got) in json_decoders(&bytes, &mut scratch) {
                assert_eq!(got, want, "{enc} -> {dec}");
                assert_eq!(parse_account(got.account).unwrap(), ACCOUNT);
            }
        }
        let mut native = Vec::new();
        EthCallReq {
            id,
            block,
            method: method.as_bytes(),
            account: &ACCOUNT,
        }
        .encode(&mut native);
        let got = EthCallReq::decode(&native).unwrap();
        assert_eq!(
            (got.id, got.block, got.method, got.account),
            (id, block, method.as_bytes(), &ACCOUNT[..])
        );
    }
}

#[test]
fn responses_round_trip_through_every_codec() {
    let mut hex = [0u8; 66];
    let hash = hex0x(&BLOCK_HASH, &mut hex);
    let want = JsonResponse {
        id: 3,
        balance: u64::MAX,
        nonce: 42,
        block_hash: hash,
    };
    let mut simd = Vec::new();
    simd_json::serde::to_writer(&mut simd, &want).unwrap();
    let mut sonic = Vec::new();
    sonic_rs::to_writer(&mut sonic, &want).unwrap();
    for bytes in [serde_json::to_vec(&want).unwrap(), simd, sonic] {
        let a: JsonResponse = serde_json::from_slice(&bytes).unwrap();
        let b: JsonResponse = sonic_rs::from_slice(&bytes).unwrap();
        assert_eq!(a, want);
        assert_eq!(b, want);
    }
    let mut native = Vec::new();
    EthCallResp {
        id: 3,
        balance: u64::MAX,
        nonce: 42,
        block_hash: &BLOCK_HASH,
    }
    .encode(&mut native);
    let got = EthCallResp::decode(&native).unwrap();
    assert_eq!(
        (got.id, got.balance, got.nonce, got.block_hash),
        (3, u64::MAX, 42, &BLOCK_HASH[..])
    );
}
