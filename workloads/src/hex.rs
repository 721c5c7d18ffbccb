//! Bytes as lowercase hex, for the JSON-lines protocols (histograms, handshake nonces and
//! proofs). Small enough not to need a crate.

/// `bytes` as lowercase hex.
pub(crate) fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of hex string `hex`, or what is wrong with it.
pub(crate) fn decode(hex: &str) -> Result<Vec<u8>, String> {
    if !hex.len().is_multiple_of(2) {
        return Err(format!("odd-length hex ({} characters)", hex.len()));
    }
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("bad hex: {e}"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trips_and_refuses_garbage() {
        let bytes = [0u8, 1, 0xab, 0xff];
        assert_eq!(super::encode(&bytes), "0001abff");
        assert_eq!(super::decode("0001abff").unwrap(), bytes);
        assert!(super::decode("abc").is_err());
        assert!(super::decode("zz").is_err());
    }
}
